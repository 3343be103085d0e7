// The report's results file (bench/report.ts writes it), Coffer's speed targets judged on it,
// and its tables in markdown: printed by the report, and written into docs/benchmarks.md by
// scripts/bench-doc.ts. The targets live here only; docs/benchmarks.md states them in words.
import type { FixedRateSample, FixedRateSummary } from './fixed-rate.ts';
import type { Machine, RowSummary, Sample } from './rounds.ts';
import type { Yardstick } from './rows.ts';

/** A ratio as a percentage with one decimal. */
export const pct = (ratio: number) => `${(100 * ratio).toFixed(1)}%`;

export type Section = 'users' | 'money' | 'checkout' | 'lists';

export interface ReportRow {
  key: string;
  name: string;
  section: Section;
  yardstick: Yardstick;
  samples: Sample[];
  summary: RowSummary;
}

export interface ReportFixedRow {
  key: string;
  name: string;
  samples: FixedRateSample[];
  summary: FixedRateSummary;
}

export interface Report {
  kind: 'report';
  createdAt: string;
  machine: Machine;
  settings: {
    rounds: number;
    durationS: number;
    yardstickS: number;
    listRows: number;
    quick: boolean;
    connections: number;
  };
  rows: ReportRow[];
  fixedRate: ReportFixedRow[];
}

export interface Verdict {
  target: string;
  /** The target in a table's cell. */
  short: string;
  met: boolean;
}

/** At least `share` of the yardstick's rate beside it (the median of the rounds' ratios). */
const atLeast = (row: ReportRow, share: number, of: string): Verdict => {
  const figure = pct(share).replace('.0%', '%');
  return { target: `at least ${figure} of the ${of}`, short: `≥ ${figure}`, met: row.summary.ratio.median >= share };
};

/** The target a closed-loop row is held to, if any. */
export function verdictOf(row: ReportRow, report: Report): Verdict | undefined {
  if (row.key === 'user') return atLeast(row, 0.25, 'bare route');
  if (row.key === 'balance') return atLeast(row, 0.2, 'bare route');
  if (row.key === 'deposits') return atLeast(row, 0.9, 'raw transfer');
  if (row.key === 'checkout') return atLeast(row, 0.25, 'raw transfer');
  if (row.section === 'lists') {
    const user = report.rows.find((r) => r.key === 'user');
    const ceiling = user ? 3 * user.summary.p99 : Number.NaN;
    const share = atLeast(row, 0.08, 'bare route');
    return {
      target: `${share.target}, p99 at most 3× GET user's (${ceiling} ms)`,
      short: `${share.short}, p99 ≤ ${ceiling} ms`,
      met: share.met && row.summary.p99 <= ceiling,
    };
  }
  return undefined;
}

/** Every money write at the fixed rate: its p99 at most 3× the raw transfer's at the same rate. */
export const fixedVerdict = (row: ReportFixedRow): Verdict => ({
  target: 'p99 at most 3× the raw transfer’s',
  short: '≤ 3×',
  met: row.summary.p99Ratio.median <= 3,
});

const mark = (v: Verdict | undefined) => (v ? `${v.short}: ${v.met ? '**met**' : '**not met**'}` : '');
const n = (v: number) => Math.round(v).toLocaleString('en-US');
const YARDSTICK = { bare: 'bare route', raw: 'raw transfer' };

/** A section's closed-loop rows, each beside its yardstick, with its target. */
export function sectionTable(report: Report, section: Section): string {
  const rows = report.rows.filter((r) => r.section === section);
  return [
    '| row | req/s | yardstick beside it, req/s | of it: median (min–max) | p50 ms | p99 ms | failed | target |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map((r) => {
      const s = r.summary;
      return `| ${r.name} | ${n(s.rps)} | ${YARDSTICK[r.yardstick]}: ${n(s.yardstick)} | ${pct(s.ratio.median)} (${pct(s.ratio.min)}–${pct(s.ratio.max)}) | ${s.p50} | ${s.p99} | ${s.failed} | ${mark(verdictOf(r, report))} |`;
    }),
  ].join('\n');
}

/** The fixed-rate rows as a markdown table, each beside the raw transfer at the same rate. */
export function fixedRateTable(
  rows: { name: string; summary: FixedRateSummary; verdict?: string }[],
  withTarget = false,
): string {
  const ms = (v: { p50: number; p99: number; p999: number }) =>
    [v.p50, v.p99, v.p999].map((x) => x.toFixed(1)).join(' / ');
  return [
    `| money write | offered /s | p50 / p99 / p99.9 ms | raw transfer at that rate: p50 / p99 / p99.9 ms | p99 ÷ raw p99: median (min–max) | failed |${withTarget ? ' target |' : ''}`,
    `|---|---:|---:|---:|---:|---:|${withTarget ? '---|' : ''}`,
    ...rows.map(
      ({ name, summary: s, verdict }) =>
        `| ${name} | ${s.rate.toLocaleString('en-US')} | ${ms(s.row)} | ${ms(s.raw)} | ${s.p99Ratio.median.toFixed(2)} (${s.p99Ratio.min.toFixed(2)}–${s.p99Ratio.max.toFixed(2)}) | ${s.failed} |${withTarget ? ` ${verdict ?? ''} |` : ''}`,
    ),
  ].join('\n');
}

/** The fixed-rate rows, each beside the raw transfer at the same rate, with the target. */
export function fixedSectionTable(report: Report): string {
  return fixedRateTable(
    report.fixedRate.map((r) => ({ name: r.name, summary: r.summary, verdict: mark(fixedVerdict(r)) })),
    true,
  );
}

/** The machine and the run's settings, in a sentence. */
export function machineLine(report: Report): string {
  const m = report.machine;
  const s = report.settings;
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB RAM, ${m.os}, Node ${m.node}, PostgreSQL ${m.postgres}; server, PostgreSQL and load generator share the cores. Medians of ${s.rounds} round${s.rounds === 1 ? '' : 's'}, ${s.durationS} s a row after ${s.yardstickS} s of its yardstick, ${s.connections} connections; lists on ${n(s.listRows)} rows of each kind.`;
}

/** Whether every target the report judges is met, and how many are not. */
export function unmet(report: Report): string[] {
  return [
    ...report.rows.flatMap((r) => {
      const v = verdictOf(r, report);
      return v && !v.met ? [`${r.name}: ${v.target}`] : [];
    }),
    ...report.fixedRate.flatMap((r) =>
      fixedVerdict(r).met ? [] : [`${r.name} at a fixed rate: ${fixedVerdict(r).target}`],
    ),
  ];
}
