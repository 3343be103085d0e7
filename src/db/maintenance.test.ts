// PGlite has no autovacuum, and a PostgreSQL server may have it off: Coffer then runs
// maintainTables as a job (db/maintenance.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createTestApp, createUser, type Merchant, type TestApp } from '../test/harness.ts';
import { maintainTables, needsTableMaintenance } from './maintenance.ts';
import { rowsOf } from './open.ts';

interface TableStats {
  live: number;
  changed: number;
  analyzed: Date | null;
}

async function usersStats(t: TestApp): Promise<TableStats> {
  const [row] = rowsOf<{ live: string | number; changed: string | number; analyzed: string | Date | null }>(
    await t.ctx.db.execute(sql`select n_live_tup as live, n_mod_since_analyze as changed, greatest(last_analyze, last_autoanalyze) as analyzed from pg_stat_user_tables where relname = 'users'`),
  );
  return { live: Number(row!.live), changed: Number(row!.changed), analyzed: row!.analyzed === null ? null : new Date(row!.analyzed) };
}

describe('table maintenance where nothing else vacuums (PGlite; PostgreSQL with autovacuum off)', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test("a table changed past autovacuum's threshold (50 + 10% of its rows) is analyzed by the job, registered on PGlite and where autovacuum is off", async () => {
    const [users] = rowsOf<{ n: string | number }>(await t.ctx.db.execute(sql`select count(*) as n from users`));
    for (let i = 0; i < 60 + Math.ceil(Number(users!.n) / 10); i++) await createUser(t, m);
    // The counters reach pg_stat_user_tables a moment after the transactions that made them.
    let stats = await usersStats(t);
    for (let tries = 0; stats.changed <= 50 + 0.1 * stats.live && tries < 100; tries++) {
      await new Promise((done) => setTimeout(done, 100));
      stats = await usersStats(t);
    }
    assert.ok(stats.changed > 50 + 0.1 * stats.live, `users changed ${stats.changed} of ${stats.live}`);
    const [server] = t.ctx.database.kind === 'postgres' ? rowsOf<{ autovacuum: string }>(await t.ctx.db.execute(sql`show autovacuum`)) : [];
    const registered = t.ctx.database.kind === 'pglite' || server!.autovacuum === 'off';
    assert.equal(await needsTableMaintenance(t.ctx.database), registered);
    if (!registered) {
      // Autovacuum does this there: no job; the function, called here, still works.
      await assert.rejects(t.ctx.jobs.runOnce('table-maintenance'), /no job/);
      await maintainTables(t.ctx.db);
    } else assert.ok((await t.ctx.jobs.runOnce('table-maintenance')) >= 1);
    const after = await usersStats(t);
    assert.ok(after.analyzed && (!stats.analyzed || after.analyzed > stats.analyzed), 'users analyzed');
    assert.ok(after.changed < stats.changed, 'its change count starts again');
  });
});
