// PGlite has no autovacuum, and a PostgreSQL server may have it off: Coffer then runs
// maintainTables as a job (db/maintenance.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { createTestApp, createUser, dbKind, testDatabase, type Merchant, type TestApp } from '../test/harness.ts';
import { maintainTables, needsTableMaintenance } from './maintenance.ts';
import { rowsOf } from './open.ts';

interface TableStats {
  live: number;
  changed: number;
  analyzed: Date | null;
}

/**
 * Reads until `done` holds, at most 10 s: the counters reach pg_stat_user_tables a moment after
 * the transactions that made them.
 */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let tries = 0; !done(value) && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await read();
  }
  return value;
}

/** Whether a table's last VACUUM came after `start`. */
const vacuumedSince =
  (start: Date | null) =>
  (now: { vacuumed: Date | null }): boolean =>
    now.vacuumed !== null && (start === null || now.vacuumed > start);

async function usersStats(t: TestApp): Promise<TableStats> {
  const [row] = rowsOf<{ live: string | number; changed: string | number; analyzed: string | Date | null }>(
    await t.ctx.db.execute(
      sql`select n_live_tup as live, n_mod_since_analyze as changed, greatest(last_analyze, last_autoanalyze) as analyzed from pg_stat_user_tables where relname = 'users'`,
    ),
  );
  return {
    live: Number(row!.live),
    changed: Number(row!.changed),
    analyzed: row!.analyzed === null ? null : new Date(row!.analyzed),
  };
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
    const stats = await until(
      () => usersStats(t),
      (s) => s.changed > 50 + 0.1 * s.live,
    );
    assert.ok(stats.changed > 50 + 0.1 * stats.live, `users changed ${stats.changed} of ${stats.live}`);
    const [server] =
      t.ctx.database.kind === 'postgres'
        ? rowsOf<{ autovacuum: string }>(await t.ctx.db.execute(sql`show autovacuum`))
        : [];
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

  test("a table only inserted into is vacuumed once its inserts pass autovacuum's insert threshold (1,000 + 20% of its rows)", async () => {
    // A table of the test's own, as the append-only logs are used: other tests' inserts into
    // those (the webhook queue's, say) reach the counters up to seconds after they commit, from
    // their connections' pending statistics, and would count as inserts since the VACUUM here.
    await t.ctx.db.execute(sql`create table maintenance_inserts_probe (id uuid primary key, at timestamptz not null)`);
    const probe = async () => {
      const [row] = rowsOf<{ inserted: string | number; vacuumed: string | Date | null }>(
        await t.ctx.db.execute(
          sql`select n_ins_since_vacuum as inserted, greatest(last_vacuum, last_autovacuum) as vacuumed from pg_stat_user_tables where relname = 'maintenance_inserts_probe'`,
        ),
      );
      return { inserted: Number(row!.inserted), vacuumed: row!.vacuumed === null ? null : new Date(row!.vacuumed) };
    };
    /** Inserts `n` rows and waits until the counters show them. */
    const insert = async (n: number) => {
      const before = (await probe()).inserted;
      await t.ctx.db.execute(
        sql`insert into maintenance_inserts_probe select gen_random_uuid(), now() from generate_series(1, ${n})`,
      );
      await until(probe, (q) => q.inserted >= before + n);
    };
    // Where autovacuum is on, the job is not registered (the test above); the function is the job.
    const registered = await needsTableMaintenance(t.ctx.database);
    const maintain = () => (registered ? t.ctx.jobs.runOnce('table-maintenance') : maintainTables(t.ctx.db));
    try {
      await t.ctx.db.execute(sql`vacuum maintenance_inserts_probe`);
      const start = await until(probe, (q) => q.vacuumed !== null);
      await insert(600); // 600 of a threshold of 1,000 (no rows at the VACUUM)
      await maintain(); // analyzes it: 600 rows, so a threshold of 1,120 from now on
      assert.deepEqual((await probe()).vacuumed, start.vacuumed, 'not vacuumed below the threshold');
      await insert(1_000); // 1,600 of 1,120
      await maintain();
      const now = await until(probe, vacuumedSince(start.vacuumed));
      assert.ok(now.vacuumed && (!start.vacuumed || now.vacuumed > start.vacuumed), 'vacuumed past the threshold');
      assert.equal(now.inserted, 0, 'its insert count starts again');
    } finally {
      await t.ctx.db.execute(sql`drop table maintenance_inserts_probe`);
    }
  });
});

describe('the webhook queue is vacuumed every few seconds once deliveries that ended leave dead rows in it', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const queueStats = async () => {
    const [row] = rowsOf<{ dead: string | number; vacuumed: string | Date | null }>(
      await t.ctx.db.execute(
        sql`select n_dead_tup as dead, greatest(last_vacuum, last_autovacuum) as vacuumed from pg_stat_user_tables where relname = 'event_delivery_queue'`,
      ),
    );
    return { dead: Number(row!.dead), vacuumed: row!.vacuumed === null ? null : new Date(row!.vacuumed) };
  };
  /** Puts `n` rows in the queue and takes them out again, as `n` deliveries that ended would. */
  const endDeliveries = async (n: number) => {
    const client = randomUUID();
    await t.ctx.db.execute(sql`insert into event_delivery_queue (id, event_id, client_id, webhook_id, next_attempt_at)
      select gen_random_uuid(), gen_random_uuid(), ${client}, gen_random_uuid(), now() + interval '1 day' from generate_series(1, ${n})`);
    await t.ctx.db.execute(sql`delete from event_delivery_queue where client_id = ${client}`);
  };

  test('at most 1,000 dead rows: not vacuumed; more: vacuumed by the job, on every database', async () => {
    await t.ctx.jobs.runOnce('webhook-queue-vacuum');
    const start = await queueStats();
    await endDeliveries(400);
    assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 0);
    assert.deepEqual((await queueStats()).vacuumed, start.vacuumed);
    await endDeliveries(1_200);
    await until(queueStats, (q) => q.dead > 1_000);
    assert.ok((await queueStats()).dead > 1_000);
    assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 1);
    const now = await until(queueStats, vacuumedSince(start.vacuumed));
    assert.ok(now.vacuumed && (!start.vacuumed || now.vacuumed > start.vacuumed), 'vacuumed');
    assert.ok(now.dead < 1_000, `${now.dead} dead rows left`);
  });

  test('dead rows a long transaction still sees are not vacuumed again every few seconds, only once more die', {
    skip: dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)',
  }, async () => {
    const { url } = await testDatabase();
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    try {
      await t.ctx.jobs.runOnce('webhook-queue-vacuum');
      await reader.query('begin isolation level repeatable read');
      await reader.query('select count(*) from event_delivery_queue'); // its snapshot keeps every row deleted from now on
      await endDeliveries(1_200);
      await until(queueStats, (q) => q.dead > 1_000);
      assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 1);
      assert.ok((await queueStats()).dead >= 1_200, 'nothing removable yet');
      assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 0, 'not again for the same rows');
      await endDeliveries(1_200);
      await until(queueStats, (q) => q.dead > 2_200);
      assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 1, 'more died');
      await reader.query('commit');
      // Another process's VACUUM removes them all: the count starts again from none left.
      await t.ctx.db.execute(sql`vacuum event_delivery_queue`);
      assert.ok((await queueStats()).dead < 1_000, 'all removed once the transaction ended');
      await endDeliveries(1_100);
      await until(queueStats, (q) => q.dead > 1_000);
      assert.equal(await t.ctx.jobs.runOnce('webhook-queue-vacuum'), 1);
    } finally {
      await reader.end();
    }
  });
});
