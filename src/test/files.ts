// The test files of the whole suite, in the order src/test/all.ts runs them; the progress
// reporter (progress.mjs) counts against the same list.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The server's tests, then the client SDK's (which start a real server), then the chaos
 * checker's self-test and the replays of the seeds that found bugs (chaos/results holds
 * campaign outputs, not tests), then `npm run example`'s. `only` (TEST_FILTER) keeps the files
 * whose path contains it.
 */
export function suiteFiles(only = process.env.TEST_FILTER): string[] {
  const out: string[] = [];
  for (const dir of ['..', '../../packages/client/test', '../../chaos', '../../examples']) {
    const root = fileURLToPath(new URL(dir, import.meta.url));
    const files = (readdirSync(root, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.test.ts') && !f.startsWith('results') && (!only || path.join(dir, f).includes(only)))
      .sort();
    for (const f of files) out.push(path.join(root, f));
  }
  // Last: the responses all of the above received, against the OpenAPI document.
  if (!only) out.push(fileURLToPath(new URL('./openapi-responses.ts', import.meta.url)));
  return out;
}
