// Rows measured in rounds beside their yardsticks (bench/compare.ts, bench/report.ts). A host
// whose speed swings by half within minutes decides nothing from one run: each row runs once a
// round right after its yardstick (the bare Fastify route for reads, the raw pg transfer for
// money movements), its figure is its ratio to that yardstick, and a row is read as the median
// of its rounds' ratios with their spread.
import os from 'node:os';
import { BareBeside, type CofferServer, type LoadResult, runOn, settled, type Auth } from './lib.ts';
import { RAW_BESIDE_QUIET_MS, rawYardstick } from './raw-transfer.ts';
import type { Yardstick } from './rows.ts';

/** The value at fraction `q` (0 to 1) of `values`, interpolated between neighbours (the median at 0.5). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  return sorted[lo]! + (sorted[Math.min(lo + 1, sorted.length - 1)]! - sorted[lo]!) * (at - lo);
}

export const median = (values: readonly number[]) => quantile(values, 0.5);

export interface Spread {
  median: number;
  min: number;
  max: number;
  q1: number;
  q3: number;
}

export function spread(values: readonly number[]): Spread {
  return {
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    q1: quantile(values, 0.25),
    q3: quantile(values, 0.75),
  };
}

/** The yardsticks of a run: a bare route server kept up (and warm) throughout, and the raw transfer's own database. */
export class Yardsticks {
  private constructor(
    private readonly bare: BareBeside,
    private readonly rawDatabaseUrl: string,
    /** Seconds a yardstick run is timed. */
    readonly runS: number,
  ) {}

  static async start(rawDatabaseUrl: string, runS: number): Promise<Yardsticks> {
    return new Yardsticks(await BareBeside.start(), rawDatabaseUrl, runS);
  }

  /** One run of the yardstick: its rate (requests or transfers a second). */
  measure(kind: Yardstick): Promise<number> {
    return kind === 'bare' ? this.bare.rate(this.runS) : rawYardstick(this.rawDatabaseUrl, this.runS);
  }

  stop(): Promise<void> {
    return this.bare.stop();
  }
}

/**
 * Waits until the row's own work that outlives it is done: its payments settled (a second after
 * they are made or captured), then a pause for its deposits' bank pulls, so that it does not
 * share the cores with the yardstick run after it.
 */
export async function quiet(target: { coffer: CofferServer; auth: Auth }): Promise<void> {
  await settled(target.coffer, target.auth);
  await new Promise((resolve) => setTimeout(resolve, RAW_BESIDE_QUIET_MS));
}

/** One row's round: its yardstick's rate just before it, its own figures, their ratio. */
export interface Sample {
  round: number;
  yardstick: number;
  ratio: number;
  result: LoadResult;
}

/** The yardstick, then the row at once (then quiet, after a money movement): the row's sample of this round. */
export async function besideYardstick(
  yardsticks: Yardsticks,
  kind: Yardstick,
  round: number,
  run: () => Promise<LoadResult>,
  target: { coffer: CofferServer; auth: Auth },
): Promise<Sample> {
  const yardstick = await yardsticks.measure(kind);
  const result = await run();
  // A money movement's work outlives it; a read's does not.
  if (kind === 'raw') await quiet(target);
  return { round, yardstick, ratio: result.rps / yardstick, result };
}

/** A row over its rounds: medians of its rate, its yardstick's and p99, and its ratio's median and spread. */
export interface RowSummary {
  rps: number;
  yardstick: number;
  ratio: Spread;
  p50: number;
  p99: number;
  failed: number;
}

export function summarize(samples: readonly Sample[]): RowSummary {
  return {
    rps: Math.round(median(samples.map((s) => s.result.rps))),
    yardstick: Math.round(median(samples.map((s) => s.yardstick))),
    ratio: spread(samples.map((s) => s.ratio)),
    p50: median(samples.map((s) => s.result.p50)),
    p99: median(samples.map((s) => s.result.p99)),
    failed: samples.reduce((n, s) => n + s.result.non2xx + s.result.errors, 0),
  };
}

/** The machine a run is on, for its results file: the CPU, its cores, memory, Node, the OS and PostgreSQL's version. */
export async function machineFacts(pgServer: string) {
  const [version] = await runOn<{ server_version: string }>(pgServer, 'show server_version');
  return {
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    postgres: version?.server_version ?? 'unknown',
  };
}

export type Machine = Awaited<ReturnType<typeof machineFacts>>;

/** A results file's name for a run started now: `<prefix>-<UTC time>`. */
export const stamp = (prefix: string) => `${prefix}-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}`;
