// Writes docs/accrue-compatibility.md (Accrue's 82 operations and how Coffer serves each) and the
// summary table in README.md, from the table the contract test uses (src/test/accrue/contract.ts).
// `npm run docs:accrue`.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderCompatibilityDoc, withCompatibilitySummary } from '../src/test/accrue/contract.ts';

writeFileSync(new URL('../docs/accrue-compatibility.md', import.meta.url), renderCompatibilityDoc());
const readme = new URL('../README.md', import.meta.url);
writeFileSync(readme, withCompatibilitySummary(readFileSync(readme, 'utf8')));
