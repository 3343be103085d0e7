// The error reference in docs/errors.md lists exactly the catalogue's codes and statuses.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { ERRORS } from './errors.ts';

test('docs/errors.md matches the error catalogue (regenerate with npm run docs:errors)', async () => {
  const doc = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const documented = new Map([...doc.matchAll(/^\| (\d{3}) \| `(\w+)` \|/gm)].map((m) => [m[2]!, Number(m[1])]));
  assert.deepEqual(
    Object.fromEntries([...documented].sort()),
    Object.fromEntries(
      Object.entries(ERRORS)
        .map(([code, d]) => [code, d.status])
        .sort(),
    ),
  );
});
