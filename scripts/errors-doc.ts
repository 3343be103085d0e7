// Regenerates the table in docs/errors.md from the error catalogue (npm run docs:errors).
import { readFile, writeFile } from 'node:fs/promises';
import { ERRORS } from '../src/http/errors.ts';

const file = new URL('../docs/errors.md', import.meta.url);
const start = '<!-- errors:start -->';
const end = '<!-- errors:end -->';
const rows = Object.entries(ERRORS)
  .sort(([a, x], [b, y]) => x.status - y.status || a.localeCompare(b))
  .map(([code, d]) => `| ${d.status} | \`${code}\` | ${d.title} | ${d.detail} |`);
const table = ['| status | code | title | default detail |', '|---:|---|---|---|', ...rows].join('\n');
const doc = await readFile(file, 'utf8');
const a = doc.indexOf(start);
const b = doc.indexOf(end);
if (a < 0 || b < 0) throw new Error('docs/errors.md lacks the errors markers');
await writeFile(file, `${doc.slice(0, a + start.length)}\n${table}\n${doc.slice(b)}`);
