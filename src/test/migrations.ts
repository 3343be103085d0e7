// Migration tests: a database brought up to just before one migration, so that the test can hold
// rows of the earlier schema and then run the rest of the way (runMigrations with the real folder).
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runMigrations, type Database } from '../db/open.ts';

const MIGRATIONS = fileURLToPath(new URL('../db/migrations', import.meta.url));

/** Runs every migration before the one whose tag matches `tag`, from a copy of the folder (in `scratch`) whose journal stops short of it. */
export async function migrateUpTo(database: Database, tag: RegExp, scratch: string): Promise<void> {
  const earlier = path.join(scratch, 'earlier');
  await cp(MIGRATIONS, earlier, { recursive: true });
  const journalFile = path.join(earlier, 'meta', '_journal.json');
  const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => tag.test(e.tag));
  assert.ok(at > 0, 'the migration is in the journal');
  await writeFile(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  await runMigrations(database, earlier);
}
