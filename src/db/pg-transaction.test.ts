// A transaction whose BEGIN fails (with the first statement that carries it) gives its
// connection back to the pool (pg-transaction.ts).
// Before, each such failure (a connection PostgreSQL had just closed in a restart) kept one
// pooled connection checked out for good: the chaos campaign saw a process whose pool was used
// up after a few PostgreSQL restarts, and whose shutdown then hung.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { dbKind, testDatabase } from '../test/harness.ts';
import { commitError, CommitOutcomeUnknown, isRetryableDatabaseError } from './errors.ts';
import { openDatabase, rowsOf } from './open.ts';

describe('a transaction whose BEGIN fails', {
  skip: dbKind !== 'postgres' ? 'node-postgres only: runs in the PostgreSQL pass' : false,
}, () => {
  test('releases its connection: the pool has none left checked out, and the next transaction runs', async () => {
    const { url } = await testDatabase();
    const database = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 1, migrate: false });
    const pool = (database.db as unknown as { $client: pg.Pool }).$client;
    try {
      // The transaction's first statement, which carries its BEGIN (pipelined-begin.ts), fails as
      // it does on a connection the server closed.
      let armed = true;
      pool.on('acquire', (client) => {
        const query = client.query;
        client.query = function (this: unknown, ...args: unknown[]) {
          if (armed) {
            armed = false;
            return Promise.reject(new Error('Connection terminated unexpectedly'));
          }
          return (query as (...a: unknown[]) => unknown).apply(this, args);
        } as typeof client.query;
      });
      await assert.rejects(
        database.db.transaction(async (tx) => tx.execute(sql`select ${1}::int`)),
        (err: Error) => /Connection terminated unexpectedly/.test(String((err.cause as Error | undefined)?.message)),
      );
      assert.equal(armed, false, 'the first statement was sent');
      assert.equal(pool.totalCount - pool.idleCount, 0, 'no connection left checked out');
      const rows = rowsOf<{ n: number }>(await database.db.transaction(async (tx) => tx.execute(sql`select 1 as n`)));
      assert.equal(rows[0]?.n, 1);
    } finally {
      // pool.end() waits for every checked-out connection: with one leaked it would never end.
      if (pool.totalCount === pool.idleCount) await database.close();
      else void database.close();
    }
  });
});

describe('a transaction whose COMMIT gets no answer', {
  skip: dbKind !== 'postgres' ? 'node-postgres only: runs in the PostgreSQL pass' : false,
}, () => {
  test('fails as CommitOutcomeUnknown (it may have committed), which is retryable; an error PostgreSQL sends at COMMIT is a plain rollback', async () => {
    const { url } = await testDatabase();
    const database = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 1, migrate: false });
    const pool = (database.db as unknown as { $client: pg.Pool }).$client;
    try {
      // COMMIT reaches the server (it commits) but its answer is lost.
      pool.on('acquire', (client) => {
        const query = client.query;
        client.query = async function (this: unknown, ...args: unknown[]) {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
          const res = await (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
          if (text === 'commit') throw new Error('Connection terminated unexpectedly');
          return res;
        } as typeof client.query;
      });
      const err = await database.db
        .transaction(async (tx) => tx.execute(sql`select 1`))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof CommitOutcomeUnknown, String(err));
      assert.equal(isRetryableDatabaseError(err), true);
      assert.equal(pool.totalCount - pool.idleCount, 0, 'no connection left checked out');
      // PostgreSQL's own error at COMMIT (here a serialization failure) means it rolled back.
      const serialization = Object.assign(new Error('could not serialize access'), { code: '40001' });
      assert.equal(commitError(serialization), serialization);
    } finally {
      if (pool.totalCount === pool.idleCount) await database.close();
      else void database.close();
    }
  });
});

describe('a transaction whose ROLLBACK fails', {
  skip: dbKind !== 'postgres' ? 'node-postgres only: runs in the PostgreSQL pass' : false,
}, () => {
  test("fails with the error that ended it, not the ROLLBACK's, and its connection is discarded", async () => {
    const { url } = await testDatabase();
    const database = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 1, migrate: false });
    const pool = (database.db as unknown as { $client: pg.Pool }).$client;
    const desync = 'Received unexpected parseComplete message from backend.';
    try {
      // ROLLBACK fails as it does once node-postgres's protocol falls out of step with the server's.
      let armed = true;
      pool.on('acquire', (client) => {
        const query = client.query;
        client.query = function (this: unknown, ...args: unknown[]) {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
          if (armed && text === 'rollback') {
            armed = false;
            return Promise.reject(new Error(desync));
          }
          return (query as (...a: unknown[]) => unknown).apply(this, args);
        } as typeof client.query;
      });
      const refusal = new Error('a refusal of the transaction’s own');
      const err = await database.db
        .transaction(async (tx) => {
          await tx.execute(sql`select 1`);
          throw refusal;
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.equal(armed, false, 'ROLLBACK was sent');
      assert.equal(err, refusal);
      assert.equal(pool.totalCount, 0, 'the connection left the pool');
      const rows = rowsOf<{ n: number }>(await database.db.transaction(async (tx) => tx.execute(sql`select 1 as n`)));
      assert.equal(rows[0]?.n, 1, 'the next transaction runs on a new connection');
      // That error, met by a statement, is a lost connection: retryable (a 503), not a 500.
      assert.equal(
        isRetryableDatabaseError(Object.assign(new Error('Failed query: select 1'), { cause: new Error(desync) })),
        true,
      );
    } finally {
      if (pool.totalCount === pool.idleCount) await database.close();
      else void database.close();
    }
  });
});
