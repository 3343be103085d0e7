// Soak: `npm run soak -- [--minutes 10] [--db postgres|pglite]`. A mixed load (balance and user
// reads, deposits, checkouts of create intent → authorize → capture, webhooks delivered to a
// local receiver) against one Coffer process for the given time, 50 connections, recorded in
// 30-second windows: throughput, p99, errors, the server's RSS and the deliveries' backlog
// (events written that the receiver has not had yet). At the end the ledger is verified and
// every event must have been delivered; a run of 12 minutes or more also compares the last five
// minutes' throughput with minutes 2 to 7's (within 10%, or the run fails) and lists the largest
// tables. Each window also records the CPU time a request took (server, PostgreSQL, load
// generator), how busy the machine was, how fast it ran (cpu-probe.ts), how long each of the
// server's background jobs ran, and on PostgreSQL the WAL written and flushed (the flushes' time
// only for a superuser). The raw figures go to bench/results/soak-<time>.json; the path is
// printed.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { probeMedians, startCpuProbe } from './cpu-probe.ts';
import {
  approvedWallets,
  cpuTicks,
  dropDatabases,
  freshDatabase,
  fundWallets,
  json,
  machine,
  machineTicks,
  merchant,
  post,
  runOn,
  startCoffer,
  TICKS_PER_S,
  verifyLedger,
  writeResults,
} from './lib.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    db: { type: 'string', default: 'postgres' },
    window: { type: 'string', default: '30' },
  },
});
const minutes = Number(values.minutes);
const windowS = Number(values.window);
const pgServer = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const rssMb = (pid: number) =>
  Math.round(
    Number(
      execFileSync('ps', ['-o', 'rss=', '-p', String(pid)])
        .toString()
        .trim(),
    ) / 1024,
  );

let delivered = 0;
/** Event ids received more than once (at-least-once delivery allows it after a failure; a clean run has none). */
const seen = new Set<string>();
let duplicates = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    delivered++;
    const id = String(req.headers['webhook-id']);
    if (seen.has(id)) duplicates++;
    else seen.add(id);
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));

const databaseUrl = values.db === 'postgres' ? await freshDatabase(pgServer, 'coffer_soak') : undefined;
// The time the database's backends spend flushing WAL (pg_stat_wal), read each window. Only a
// superuser may turn it on; for any other user (CREATEDB is enough for the soak) the windows
// leave the flush time out.
const walTimed =
  databaseUrl !== undefined &&
  (await runOn(
    databaseUrl,
    `alter database ${new URL(databaseUrl).pathname.slice(1)} set track_wal_io_timing = on`,
  ).then(
    () => true,
    () => false,
  ));
