// Shared pieces of the benchmarks: start servers as separate processes, drive load with
// autocannon from this process, report requests per second and latency percentiles.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { freePort } from '../src/test/process.ts';
import { STALL_MS, stallsBetween } from './disk-stalls.ts';

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** The slowest response (ms): in the raw results file (writeResults), not in the tables. */
  max?: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU time per request, in ms, of the server process and of all PostgreSQL processes. */
  cpu?: { server: number; postgres: number; generator?: number };
  /**
   * The server's garbage collection during the timed part (a Coffer server: its metrics' nodejs_gc_duration_seconds):
   * young-generation collections (scavenges), their mean pause, full collections' pauses, and all
   * pauses per request. In the raw results file and the profilers' output, not in the tables.
   */
  gc?: { scavenges: number; scavengeMeanMs: number; fullPauses: number; pauseMsPerRequest: number };
  /**
   * The server's background jobs that finished runs during the timed part (its metrics'
   * coffer_job_run_duration_seconds), by job: runs and their seconds, for those with at least
   * 10 ms. They share the cores with the requests. In the raw results file and with BENCH_TAIL.
   */
  jobs?: Record<string, { runs: number; seconds: number }>;
  /**
   * The fsync probe's stalls (disk-stalls.ts) during the timed part, when a probe runs: how many
   * fsyncs took STALL_MS or more, and the slowest's ms. A commit in flight then waited as long.
   */
  disk?: { stalls: number; worstMs: number };
  /** A read row's yardstick (BareBeside): the bare route's rate just before and just after the row, their mean. */
  bare?: number;
  /** A money row's yardstick on PostgreSQL (rawBeside, raw-transfer.ts): the raw transfer's rate just before and just after the row, their mean. */
  raw?: number;
}

export interface Server {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

function waitForLine(proc: ChildProcess, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = out.match(pattern);
      if (m) {
        proc.stdout!.off('data', onData);
        resolve(m);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    proc.once('exit', (code) => reject(new Error(`${what} exited with ${code}:\n${out}`)));
  });
}

