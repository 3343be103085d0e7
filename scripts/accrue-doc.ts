// Writes docs/accrue-compatibility.md: Accrue's 82 operations and how Coffer serves each, from the
// table the contract test uses (src/test/accrue/contract.ts). `npm run docs:accrue`.
import { writeFileSync } from 'node:fs';
import { renderCompatibilityDoc } from '../src/test/accrue/contract.ts';

writeFileSync(new URL('../docs/accrue-compatibility.md', import.meta.url), renderCompatibilityDoc());
