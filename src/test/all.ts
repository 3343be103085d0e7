// The whole suite in one process, so every test file shares one database (see harness.ts).
// `npm test` runs this; a single file also runs alone: node --import tsx --test <file>.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The harness leaves dropping the run's databases to this file (below), not to the first file
// that imports it.
process.env.COFFER_TEST_SUITE = '1';
const only = process.env.TEST_FILTER; // e.g. TEST_FILTER=users npm test
// The server's tests, then the client SDK's (which start a real server), then the chaos
// checker's self-test and the replays of the seeds that found bugs (chaos/results holds
// campaign outputs, not tests), then `npm run example`'s.
for (const dir of ['..', '../../packages/client/test', '../../chaos', '../../examples']) {
  const root = fileURLToPath(new URL(dir, import.meta.url));
  const files = (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.test.ts') && !f.startsWith('results') && (!only || path.join(dir, f).includes(only)))
    .sort();
  for (const f of files) await import(pathToFileURL(path.join(root, f)).href);
}
// Last: the responses all of the above received, against the OpenAPI document.
if (!only) await import('./openapi-responses.ts');
// Registered after every file's tests, so that it runs after all of them.
const { closeTestDatabase } = await import('./harness.ts');
after(closeTestDatabase);
