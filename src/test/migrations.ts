// Migration tests: a database brought up to just before one migration, so that the test can hold
// rows of the earlier schema and then run the rest of the way (runMigrations with the real folder).
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDatabase, runMigrations, type Database } from '../db/open.ts';
import { freshDatabaseUrl } from './harness.ts';

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

/**
 * A fresh database for a migration test file, not migrated: opened before its tests, closed and
 * its scratch folder removed after them. `upTo(tag)` runs every migration before the one `tag`
 * matches (migrateUpTo) and returns the database.
 */
export function migrationTestDatabase(name: string): {
  readonly database: Database;
  upTo(tag: RegExp): Promise<Database>;
} {
  let dir: string;
  let database: Database | undefined;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), `coffer-${name}-migration-`));
    database = await openDatabase({
      databaseUrl: await freshDatabaseUrl(),
      dataDir: dir,
      poolSize: 2,
      migrate: false,
      inMemory: true,
    });
  });
  after(async () => {
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get database() {
      return database!;
    },
    async upTo(tag) {
      await migrateUpTo(database!, tag, dir);
      return database!;
    },
  };
}
