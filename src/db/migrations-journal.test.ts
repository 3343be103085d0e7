// Drizzle's migrator applies a migration only if its journal entry's `when` is later than that of
// the last migration the database has applied: an entry dated earlier than the one before it
// would be skipped on every database already migrated, and on a new one too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

test("each migration's journal entry is dated later than the one before it", () => {
  const journal = JSON.parse(readFileSync(new URL('./migrations/meta/_journal.json', import.meta.url), 'utf8')) as {
    entries: { idx: number; when: number; tag: string }[];
  };
  for (const [i, e] of journal.entries.entries()) {
    assert.equal(e.idx, i, e.tag);
    if (i > 0)
      assert.ok(e.when > journal.entries[i - 1]!.when, `${e.tag} is dated before ${journal.entries[i - 1]!.tag}`);
  }
});