async function waitForFile(file: string, pattern: RegExp, proc: ChildProcess): Promise<void> {
  for (;;) {
    const text = readFileSync(file, 'utf8');
    if (pattern.test(text)) return;
    if (proc.exitCode !== null) throw new Error(`coffer exited with ${proc.exitCode}:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function stopper(proc: ChildProcess) {
  return async () => {
    if (proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  };
}

/** The bare route; with `query`, one prepared pg query per request instead. */
export async function startBare(query?: { databaseUrl: string; text: string; values: string[] }): Promise<Server> {
  const port = await freePort();
  const args = [
    fileURLToPath(new URL('./bare.ts', import.meta.url)),
    String(port),
    ...(query ? [query.databaseUrl, query.text, ...query.values] : []),
  ];
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  await waitForLine(proc, /listening/, 'bare server');
  return { url: `http://127.0.0.1:${port}`, proc, stop: stopper(proc) };
}

/**
 * A yardstick measured beside each row: a run of it just before the row and one just after,
 * the row's yardstick their mean. A shared host's speed moves within seconds, so a ratio to one run at the
 * start of a scenario measures the host's minute as much as the code. A row that follows
 * another at once shares the run between them. `settle`, if given, is awaited after each row
 * before the run after it: the row's own work that outlives it does not share the cores with
 * the yardstick.
 */
export class Beside {
  #last: { rate: number; at: number } | undefined;

  constructor(
    private readonly measure: () => Promise<number>,
    private readonly settle?: () => Promise<void>,
  ) {}

  async #run(): Promise<number> {
    const rate = await this.measure();
    this.#last = { rate, at: performance.now() };
    return rate;
  }

  /** `row` between two runs of the yardstick; its result, and the mean of the two runs. */
  async around<R>(row: () => Promise<R>): Promise<[R, number]> {
    // The run after the previous row, if this row follows it at once (no set-up in between).
    const before = this.#last && performance.now() - this.#last.at < 2000 ? this.#last.rate : await this.#run();
    const r = await row();
    if (this.settle) await this.settle();
    const after = await this.#run();
    return [r, Math.round((before + after) / 2)];
  }
}

/**
 * The bare route beside each read row (Beside): its yardstick is LoadResult.bare. The bare
 * server stays up (and warm) for the whole scenario.
 */
export class BareBeside {
  static readonly RUN_S = 3;
  readonly #server: Server;
  readonly #beside: Beside;

  private constructor(server: Server) {
    this.#server = server;
    this.#beside = new Beside(() => this.rate());
  }

  /** One run of the bare route (RUN_S, or `durationS`, after a second not counted): its rate. */
  async rate(durationS = BareBeside.RUN_S): Promise<number> {
    return (await load('bare Fastify route (beside)', { url: `${this.#server.url}/`, durationS, warmupS: 1 })).rps;
  }

  static async start(): Promise<BareBeside> {
    return new BareBeside(await startBare());
  }

  /** `row` between two runs of the bare route, with their mean as its yardstick. */
  async around(row: () => Promise<LoadResult>): Promise<LoadResult> {
    const [r, bare] = await this.#beside.around(row);
    return { ...r, bare };
  }

  async stop(): Promise<void> {
    await this.#server.stop();
  }
}

export interface CofferServer extends Server {
  adminUrl: string;
  adminToken: string;
}

/** The Node flags of `npm start` (the checkout's package.json): the benchmark runs the server as `npm start` does. */
function serverNodeArgs(root: string): string[] {
  const start = (
    JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
  ).scripts.start.split(/\s+/);
  return start.slice(1, start.indexOf('--import'));
}

/** The profilers' PROFILE_ENV: a JSON object of variables added to the server's environment. */
export function profileEnv(): Record<string, string> {
  return process.env.PROFILE_ENV ? (JSON.parse(process.env.PROFILE_ENV) as Record<string, string>) : {};
}

/** Starts Coffer with its API and admin listeners, request logging as configured by default. */
export async function startCoffer(opts: {
  databaseUrl?: string;
  /** Another checkout's Coffer (a before-and-after comparison); this one's by default. */
  root?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /** Reuse a data folder (PGlite restarts); a fresh one by default. */
  dataDir?: string;
}): Promise<CofferServer & { databaseUrl?: string; dataDir: string }> {
  const [api, admin] = [await freePort(), await freePort()];
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'coffer-bench-')));
  const adminToken = 'cft_lbuu-QrlcG-__iZbC9mmdTO7Q1fqYGUniV33Nn-iDHxDV6CC';
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: String(api),
    ADMIN_PORT: String(admin),
    LISTENERS: 'api,admin',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: adminToken,
    // The limiter runs, but its ceiling is out of reach so it never answers 429 here.
    RATE_LIMIT_PER_MINUTE: '100000000',
    // The benchmarks' webhook receivers run on loopback.
    WEBHOOK_ALLOW_PRIVATE: 'true',
    CLIENT_RATE_LIMIT_PER_MINUTE: '100000000',
    ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
    ...opts.env,
  };
  if (opts.databaseUrl) env.DATABASE_URL = opts.databaseUrl;
  else delete env.DATABASE_URL;
  // The server logs to a file, as a deployment would; the load generator never reads it.
  const logFile = path.join(dataDir, `coffer-${Date.now()}.log`);
  const fd = openSync(logFile, 'w');
  const proc = spawn(
    process.execPath,
    [
      ...serverNodeArgs(opts.root ?? fileURLToPath(new URL('..', import.meta.url))),
      ...(opts.nodeArgs ?? []),
      '--import',
      'tsx',
      opts.root ? path.join(opts.root, 'src/main.ts') : fileURLToPath(new URL('../src/main.ts', import.meta.url)),
    ],
    { cwd: opts.root, env, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  await waitForFile(logFile, /Stop with Ctrl-C/, proc);
  admins.set(proc.pid!, { url: `http://127.0.0.1:${admin}`, token: adminToken });
  return {
    url: `http://127.0.0.1:${api}`,
    adminUrl: `http://127.0.0.1:${admin}`,
    adminToken,
    proc,
    stop: stopper(proc),
    databaseUrl: opts.databaseUrl,
    dataDir,
  };
}

/** The admin listener of each server startCoffer started, by process id: load() reads its collections' totals there. */
const admins = new Map<number, { url: string; token: string }>();

type GcTotals = Record<'minor' | 'major' | 'incremental', { count: number; seconds: number }>;
type JobTotals = Map<string, { runs: number; seconds: number }>;

/**
 * A Coffer server's garbage collection (prom-client's default metrics) and its jobs' run time so
 * far, from its metrics; undefined for any other server.
 */
async function serverTotals(pid: number | undefined): Promise<{ gc: GcTotals; jobs: JobTotals } | undefined> {
  const admin = pid === undefined ? undefined : admins.get(pid);
  if (!admin) return undefined;
  try {
    const text = await (
      await fetch(`${admin.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })
    ).text();
    const read = (kind: string, what: string) =>
      Number(new RegExp(`^nodejs_gc_duration_seconds_${what}\\{kind="${kind}"\\} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
    const of = (kind: string) => ({ count: read(kind, 'count'), seconds: read(kind, 'sum') });
    const jobs: JobTotals = new Map();
    for (const m of text.matchAll(/^coffer_job_run_duration_seconds_(sum|count)\{job="([^"]+)"\} (\S+)/gm)) {
      const j = jobs.get(m[2]!) ?? { runs: 0, seconds: 0 };
      if (m[1] === 'sum') j.seconds = Number(m[3]);
      else j.runs = Number(m[3]);
      jobs.set(m[2]!, j);
    }
    return { gc: { minor: of('minor'), major: of('major'), incremental: of('incremental') }, jobs };
  } catch {
    return undefined;
  }
}

/** The jobs' runs between two readings, those with at least 10 ms, longest first. */
function jobFigures(start: JobTotals, end: JobTotals): NonNullable<LoadResult['jobs']> {
  const ran = [...end].map(([job, e]) => {
    const s = start.get(job) ?? { runs: 0, seconds: 0 };
    return [job, { runs: e.runs - s.runs, seconds: Math.round((e.seconds - s.seconds) * 1000) / 1000 }] as const;
  });
  return Object.fromEntries(ran.filter(([, j]) => j.seconds >= 0.01).sort((a, b) => b[1].seconds - a[1].seconds));
}

/**
 * BENCH_TAIL=1: each row also tells when its slowest 1% of responses arrived (stderr), and `npm
 * run bench` probes the disk beside the rows (disk-stalls.ts).
 */
export const TAIL = Boolean(process.env.BENCH_TAIL);

/**
 * When the slowest 1% arrived, as bursts: responses that arrived within 5 ms of each other are
 * one burst, printed as `at <ms from the row's start>: <count> of up to <latency> ms`. A burst
 * at the start is the row's first requests, sent at once; one mid-run, a pause of the server.
 */
export function slowestPercent(arrivals: number[], latencies: number[]): string {
  const order = latencies.map((_, i) => i).sort((a, b) => latencies[b]! - latencies[a]!);
  const slow = order.slice(0, Math.ceil(order.length / 100)).sort((a, b) => arrivals[a]! - arrivals[b]!);
  const bursts: { at: number; last: number; count: number; worst: number }[] = [];
  for (const i of slow) {
    const b = bursts.at(-1);
    if (b && arrivals[i]! - b.last <= 5)
      Object.assign(b, { last: arrivals[i]!, count: b.count + 1, worst: Math.max(b.worst, latencies[i]!) });
    else bursts.push({ at: arrivals[i]!, last: arrivals[i]!, count: 1, worst: latencies[i]! });
  }
  return bursts.map((b) => `at ${Math.round(b.at)}: ${b.count} of up to ${Math.round(b.worst)} ms`).join('; ');
}

/**
 * Drives `url` with autocannon. A timed run is preceded by a warm-up of the same requests on
 * the same connections (`warmupS`, default 2 s, not counted): the figures are those of a
 * running server, not of one compiling its first requests. With `serverPid` on Linux, also the
 * CPU time per request of the server, of every process named postgres (the local PostgreSQL
 * server) and of this process, the load generator, which shares the machine's cores with both.
 */
export async function load(
  name: string,
  opts: {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    durationS?: number;
    warmupS?: number;
    /** A fixed number of requests instead of a duration. */
    amount?: number;
    /** With `amount`: that many requests more go first, on the same connections, not counted. */
    warmupAmount?: number;
    requests?: autocannon.Request[];
    serverPid?: number;
  },
): Promise<LoadResult> {
  const warmupAmount = opts.amount ? (opts.warmupAmount ?? 0) : 0;
  const limit = opts.amount
    ? { amount: warmupAmount + opts.amount }
    : { duration: (opts.warmupS ?? 2) + (opts.durationS ?? 10) };
  const warmupMs = opts.amount ? 0 : (opts.warmupS ?? 2) * 1000;
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: opts.url,
        method: opts.method ?? 'GET',
        body: opts.body,
        connections: opts.connections ?? 50,
        ...limit,
        headers: { 'content-type': 'application/vnd.api+json', ...opts.headers },
        ...(opts.requests ? { requests: opts.requests } : {}),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  // The warm-up and the timed part are one run on the same connections: the figures count the
  // responses that arrive after the warm-up. Two runs would open 50 new connections at the
  // start of the timed part, and their first answers trickled in over up to 450 ms on a slow
  // host (the bare route's too), which was the load generator's start and not the server.
  let started = performance.now();
  let responses = 0;
  let lastAt = started;
  let timing = warmupMs === 0 && warmupAmount === 0;
  let cpuBefore: ReturnType<typeof cpuTicks>;
  let totalsBefore: ReturnType<typeof serverTotals> = Promise.resolve(undefined);
  let generatorBefore = process.cpuUsage();
  const startTiming = () => {
    cpuBefore = opts.serverPid ? cpuTicks(opts.serverPid) : undefined;
    totalsBefore = serverTotals(opts.serverPid);
    generatorBefore = process.cpuUsage();
    started = lastAt = performance.now();
    timing = true;
    if (TAIL) process.stderr.write(`${name}: timed from ${Date.now()}\n`);
  };
  if (timing) startTiming();
  else if (warmupMs > 0) setTimeout(startTiming, warmupMs);
  // autocannon reports on a one-second tick and over the whole run: the rate and the latencies
  // are measured here, from the timed part's start to its last response.
  /** Each timed response's arrival (ms from the start) and latency (ms). */
  const arrivals: number[] = [];
  const latencies: number[] = [];
  let warmed = 0;
  instance.on('response', (_client: unknown, _status: number, _bytes: number, latency: number) => {
    if (!timing) {
      if (warmupAmount > 0 && ++warmed === warmupAmount) startTiming();
      return;
    }
    responses++;
    lastAt = performance.now();
    arrivals.push(lastAt - started);
    latencies.push(latency);
  });
  const result = await done;
  if (TAIL) process.stderr.write(`${name}: the slowest 1% arrived ${slowestPercent(arrivals, latencies)}\n`);
  const cpuAfter = opts.serverPid ? cpuTicks(opts.serverPid) : undefined;
  const [totalsStart, totalsEnd] = [await totalsBefore, await serverTotals(opts.serverPid)];
  const jobs = totalsStart && totalsEnd ? jobFigures(totalsStart.jobs, totalsEnd.jobs) : undefined;
  if (TAIL && jobs)
    process.stderr.write(
      `${name}: jobs that ran ${
        Object.entries(jobs)
          .map(([job, j]) => `${job} ${j.runs}× ${j.seconds} s`)
          .join('; ') || 'none of 10 ms'
      }\n`,
    );
  const startedAt = performance.timeOrigin + started; // epoch ms, as the probe's
  const stalls = stallsBetween(startedAt, performance.timeOrigin + lastAt);
  if (TAIL && stalls)
    process.stderr.write(
      `${name}: disk stalls ${stalls.map((s) => `at ${Math.round(s.at - startedAt)}: ${Math.round(s.ms)} ms`).join('; ') || 'none'}\n`,
    );
  // The load generator's own CPU (autocannon in this process): it runs on the same cores.
  const generator = process.cpuUsage(generatorBefore);
  const perRequest = (ms: number) => Math.round((ms / Math.max(1, responses)) * 100) / 100;
  const ticksPerRequest = (ticks: number) => perRequest((ticks * 1000) / TICKS_PER_S);
  return {
    name,
    rps: Math.round(responses / ((lastAt - started) / 1000)),
    ...percentiles(latencies),
    requests: responses,
    // Over the whole run, warm-up included: a failure there counts too.
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    ...(cpuBefore && cpuAfter
      ? {
          cpu: {
            server: ticksPerRequest(cpuAfter.server - cpuBefore.server),
            postgres: ticksPerRequest(cpuAfter.postgres - cpuBefore.postgres),
            generator: perRequest((generator.user + generator.system) / 1000),
          },
        }
      : {}),
    ...(totalsStart && totalsEnd ? { gc: gcFigures(totalsStart.gc, totalsEnd.gc, responses), jobs } : {}),
    ...(stalls
      ? { disk: { stalls: stalls.length, worstMs: Math.round(Math.max(0, ...stalls.map((s) => s.ms))) } }
      : {}),
  };
}

function gcFigures(start: GcTotals, end: GcTotals, responses: number): NonNullable<LoadResult['gc']> {
  const d = (kind: keyof GcTotals) => ({
    count: end[kind].count - start[kind].count,
    ms: (end[kind].seconds - start[kind].seconds) * 1000,
  });
  const [minor, major, incremental] = [d('minor'), d('major'), d('incremental')];
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    scavenges: minor.count,
    scavengeMeanMs: round(minor.ms / Math.max(1, minor.count)),
    fullPauses: major.count,
    pauseMsPerRequest: Math.round(((minor.ms + major.ms + incremental.ms) / Math.max(1, responses)) * 1000) / 1000,
  };
}

/** The value at percentile `p` (0 to 100) of values sorted ascending: the smallest with p% at or below it. */
export function percentileOf(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** p50, p99 and the slowest of latencies in ms, rounded to whole ms as autocannon reports them. */
function percentiles(latencies: number[]): { p50: number; p99: number; max: number } {
  const sorted = Float64Array.from(latencies).sort();
  return {
    p50: Math.round(percentileOf(sorted, 50)),
    p99: Math.round(percentileOf(sorted, 99)),
    max: Math.round(sorted.at(-1) ?? 0),
  };
}

/** Linux's clock ticks per second for /proc/<pid>/stat times (USER_HZ). */
export const TICKS_PER_S = 100;

/** CPU time (user + system, in ticks) of one process and of every process named postgres, with their reaped children's. */
export function cpuTicks(serverPid: number): { server: number; postgres: number } | undefined {
  const ticksOf = (pid: string) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      // Its own time, and that of its children that exited and were reaped (cutime, cstime): a
      // PostgreSQL backend that closes during a row (the pool's idle timeout) leaves its time to
      // the postmaster instead of taking it out of the sum (which once made a row's figure negative).
      return {
        comm: readFileSync(`/proc/${pid}/comm`, 'utf8').trim(),
        ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]),
      };
    } catch {
      return undefined; // gone, or not Linux
    }
  };
  const server = ticksOf(String(serverPid));
  if (!server) return undefined;
  let postgres = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const p = ticksOf(pid);
    if (p?.comm === 'postgres') postgres += p.ticks;
  }
  return { server: server.ticks, postgres };
}

