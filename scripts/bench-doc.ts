// Rewrites the generated parts of docs/benchmarks.md (the machine, and one table per scenario
// with its targets met or not) from a report's results file (npm run docs:bench):
//   npm run docs:bench [-- --from bench/results/report-<time>.json] [--doc <file>] [--allow-quick]
// By default the latest report (bench/results/latest-report.json, from `npm run bench -- report`).
// A report of fewer than five rounds, or a --quick one, decides nothing and is refused unless
// --allow-quick (for checking this script).
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fixedSectionTable, machineLine, type Report, sectionTable } from '../bench/report-format.ts';

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    doc: { type: 'string' },
    'allow-quick': { type: 'boolean', default: false },
  },
});
const from = values.from ?? fileURLToPath(new URL('../bench/results/latest-report.json', import.meta.url));
const docFile = values.doc ?? fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

const report = JSON.parse(await readFile(from, 'utf8').catch(() => '{}')) as Report;
if (report.kind !== 'report') throw new Error(`${from} is not a report: run \`npm run bench -- report\` first`);
if ((report.settings.quick || report.settings.rounds < 5) && !values['allow-quick'])
  throw new Error(
    `${from} is a check of the tools (${report.settings.quick ? '--quick' : `${report.settings.rounds} rounds`}), not a measurement: run \`npm run bench -- report\` (five rounds or more, without --quick)`,
  );

const parts: Record<string, string> = {
  machine: machineLine(report),
  users: sectionTable(report, 'users'),
  money: sectionTable(report, 'money'),
  checkout: sectionTable(report, 'checkout'),
  lists: sectionTable(report, 'lists'),
  'fixed-rate': fixedSectionTable(report),
};
let doc = await readFile(docFile, 'utf8');
for (const [part, text] of Object.entries(parts)) {
  const start = `<!-- bench:${part}:start -->`;
  const end = `<!-- bench:${part}:end -->`;
  const a = doc.indexOf(start);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${docFile} lacks the markers ${start} … ${end}`);
  doc = `${doc.slice(0, a + start.length)}\n${text}\n${doc.slice(b)}`;
}
await writeFile(docFile, doc);
process.stdout.write(`${docFile}: tables from ${from}\n`);
