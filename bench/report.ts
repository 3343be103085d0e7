// npm run bench -- report [--rounds N] [--duration S] [--quick] [--list-rows N]
// Every figure Coffer's targets are judged on (docs/benchmarks.md), as medians of interleaved
// rounds beside the yardsticks (rounds.ts): GET user and wallet balance, the lists' first pages
// and page[offset]=1000 on 1,000,000 rows of each kind (lists.ts), each money write's
// closed-loop rate and the checkout flow's as ratios of the raw transfer, and each money write at
// a fixed rate beside the raw transfer at the same rate (fixed-rate.ts). Writes
// bench/results/report-<time>.json and bench/results/latest-report.json (git ignores both), from
// which `npm run docs:bench` writes docs/benchmarks.md's tables. `--quick` checks the tools:
// 10,000 list rows (or --list-rows) and 2-second yardstick runs; docs:bench refuses its report.
import { parseArgs } from 'node:util';
import { dropDatabases, freshDatabase, PG_SERVER, startCoffer, writeResults, type CofferServer } from './lib.ts';
import { LIST_ROWS, seededLists } from './lists.ts';
import { type FixedRateSample, fixedRateRound, summarizeFixedRate } from './fixed-rate.ts';
import {
  fixedSectionTable,
  machineLine,
  pct,
  type Report,
  type ReportRow,
  type Section,
  sectionTable,
  unmet,
} from './report-format.ts';
import { besideYardstick, machineFacts, quiet, type Sample, stamp, summarize, Yardsticks } from './rounds.ts';
import { closedLoop, type Fixture, fixture, MONEY_WRITES, reads, type Row, rowsOf } from './rows.ts';

/** The closed-loop rows of each section, by row key (rows.ts). */
const SECTIONS: [Section, string][] = [
  ['users', 'user'],
  ['money', 'deposits,withdrawals,payments,balance'],
  ['checkout', 'checkout,authorize,capture,cancel,refund'],
];

export async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '5' },
      quick: { type: 'boolean', default: false },
      'list-rows': { type: 'string' },
    },
  });
  const rounds = Number(values.rounds);
  const durationS = Number(values.duration);
  const quick = values.quick!;
  const listRows = Number(values['list-rows'] ?? (quick ? 10_000 : LIST_ROWS));
  const yardstickS = quick ? 2 : 3;
  const servers: CofferServer[] = [];
  let yardsticks: Yardsticks | undefined;
  const rows: { row: Row; section: Section; target: Fixture; samples: Sample[] }[] = [];
  const fixed = rowsOf(MONEY_WRITES.join(',')).map((row) => ({ row, samples: [] as FixedRateSample[] }));
  try {
    // The lists' database first: seeding a million rows of each kind takes minutes and the cores.
    const lists = await seededLists(listRows);
    servers.push(lists.coffer);
    const coffer = await startCoffer({ databaseUrl: await freshDatabase(PG_SERVER, 'coffer_report') });
    servers.push(coffer);
    const f = await fixture(coffer);
    for (const [section, keys] of SECTIONS)
      for (const row of rowsOf(keys)) rows.push({ row, section, target: f, samples: [] });
    const listsTarget: Fixture = { ...lists, wallets: [], spenders: [], userIds: [] };
    for (const l of lists.rows.filter((r) => r.kind !== 'filter')) {
      const row: Row = {
        key: `list ${l.name}`,
        name: `GET ${l.name}`,
        yardstick: 'bare',
        source: reads(() => [l.path]),
      };
      rows.push({ row, section: 'lists', target: listsTarget, samples: [] });
    }
    yardsticks = await Yardsticks.start(await freshDatabase(PG_SERVER, 'coffer_report_raw'), yardstickS);
    const rawDatabaseUrl = await freshDatabase(PG_SERVER, 'coffer_report_fixed_raw');
    for (let round = 1; round <= rounds; round++) {
      for (const r of rows) {
        const run = await closedLoop(r.row, r.target, durationS);
        if (r.row.consumes) await quiet(r.target);
        const s = await besideYardstick(yardsticks, r.row.yardstick, round, run, r.target);
        r.samples.push(s);
        process.stderr.write(
          `round ${round}/${rounds} ${r.row.name}: ${s.result.rps.toLocaleString('en-US')}/s, ${pct(s.ratio)} of its yardstick's ${s.yardstick.toLocaleString('en-US')}/s\n`,
        );
      }
      for (const x of fixed) {
        const s = await fixedRateRound(x.row, f, { rawDatabaseUrl, durationS, yardstickS, round });
        x.samples.push(s);
        process.stderr.write(
          `round ${round}/${rounds} ${x.row.name} at ${s.rate}/s: p99 ${s.row.p99} ms, the raw transfer's ${s.raw.p99} ms\n`,
        );
      }
    }
  } finally {
    for (const s of servers) await s.stop();
    await yardsticks?.stop();
    await dropDatabases();
  }
  const report: Report = {
    kind: 'report',
    createdAt: new Date().toISOString(),
    machine: await machineFacts(PG_SERVER),
    settings: { rounds, durationS, yardstickS, listRows, quick, connections: 50 },
    rows: rows.map(
      (r): ReportRow => ({
        key: r.row.key,
        name: r.row.name,
        section: r.section,
        yardstick: r.row.yardstick,
        samples: r.samples,
        summary: summarize(r.samples),
      }),
    ),
    fixedRate: fixed.map((x) => ({
      key: x.row.key,
      name: x.row.name,
      samples: x.samples,
      summary: summarizeFixedRate(x.samples),
    })),
  };
  const out = [`### report${quick ? ' (--quick: not for the docs)' : ''}`, '', machineLine(report)];
  for (const [section] of [...SECTIONS, ['lists']] as [Section][])
    out.push('', `#### ${section}`, '', sectionTable(report, section));
  out.push('', '#### fixed rate', '', fixedSectionTable(report));
  const missed = unmet(report);
  out.push(
    '',
    missed.length === 0 ? 'Every target met.' : `Targets not met:\n${missed.map((m) => `- ${m}`).join('\n')}`,
  );
  process.stdout.write(`\n${out.join('\n')}\n\n`);
  await writeResults(stamp('report'), report);
  await writeResults('latest-report', report);
}