/** The machine's CPU time (all cores, in ticks): busy and idle (idle includes waiting for I/O). */
export function machineTicks(): { busy: number; idle: number } {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: user! + nice! + system! + irq! + softirq! + steal!, idle: idle! + iowait! };
}

/** The server's ledger check (`/admin/v1/ledger/verify`): whether it is sound, and any violations. */
export async function verifyLedger(
  coffer: Pick<CofferServer, 'adminUrl' | 'adminToken'>,
): Promise<{ sound: boolean; violations?: unknown }> {
  const report = await json(`${coffer.adminUrl}/admin/v1/ledger/verify`, {
    headers: { authorization: `Bearer ${coffer.adminToken}` },
  });
  return report.data.attributes;
}

export async function json(url: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<any> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/vnd.api+json', ...init.headers } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates a merchant through the admin API; returns the headers that authenticate as it. */
export async function merchant(server: CofferServer, settings?: Record<string, unknown>) {
  const created = await json(`${server.adminUrl}/admin/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}` },
    body: JSON.stringify({
      data: { type: 'Client', attributes: { name: 'Bench', ...(settings ? { settings } : {}) } },
    }),
  });
  return {
    'client-id': created.data.id as string,
    authorization: `Bearer ${created.data.attributes.secret as string}`,
  };
}

