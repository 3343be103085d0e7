// npm run bench -- fixed-rate [--rounds N] [--duration S] [--rows deposits,withdrawals,…]
// Each money write offered at a fixed rate (open-loop.ts) beside the raw pg transfer offered the
// same rate: in each round and for each row, the raw transfer's closed-loop rate is measured
// first, then the raw transfer and the row are each offered half of it, one after the other, and
// their latencies compared (p50, p99, p99.9; the ratio of the p99s). Half the raw transfer's
// rate is a load both can carry, so a p99 far above the raw transfer's is the row's own queueing
// or stalls. Capture, cancel and refund act on payments made before the timed part.
import { dropDatabases, freshDatabase, PG_SERVER, startCoffer, writeResults } from './lib.ts';
import { fixedRateTable } from './report-format.ts';
import { type OpenLoopResult, openLoop } from './open-loop.ts';
import { rawTransferOpenLoop, rawYardstick } from './raw-transfer.ts';
import { machineFacts, median, quiet, type Spread, spread, stamp } from './rounds.ts';
import { type Fixture, fixture, MONEY_WRITES, type Row, rowsOf } from './rows.ts';

/** Seconds each side is offered the rate before its timed part, not counted. */
const WARMUP_S = 1;

export interface FixedRateSample {
  round: number;
  /** The raw transfer's closed-loop rate just before (transfers a second). */
  rawRate: number;
  /** The rate both were offered: half of rawRate. */
  rate: number;
  raw: OpenLoopResult;
  row: OpenLoopResult;
  /** row.p99 / raw.p99. */
  p99Ratio: number;
}

/**
 * One round of a money write at a fixed rate: the raw transfer's rate measured, what the row acts
 * on made (enough for the rate over warm-up and duration), the raw transfer offered half that
 * rate, then the row.
 */
export async function fixedRateRound(
  row: Row,
  f: Fixture,
  o: { rawDatabaseUrl: string; durationS: number; yardstickS: number; round: number },
): Promise<FixedRateSample> {
  const rawRate = await rawYardstick(o.rawDatabaseUrl, o.yardstickS);
  const rate = Math.max(1, Math.round(rawRate / 2));
  const needed = Math.ceil(rate * (WARMUP_S + o.durationS) * 1.05) + 50;
  const next = await row.source!(f, needed);
  if (row.consumes) await quiet(f);
  const raw = await rawTransferOpenLoop(o.rawDatabaseUrl, { rate, durationS: o.durationS, warmupS: WARMUP_S });
  const result = await openLoop(row.name, {
    url: f.coffer.url,
    headers: f.auth,
    rate,
    durationS: o.durationS,
    warmupS: WARMUP_S,
    next,
  });
  await quiet(f);
  return { round: o.round, rawRate, rate, raw, row: result, p99Ratio: result.p99 / Math.max(0.01, raw.p99) };
}

export interface FixedRateSummary {
  rate: number;
  row: { p50: number; p99: number; p999: number };
  raw: { p50: number; p99: number; p999: number };
  p99Ratio: Spread;
  /** Over every round: answers other than 2xx, failed requests and requests that could not be sent. */
  failed: number;
}

export function summarizeFixedRate(samples: readonly FixedRateSample[]): FixedRateSummary {
  const med = (pick: (s: FixedRateSample) => number) => Math.round(median(samples.map(pick)) * 100) / 100;
  return {
    rate: Math.round(median(samples.map((s) => s.rate))),
    row: { p50: med((s) => s.row.p50), p99: med((s) => s.row.p99), p999: med((s) => s.row.p999) },
    raw: { p50: med((s) => s.raw.p50), p99: med((s) => s.raw.p99), p999: med((s) => s.raw.p999) },
    p99Ratio: spread(samples.map((s) => s.p99Ratio)),
    failed: samples.reduce((n, s) => n + s.row.non2xx + s.row.errors + s.row.unsent, 0),
  };
}

export async function main(args: string[]): Promise<void> {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      rows: { type: 'string', default: MONEY_WRITES.join(',') },
    },
  });
  const rounds = Number(values.rounds);
  const durationS = Number(values.duration);
  const rows = rowsOf(values.rows!);
  const unfit = rows.find((r) => !r.source);
  if (unfit) throw new Error(`${unfit.key} has no fixed-rate form`);
  const coffer = await startCoffer({ databaseUrl: await freshDatabase(PG_SERVER, 'coffer_fixed') });
  const samples = new Map<Row, FixedRateSample[]>(rows.map((r) => [r, []]));
  try {
    const f = await fixture(coffer);
    const rawDatabaseUrl = await freshDatabase(PG_SERVER, 'coffer_fixed_raw');
    for (let round = 1; round <= rounds; round++)
      for (const row of rows) {
        const s = await fixedRateRound(row, f, { rawDatabaseUrl, durationS, yardstickS: 3, round });
        samples.get(row)!.push(s);
        process.stderr.write(
          `round ${round}/${rounds} ${row.key} at ${s.rate}/s: p99 ${s.row.p99} ms, raw transfer's ${s.raw.p99} ms\n`,
        );
      }
  } finally {
    await coffer.stop();
    await dropDatabases();
  }
  const summaries = rows.map((r) => ({ key: r.key, name: r.name, summary: summarizeFixedRate(samples.get(r)!) }));
  process.stdout.write(
    `\n### fixed rate: ${rounds} rounds, ${durationS} s a row at half the raw transfer's rate\n\n${fixedRateTable(summaries)}\n\n`,
  );
  await writeResults(stamp('fixed-rate'), {
    kind: 'fixed-rate',
    machine: await machineFacts(PG_SERVER),
    settings: { rounds, durationS, warmupS: WARMUP_S },
    rows: summaries.map((s) => ({ ...s, samples: samples.get(rows.find((r) => r.key === s.key)!) })),
  });
}
