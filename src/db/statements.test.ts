// Drizzle's statements are prepared by name on PostgreSQL (nameRepeatedStatements): a list page
// run twice on one connection is parsed and planned once, and a pool marked for a pooler that
// cannot keep prepared statements sends them unnamed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createTestApp, createUser, dbKind, freshDatabaseUrl, type Merchant, type TestApp } from '../test/harness.ts';
import { openDatabase, rowsOf, type Database } from './open.ts';
import { claimDueDeliveries } from '../modules/events/sql.ts';
import { run, statement } from './statements.ts';

const skip = dbKind !== 'postgres' ? 'node-postgres statement names: runs in the PostgreSQL pass' : false;

/**
 * The statements prepared on both of the pool's connections that read the users table: two
 * transactions, each holding one connection until both have one, each reads its own session's.
 */
async function preparedUserReads(database: Database): Promise<{ name: string; statement: string }[]> {
  let arrived = 0;
  let bothIn: () => void = () => {};
  const both = new Promise<void>((r) => (bothIn = r));
  const read = () =>
    database.db.transaction(async (tx) => {
      if (++arrived === 2) bothIn();
      await both;
      return rowsOf<{ name: string; statement: string }>(
        await tx.execute(
          sql`select name, statement from pg_prepared_statements where statement like '%from "users"%' and statement not like '%pg_prepared_statements%'`,
        ),
      );
    });
  return (await Promise.all([read(), read()])).flat();
}

for (const preparedStatements of [true, false]) {
  describe(`Drizzle's statements with preparedStatements ${preparedStatements}`, { skip }, () => {
    let database: Database;
    let t: TestApp;
    let m: Merchant;
    before(async () => {
      // Two connections, so the test can read what every connection prepared.
      database = await openDatabase({
        databaseUrl: (await freshDatabaseUrl())!,
        dataDir: '',
        poolSize: 2,
        preparedStatements,
      });
      t = await createTestApp({ database });
      m = await t.createMerchant();
      await createUser(t, m);
      await createUser(t, m);
    });
    after(async () => {
      await t.close();
      await database.close();
    });

    test(
      preparedStatements
        ? 'a list page is prepared once by a name from its text, and answers as before'
        : 'no statement is prepared by name',
      async () => {
        const first = await t.request('GET', '/api/v1/users?page[limit]=1', { as: m });
        const again = await t.request('GET', '/api/v1/users?page[limit]=1', { as: m });
        assert.equal(first.status, 200, first.raw);
        assert.deepEqual(again.body, first.body);
        assert.equal(first.body.meta.total, 2);
        const prepared = await preparedUserReads(database);
        if (!preparedStatements) {
          assert.deepEqual(prepared, []);
          return;
        }
        const lists = new Set(prepared.filter((p) => /order by/i.test(p.statement)).map((p) => p.name));
        assert.equal(lists.size, 1, JSON.stringify(prepared));
        assert.match([...lists][0]!, /^q_[\w-]{32}$/);
      },
    );
  });
}

describe('a prepared statement with array parameters', { skip }, () => {
  let database: Database;
  before(async () => {
    database = await openDatabase({ databaseUrl: (await freshDatabaseUrl())!, dataDir: '', poolSize: 2 });
  });
  after(() => database.close());

  test('keeps one generic plan after five executions instead of planning each one again (withOpaqueArrays)', async () => {
    // Each element costs the plan a thousand rows, as a group's member costs it its lookups.
    const lookup = statement(
      'test_array_plans',
      'select k.id, g.n from unnest($1::uuid[]) k(id) cross join lateral (select count(*) as n from generate_series(1, 1000) s where s <> length(k.id::text)) g',
    );
    const plans = await database.db.transaction(async (tx) => {
      // Small arrays, as a lightly loaded server's groups: planned for their values, they look
      // cheaper than the generic plan's default of ten elements.
      for (let i = 0; i < 8; i++) await run(tx, lookup, [[randomUUID()]]);
      return rowsOf<{ generic_plans: number; custom_plans: number }>(
        await tx.execute(
          sql`select generic_plans::int, custom_plans::int from pg_prepared_statements where name = 'test_array_plans'`,
        ),
      );
    });
    // Planned for its values five times, then the generic plan for every execution after.
    assert.deepEqual(plans, [{ generic_plans: 3, custom_plans: 5 }]);
  });
});

describe('statements planned for their values at each execution', { skip }, () => {
  let database: Database;
  before(async () => {
    // One connection: what it prepared is what every statement below was sent as.
    database = await openDatabase({ databaseUrl: (await freshDatabaseUrl())!, dataDir: '', poolSize: 1 });
  });
  after(() => database.close());

  const preparedLike = async (pattern: string) =>
    rowsOf<{ name: string }>(
      await database.db.execute(
        sql`select name from pg_prepared_statements where statement like ${pattern} and statement not like '%pg_prepared_statements%'`,
      ),
    ).map((r) => r.name);

  test('a text that opens with a comment is not prepared by name; the same text without it is', async () => {
    for (let i = 0; i < 2; i++) {
      await database.db.execute(sql`-- planned each time
        select count(*) from generate_series(1, ${3}) s where s > ${i} and 'comment-test' <> ''`);
      await database.db.execute(
        sql`select count(*) from generate_series(1, ${3}) s where s > ${i} and 'named-test' <> ''`,
      );
    }
    assert.deepEqual(await preparedLike('%comment-test%'), []);
    assert.equal((await preparedLike('%named-test%')).length, 1);
  });

  test("the webhook worker's claim is not prepared by name (a plan cached on empty tables read them whole as they grew)", async () => {
    const now = new Date();
    const claim = () =>
      claimDueDeliveries(database.db, {
        now,
        leaseUntil: new Date(now.getTime() + 30_000),
        limit: 10,
        room: {},
        share: 16,
        busy: {},
        merchantCap: 16,
      });
    assert.deepEqual(await claim(), []);
    assert.deepEqual(await claim(), []);
    assert.deepEqual(await preparedLike('%due_event_deliveries_per_client(%'), []);
  });
});