/**
 * Writes a run's raw figures to bench/results/<name>.json (outputs, ignored by git) and prints
 * where they went.
 */
export async function writeResults(name: string, data: unknown): Promise<void> {
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, `${JSON.stringify(data, null, 2)}\n`);
  process.stdout.write(`Raw results: ${path.relative(process.cwd(), file)}\n`);
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** The name of the raw transfer yardstick's row (raw-transfer.ts), measured beside money movements. */
export const RAW_TRANSFER = 'raw pg transfer transaction (8 connections)';

/**
 * A scenario's rows as a markdown table, each beside a yardstick of the same run: reads beside
 * the bare route (the runs just before and after the row when it has them, BareBeside, shown in
 * a column of their own; otherwise `reference`), and, when the run measured the raw transfer,
 * everything else beside that (the runs just before and after the row when it has them,
 * rawBeside in raw-transfer.ts, also in a column of their own).
 */
export function table(results: LoadResult[], reference?: LoadResult): string {
  const raw = results.find((r) => r.name === RAW_TRANSFER);
  const write = (r: LoadResult) => raw !== undefined && !r.name.startsWith('GET ');
  const withCpu = results.some((r) => r.cpu);
  const withDisk = results.some((r) => r.disk);
  const beside = results.some((r) => r.bare !== undefined);
  const rawBeside = results.some((r) => r.raw !== undefined);
  const share = (r: LoadResult, of: LoadResult | undefined) => {
    const rate =
      of === reference && r.bare !== undefined ? r.bare : of === raw && r.raw !== undefined ? r.raw : of?.rps;
    return rate !== undefined && r !== reference && r !== raw ? `${((100 * r.rps) / rate).toFixed(1)}%` : '';
  };
  const besideCell = (r: LoadResult) => (beside ? ` ${r.bare?.toLocaleString('en-US') ?? ''} |` : '');
  const rawBesideCell = (r: LoadResult) => (rawBeside ? ` ${r.raw?.toLocaleString('en-US') ?? ''} |` : '');
  // Rows without latencies (the raw transfer, the flows count) leave those cells empty.
  const latency = (r: LoadResult) => (r.p50 === 0 && r.p99 === 0 ? ' | ' : `${r.p50} | ${r.p99}`);
  const cpu = (r: LoadResult) => {
    if (!withCpu) return '';
    const parts = r.cpu ? [r.cpu.server, r.cpu.postgres, r.cpu.generator].filter((v) => v !== undefined) : [];
    return ` ${parts.map((v) => v.toFixed(2)).join(' + ')} |`;
  };
  const disk = (r: LoadResult) =>
    !withDisk ? '' : ` ${!r.disk ? '' : r.disk.stalls === 0 ? '0' : `${r.disk.stalls}, ${r.disk.worstMs} ms`} |`;
  const rows = results.map(
    (r) =>
      `| ${r.name} | ${r.rps.toLocaleString('en-US')} | ${share(r, write(r) ? undefined : reference)} |${besideCell(r)}${raw ? ` ${share(r, write(r) ? raw : undefined)} |` : ''}${rawBesideCell(r)} ${latency(r)} | ${r.non2xx + r.errors} |${cpu(r)}${disk(r)}`,
  );
  const head = `| scenario | req/s | of bare |${beside ? ' bare beside it |' : ''}${raw ? ' of raw transfer |' : ''}${rawBeside ? ' raw transfer beside it |' : ''} p50 ms | p99 ms | non-2xx + errors |${withCpu ? ' CPU ms per request: server + PostgreSQL + load generator |' : ''}${withDisk ? ` disk stalls: fsyncs of ${STALL_MS} ms or more, the slowest |` : ''}`;
  return [
    head,
    `|---|---:|---:|${beside ? '---:|' : ''}${raw ? '---:|' : ''}${rawBeside ? '---:|' : ''}---:|---:|---:|${withCpu ? '---:|' : ''}${withDisk ? '---:|' : ''}`,
    ...rows,
    ...longJobNotes(results),
  ].join('\n');
}