const coffer = await startCoffer({ databaseUrl, env: { LOG_LEVEL: 'warn' } });
const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
await post(coffer, auth, '/api/v1/webhooks', {
  data: {
    type: 'Webhook',
    attributes: { name: 'Soak', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`, topics: ['*'] },
  },
});
const wallets = await approvedWallets(coffer, auth, 20);
await fundWallets(coffer, auth, wallets, 50_000_000);
const users = await json(`${coffer.url}/api/v1/users?page[limit]=20`, { headers: auth });
const userIds: string[] = users.data.map((u: { id: string }) => u.id);

const headers = { ...auth, 'content-type': 'application/vnd.api+json' };
const pick = <T>(a: T[]) => a[Math.floor(Math.random() * a.length)]!;
type Ctx = { walletId?: string; intentId?: string; paymentId?: string };

/** One connection's cycle: two reads, a deposit, a checkout of three requests. */
const requests: autocannon.Request[] = [
  { method: 'GET', setupRequest: (r) => ({ ...r, path: `/api/v1/wallets/${pick(wallets).walletId}/balance` }) },
  { method: 'GET', setupRequest: (r) => ({ ...r, path: `/api/v1/users/${pick(userIds)}` }) },
  {
    method: 'POST',
    setupRequest: (r) => {
      const w = pick(wallets);
      return {
        ...r,
        path: `/api/v1/wallets/${w.walletId}/transactions`,
        body: JSON.stringify({
          data: {
            type: 'OneTimeDeposit',
            attributes: { amount: 500, linkedAccountId: w.accountId, idempotencyKey: randomUUID() },
          },
        }),
      };
    },
  },
  {
    method: 'POST',
    setupRequest: (r, ctx: Ctx) => {
      ctx.walletId = pick(wallets).walletId;
      return {
        ...r,
        path: '/api/v1/payment-intents',
        body: JSON.stringify({
          data: { type: 'CreatePaymentIntent', attributes: { amount: 100, walletId: ctx.walletId } },
        }),
      };
    },
    onResponse: (_s, body, ctx: Ctx) => {
      ctx.intentId = JSON.parse(body).data?.id;
    },
  },
  {
    method: 'POST',
    setupRequest: (r, ctx: Ctx) => ({
      ...r,
      path: `/api/v1/payment-intents/${ctx.intentId}/authorize`,
      body: JSON.stringify({
        data: { type: 'AuthorizePaymentIntent', attributes: { amount: 100, idempotencyKey: randomUUID() } },
      }),
    }),
    onResponse: (_s, body, ctx: Ctx) => {
      ctx.paymentId = JSON.parse(body).included?.[0]?.id;
    },
  },
  {
    method: 'POST',
    setupRequest: (r, ctx: Ctx) => ({
      ...r,
      path: `/api/v1/payments/${ctx.paymentId}/capture`,
      body: JSON.stringify({ data: { type: 'CapturePayment', attributes: { amount: 100 } } }),
    }),
  },
];

interface Window {
  minute: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  rssMb: number;
  /** Events written and webhook deliveries received in the window, per second. */
  eventsPerS: number;
  deliveredPerS: number;
  /** Events written by the window's end that the receiver had not yet had: the deliveries' backlog. */
  behind: number;
  /** CPU time per request (ms) of the server, of PostgreSQL's processes and of the load generator. */
  cpuMs: { server: number; postgres: number; generator: number };
  /** The share of the machine's CPU time (all cores) that was busy, by any process. */
  busy: number;
  /** CPU time (ms) of two fixed pieces of work in a process of its own, medians of five in the window: how fast the machine ran (cpu-probe.ts). */
  probe: { arithmeticMs: number; memoryMs: number };
  /** Seconds each background job of the server ran in the window (those above 0.1 s): its share of the database's work that no request asked for. */
  jobsS: Record<string, number>;
  /**
   * PostgreSQL: WAL written per request (KB), WAL flushes a second and their mean time (ms; the
   * WAL writer's few flushes, untimed outside a database, count as 0), checkpoints begun.
   */
  wal?: { kbPerRequest: number; flushesPerS: number; flushMs?: number; checkpoints: number };
}
interface WalReading {
  bytes: number;
  syncs: number;
  syncMs: number;
  checkpoints: number;
}
const readWal = async (): Promise<WalReading | undefined> => {
  if (!databaseUrl) return undefined;
  const [r] = await runOn<Record<keyof WalReading, string>>(
    databaseUrl,
    `select wal_bytes as bytes, wal_sync as syncs, wal_sync_time as "syncMs",
       (select checkpoints_timed + checkpoints_req from pg_stat_bgwriter) as checkpoints from pg_stat_wal`,
  );
  return (
    r && {
      bytes: Number(r.bytes),
      syncs: Number(r.syncs),
      syncMs: Number(r.syncMs),
      checkpoints: Number(r.checkpoints),
    }
  );
};
const round2 = (n: number) => Math.round(n * 100) / 100;
/** Seconds each job has run since the server started (coffer_job_run_duration_seconds). */
const jobSeconds = async (): Promise<Map<string, number>> => {
  const res = await fetch(`${coffer.adminUrl}/metrics`, { headers: { authorization: `Bearer ${coffer.adminToken}` } });
  const text = await res.text();
  return new Map(
    [...text.matchAll(/^coffer_job_run_duration_seconds_sum\{job="([^"]+)"\} (\S+)$/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
};
const windows: Window[] = [];
const prober = startCpuProbe();
const pid = coffer.proc.pid!;
const startRss = rssMb(pid);
process.stdout.write(`soak: ${minutes} min on ${values.db}, ${machine()}; RSS at start ${startRss} MB\n`);
const events = async () =>
  (await json(`${coffer.url}/api/v1/webhook-events?page[limit]=1`, { headers: auth })).meta.total as number;
let eventsBefore = await events();
for (let elapsed = 0; elapsed < minutes * 60; elapsed += windowS) {
  const deliveredBefore = delivered;
  const [cpuBefore, machineBefore, generatorBefore, walBefore, jobsBefore] = [
    cpuTicks(pid),
    machineTicks(),
    process.cpuUsage(),
    await readWal(),
    await jobSeconds(),
  ];
  const [result, probe] = await Promise.all([
    autocannon({ url: coffer.url, connections: 50, duration: windowS, headers, requests }),
    probeMedians(prober, 5, (windowS * 1000) / 6),
  ]);
  const [cpuAfter, machineAfter, generator, walAfter, jobsAfter] = [
    cpuTicks(pid),
    machineTicks(),
    process.cpuUsage(generatorBefore),
    await readWal(),
    await jobSeconds(),
  ];
  const eventsNow = await events();
  const served = Math.max(1, result.requests.total);
  const ticksMs = (ticks: number) => round2((ticks * 1000) / TICKS_PER_S / served);
  const busyTicks = machineAfter.busy - machineBefore.busy;
  const w: Window = {
    minute: Math.round(((elapsed + windowS) / 60) * 10) / 10,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    rssMb: rssMb(pid),
    eventsPerS: Math.round((eventsNow - eventsBefore) / windowS),
    deliveredPerS: Math.round((delivered - deliveredBefore) / windowS),
    behind: Math.max(0, eventsNow - seen.size),
    cpuMs: {
      server: cpuBefore && cpuAfter ? ticksMs(cpuAfter.server - cpuBefore.server) : 0,
      postgres: cpuBefore && cpuAfter ? ticksMs(cpuAfter.postgres - cpuBefore.postgres) : 0,
      generator: round2((generator.user + generator.system) / 1000 / served),
    },
    probe,
    jobsS: Object.fromEntries(
      [...jobsAfter]
        .map(([job, s]) => [job, round2(s - (jobsBefore.get(job) ?? 0))])
        .filter(([, s]) => (s as number) > 0.1),
    ),
    busy: round2(busyTicks / Math.max(1, busyTicks + machineAfter.idle - machineBefore.idle)),
    ...(walBefore && walAfter
      ? {
          wal: {
            kbPerRequest: round2((walAfter.bytes - walBefore.bytes) / 1024 / served),
            flushesPerS: Math.round((walAfter.syncs - walBefore.syncs) / windowS),
            ...(walTimed
              ? {
                  flushMs: round2((walAfter.syncMs - walBefore.syncMs) / Math.max(1, walAfter.syncs - walBefore.syncs)),
                }
              : {}),
            checkpoints: walAfter.checkpoints - walBefore.checkpoints,
          },
        }
      : {}),
  };
  eventsBefore = eventsNow;
  windows.push(w);
  process.stdout.write(`${JSON.stringify(w)}\n`);
}

// Drain: every event delivered, the ledger sound. How long the backlog took to go once the load
// stopped shows whether the deliveries kept pace with the events.
// The events are counted after half a second at least: requests in flight when the load stopped
// still write theirs (a count taken at once, with nothing behind, once left 156 out).
prober.stop();
const drainStarted = performance.now();
let total = 0;
for (let i = 0; i < 600 && (i === 0 || seen.size < total); i++) {
  await new Promise((r) => setTimeout(r, 500));
  total = await events();
}
const drainS = Math.round((performance.now() - drainStarted) / 100) / 10;
const ledger = await verifyLedger(coffer);

// Flat under growth: the last five minutes against minutes 2 to 7 (the windows ending after
// minute 1 and by minute 7), once the run is long enough for the two not to overlap.
/** The mean of f over the windows, to whole units (or to hundredths: `round2`). */
const mean = (ws: Window[], f: (w: Window) => number, round: (n: number) => number = Math.round) =>
  ws.length === 0 ? 0 : round(ws.reduce((a, w) => a + f(w), 0) / ws.length);
const meanOf = (ws: Window[], f: (w: Window) => number) => mean(ws, f, round2);
const early = windows.filter((w) => w.minute > 1 && w.minute <= 7);
const late = windows.filter((w) => w.minute > minutes - 5);
const flat =
  minutes >= 12
    ? {
        earlyRps: mean(early, (w) => w.rps),
        lastFiveRps: mean(late, (w) => w.rps),
        ratio:
          Math.round(
            (mean(late, (w) => w.rps) /
              Math.max(
                1,
                mean(early, (w) => w.rps),
              )) *
              1000,
          ) / 1000,
        earlyRssMb: mean(early, (w) => w.rssMb),
        lastFiveRssMb: mean(late, (w) => w.rssMb),
        // Whether a request cost more at the end (server and PostgreSQL, CPU ms), how busy the
        // machine was, and how fast it ran.
        earlyCpuMs: meanOf(early, (w) => w.cpuMs.server + w.cpuMs.postgres),
        lastFiveCpuMs: meanOf(late, (w) => w.cpuMs.server + w.cpuMs.postgres),
        earlyBusy: meanOf(early, (w) => w.busy),
        lastFiveBusy: meanOf(late, (w) => w.busy),
        earlyProbe: {
          arithmeticMs: meanOf(early, (w) => w.probe.arithmeticMs),
          memoryMs: meanOf(early, (w) => w.probe.memoryMs),
        },
        lastFiveProbe: {
          arithmeticMs: meanOf(late, (w) => w.probe.arithmeticMs),
          memoryMs: meanOf(late, (w) => w.probe.memoryMs),
        },
      }
    : undefined;
// What grew: the largest tables at the end, a partition on its own line (PostgreSQL only).
let tables: Record<string, { rows: number; mb: number }> | undefined;
if (databaseUrl) {
  const rows = await runOn<{ name: string; rows: string; mb: string }>(
    databaseUrl,
    `select c.relname as name, c.reltuples::bigint as rows, round(pg_total_relation_size(c.oid) / 1048576.0) as mb
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind = 'r'
     order by pg_total_relation_size(c.oid) desc limit 10`,
  );
  tables = Object.fromEntries(rows.map((r) => [r.name, { rows: Number(r.rows), mb: Number(r.mb) }]));
}
const summary = {
  at: new Date().toISOString(),
  machine: machine(),
  db: values.db,
  minutes,
  startRssMb: startRss,
  maxRssMb: Math.max(...windows.map((w) => w.rssMb)),
  endRssMb: windows.at(-1)?.rssMb,
  errors: windows.reduce((s, w) => s + w.errors + w.non2xx, 0),
  events: total,
  delivered,
  duplicates,
  maxBehind: Math.max(0, ...windows.map((w) => w.behind)),
  drainS,
  ledgerSound: ledger.sound,
  flat,
  tables,
  windows,
};
await writeResults(`soak-${summary.at.replace(/[:.]/g, '').slice(0, 15)}`, summary);
process.stdout.write(`${JSON.stringify({ ...summary, windows: undefined })}\n`);
await coffer.stop();
await dropDatabases();
receiver.close();
const flatEnough = !flat || Math.abs(flat.ratio - 1) <= 0.1;
process.exit(summary.errors === 0 && summary.ledgerSound && seen.size >= total && flatEnough ? 0 : 1);
