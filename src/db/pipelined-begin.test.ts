// A transaction's BEGIN goes to PostgreSQL with its first statement, in one exchange
// (pipelined-begin.ts), and the statement still runs inside the transaction: what it wrote goes
// when the transaction rolls back. Counted by the answers' ReadyForQuery messages, one per
// exchange, on a pool of one connection.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { dbKind, testDatabase } from '../test/harness.ts';
import { openDatabase, rowsOf, type Database } from './open.ts';
import { run, statement } from './statements.ts';

describe('BEGIN with the first statement', { skip: dbKind !== 'postgres' ? 'node-postgres only: runs in the PostgreSQL pass' : false }, () => {
  let database: Database;
  let exchanges = 0;
  const table = `pipelined_begin_${process.pid}`;
  const count = async () => Number(rowsOf<{ n: string }>(await database.db.execute(sql.raw(`select count(*) as n from ${table}`)))[0]!.n);
  /** The exchanges `fn` took (the ReadyForQuery answers it got). */
  const exchangesOf = async (fn: () => Promise<unknown>) => {
    const before = exchanges;
    await fn().catch(() => {});
    return exchanges - before;
  };
  const rollback = new Error('roll back');

  before(async () => {
    const { url } = await testDatabase();
    database = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 1, migrate: false });
    const pool = (database.db as unknown as { $client: pg.Pool }).$client;
    const client = await pool.connect();
    (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection.on('readyForQuery', () => exchanges++);
    client.release();
    await database.db.execute(sql.raw(`create table ${table} (n int not null)`));
  });
  after(async () => {
    await database.db.execute(sql.raw(`drop table ${table}`));
    await database.close();
  });

  test('a statement with parameters: BEGIN, the statement and COMMIT in two exchanges, and it commits', async () => {
    // Run once outside a transaction first: a statement with parameters is named, and prepared on its first use.
    await database.db.execute(sql`insert into ${sql.raw(table)} values (${0})`);
    const n = await count();
    assert.equal(await exchangesOf(() => database.db.transaction(async (tx) => tx.execute(sql`insert into ${sql.raw(table)} values (${1})`))), 2);
    assert.equal(await count(), n + 1);
  });

  test('what the first statement wrote goes when the transaction rolls back: it ran inside it', async () => {
    const n = await count();
    const took = await exchangesOf(() =>
      database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into ${sql.raw(table)} values (${2})`);
        throw rollback;
      }),
    );
    assert.equal(took, 2, 'BEGIN with the insert, then ROLLBACK');
    assert.equal(await count(), n);
  });

  test('a named statement, once prepared on the connection, carries BEGIN too; before that BEGIN goes alone', async () => {
    const st = statement('pipelined_begin_insert', `insert into ${table} values ($1)`);
    const n = await count();
    // Its first use prepares it: BEGIN first, on its own (three exchanges), then rolled back.
    assert.equal(
      await exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, st, [3]);
          throw rollback;
        }),
      ),
      3,
    );
    assert.equal(
      await exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, st, [3]);
          throw rollback;
        }),
      ),
      2,
    );
    assert.equal(await count(), n, 'both rolled back');
  });

  test('a statement without parameters (it may hold several) goes after BEGIN, still inside the transaction', async () => {
    const n = await count();
    const took = await exchangesOf(() =>
      database.db.transaction(async (tx) => {
        await tx.execute(sql.raw(`insert into ${table} values (4); insert into ${table} values (5)`));
        throw rollback;
      }),
    );
    assert.equal(took, 3);
    assert.equal(await count(), n);
  });

  test('a transaction that runs no statement sends nothing', async () => {
    assert.equal(await exchangesOf(() => database.db.transaction(async () => 7)), 0);
    assert.equal(await database.db.transaction(async () => 7), 7);
  });

  test('a first statement that fails fails the transaction, and the connection serves the next one', async () => {
    const n = await count();
    const cause = (re: RegExp) => (err: Error) => re.test(String((err.cause as Error | undefined)?.message));
    // Prepared on the connection first, so that BEGIN goes with it; then an error as it runs.
    const divide = (d: number) => sql`insert into ${sql.raw(table)} values (${1}::int / ${d}::int)`;
    await database.db.execute(divide(1));
    await assert.rejects(database.db.transaction(async (tx) => tx.execute(divide(0))), cause(/division by zero/));
    // A statement PostgreSQL cannot prepare.
    await assert.rejects(database.db.transaction(async (tx) => tx.execute(sql`insert into ${sql.raw(table)} values (${1} / ${0})`)), cause(/operator is not unique/));
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`insert into ${sql.raw(table)} values (${6})`);
      await tx.execute(sql`insert into ${sql.raw(table)} values (${7})`);
    });
    assert.equal(await count(), n + 1 + 2);
  });
});
