// The whole suite in one process, so every test file shares one database (see harness.ts).
// `npm test` runs this; a single file also runs alone: node --import tsx --test <file>.
// progress.mjs, npm test's second reporter, prints each file finished on stderr.
import { after } from 'node:test';
import { pathToFileURL } from 'node:url';
import { suiteFiles } from './files.ts';

// The harness leaves dropping the run's databases to this file (below), not to the first file
// that imports it.
process.env.COFFER_TEST_SUITE = '1';
// e.g. TEST_FILTER=users npm test
for (const f of suiteFiles()) await import(pathToFileURL(f).href);
// Registered after every file's tests, so that it runs after all of them.
const { closeTestDatabase } = await import('./harness.ts');
after(closeTestDatabase);