/**
 * Under the table, the rows during which one of the server's long jobs finished a run (a run of
 * a quarter second or more on average: the table maintenance, the ledger check), which take a
 * core from the requests beside them for that long. The same code's row is slower with one.
 */
function longJobNotes(results: LoadResult[]): string[] {
  const notes = results.flatMap((r) => {
    const long = Object.entries(r.jobs ?? {}).filter(([, j]) => j.runs > 0 && j.seconds / j.runs >= 0.25);
    return long.length === 0
      ? []
      : [
          `- ${r.name}: ${long.map(([job, j]) => `${job} ${j.runs === 1 ? 'once' : `${j.runs} times`}, ${j.seconds.toFixed(1)} s`).join('; ')}`,
        ];
  });
  return notes.length === 0 ? [] : ['', 'Long server jobs that ran during a row:', ...notes];
}

export type Auth = Awaited<ReturnType<typeof merchant>>;

/**
 * Waits until none of the merchant's payments is Processing. The sandbox bank settles a payment
 * a second after it was made or captured, so a row that follows one that made or captured
 * payments would otherwise take their settlement into its own first second; a row's own
 * payments still settle during it.
 */
export async function settled(coffer: CofferServer, auth: Auth, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const page = await json(`${coffer.url}/api/v1/payments?filter[status]=Processing&page[limit]=1`, { headers: auth });
    if (page.meta.total === 0) return;
    if (Date.now() > until) throw new Error(`${page.meta.total} payments still Processing after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const post = (coffer: CofferServer, auth: Auth, path: string, body?: unknown) =>
  json(`${coffer.url}${path}`, { method: 'POST', headers: auth, ...(body ? { body: JSON.stringify(body) } : {}) });

/** `n` users with approved KYC, a linked account and a wallet each (the sandbox decides KYC in the background). */
export async function approvedWallets(
  coffer: CofferServer,
  auth: Auth,
  n: number,
  from = 0,
): Promise<{ walletId: string; accountId: string }[]> {
  const wallets: { walletId: string; accountId: string }[] = [];
  for (let i = from; i < from + n; i++) {
    const u = await post(coffer, auth, '/api/v1/users', {
      data: { type: 'User', attributes: { phoneNumber: `+1555${String(i).padStart(7, '0')}` } },
    });
    const userId = u.data.id as string;
    await post(coffer, auth, `/api/v1/users/${userId}/disclosures/kyc`);
    await post(coffer, auth, `/api/v1/users/${userId}/kyc/application`, {
      data: {
        type: 'KycApplication',
        attributes: {
          firstName: 'B',
          lastName: 'Ench',
          dateOfBirth: '1990-01-01',
          email: `b${i}@example.com`,
          address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US' },
        },
      },
    });
    const account = await post(coffer, auth, `/api/v1/simulation/users/${userId}/linked-accounts`);
    const wallet = await post(coffer, auth, '/api/v1/wallets', { data: { type: 'Wallet', attributes: { userId } } });
    wallets.push({ walletId: wallet.data.id, accountId: account.data.id });
  }
  await new Promise((r) => setTimeout(r, 1500)); // the sandbox KYC decisions
  return wallets;
}

/** Cleared deposit money in each wallet (the merchant must allow deposits this big). */
export async function fundWallets(
  coffer: CofferServer,
  auth: Auth,
  wallets: { walletId: string; accountId: string }[],
  amount: number,
): Promise<void> {
  for (const w of wallets) {
    await post(coffer, auth, `/api/v1/wallets/${w.walletId}/transactions`, {
      data: {
        type: 'OneTimeDeposit',
        attributes: { amount, linkedAccountId: w.accountId, idempotencyKey: `fund-${w.walletId}` },
      },
    });
    await post(coffer, auth, `/api/v1/simulation/wallets/${w.walletId}/clear-pending/bank`);
  }
}

/** The PostgreSQL server the benchmarks make their databases on: DATABASE_URL, or the local one. */
export const PG_SERVER = loadConfig(process.env).databaseUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const created: { serverUrl: string; name: string }[] = [];

/** A new database on the server for a run, so runs never see each other's rows; see dropDatabases. */
export async function freshDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${Date.now()}`;
  await runOn(serverUrl, `create database ${name}`);
  created.push({ serverUrl, name });
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * ANALYZE of a benchmark database. A server that has run for a while has its tables' statistics
 * from autovacuum, which ANALYZEs a table again once a tenth of it changed; a database made a
 * minute ago has none yet (autovacuum visits each database about once a minute, and this
 * project's benchmark machine runs PostgreSQL with it off), so the plans PostgreSQL caches for
 * prepared statements are made for tables it takes to be nearly empty, and kept as they grow (a
 * group's intent update scanned the whole table, its check walked the merchant's index; see
 * docs/operations.md). Rows that measure a step on grown tables run after one.
 */
export async function analyzeDatabase(databaseUrl: string): Promise<void> {
  await runOn(databaseUrl, 'analyze');
}

/** One statement on a connection of its own. */
export async function runOn<R = Record<string, unknown>>(url: string, text: string): Promise<R[]> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows as R[];
  } finally {
    await c.end();
  }
}

/** Drops the databases freshDatabase made (call once the servers using them have stopped). */
export async function dropDatabases(): Promise<void> {
  const { default: pg } = await import('pg');
  for (const { serverUrl, name } of created.splice(0)) {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`).catch(() => {});
    await c.end();
  }
}
