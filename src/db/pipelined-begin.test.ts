// A transaction's BEGIN goes to PostgreSQL with its first statement, in one exchange
// (pipelined-begin.ts), and the statement still runs inside the transaction: what it wrote goes
// when the transaction rolls back. A deferred statement (runWithNext: the accounts' lock, a
// group's last write) goes with the statement after it, or with the COMMIT, and runs before it.
// Counted by the answers' ReadyForQuery messages, one per exchange, on a pool of one connection.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { dbKind, testDatabase } from '../test/harness.ts';
import { openDatabase, rowsOf, type Database } from './open.ts';
import { run, runWithNext, statement } from './statements.ts';

describe('BEGIN with the first statement', {
  skip: dbKind !== 'postgres' ? 'node-postgres only: runs in the PostgreSQL pass' : false,
}, () => {
  let database: Database;
  let exchanges = 0;
  const table = `pipelined_begin_${process.pid}`;
  const count = async () =>
    Number(rowsOf<{ n: string }>(await database.db.execute(sql.raw(`select count(*) as n from ${table}`)))[0]!.n);
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
    (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection.on(
      'readyForQuery',
      () => exchanges++,
    );
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
    assert.equal(
      await exchangesOf(() =>
        database.db.transaction(async (tx) => tx.execute(sql`insert into ${sql.raw(table)} values (${1})`)),
      ),
      2,
    );
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
    await assert.rejects(
      database.db.transaction(async (tx) => tx.execute(divide(0))),
      cause(/division by zero/),
    );
    // A statement PostgreSQL cannot prepare.
    await assert.rejects(
      database.db.transaction(async (tx) => tx.execute(sql`insert into ${sql.raw(table)} values (${1} / ${0})`)),
      cause(/operator is not unique/),
    );
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`insert into ${sql.raw(table)} values (${6})`);
      await tx.execute(sql`insert into ${sql.raw(table)} values (${7})`);
    });
    assert.equal(await count(), n + 1 + 2);
  });

  describe('a statement deferred to the next one', () => {
    const lock = statement(
      'pipelined_lock',
      `select n from ${table} where n = any($1::int[]) order by n for no key update`,
    );
    const insert = statement('pipelined_deferred_insert', `insert into ${table} values ($1)`);
    const read = statement('pipelined_deferred_read', `select count(*)::int as n from ${table} where n = $1`);
    let other: pg.Client;

    before(async () => {
      const { default: pgm } = await import('pg');
      other = new pgm.Client({ connectionString: (await testDatabase()).url });
      await other.connect();
      await database.db.execute(sql.raw(`insert into ${table} values (100), (101)`));
      // Prepared on the connection (a deferred statement must be), outside any transaction.
      await run(database.db, lock, [[100]]);
      await run(database.db, insert, [0]);
      await database.db.execute(sql.raw(`delete from ${table} where n = 0`));
      await run(database.db, read, [0]);
    });
    after(() => other.end());
    /** Rows of value n, as another connection sees them (committed). */
    const seen = async (n: number) =>
      (await other.query(`select count(*)::int as n from ${table} where n = $1`, [n])).rows[0].n as number;
    /** The exchanges of a transaction that reads, defers `st` with value n, and rolls back. */
    const deferredThenRolledBack = (st: typeof insert, n: number) =>
      exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, read, [100]);
          await runWithNext(tx, st, [n]);
          throw rollback;
        }),
      );

    test('it rides with the next statement: one exchange fewer, and its lock is held when that statement runs', async () => {
      let lockedMeanwhile: string | undefined;
      const took = await exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, read, [100]); // carries BEGIN
          await runWithNext(tx, lock, [[100, 101]]);
          await run(tx, insert, [102]); // carries the lock
          // Another connection finds the rows locked.
          await other.query('set lock_timeout = 50');
          lockedMeanwhile = await other.query(`select n from ${table} where n = 100 for no key update`).then(
            () => 'not locked',
            (err: { code?: string }) => err.code,
          );
        }),
      );
      assert.equal(took, 3, 'BEGIN with the read, the lock with the insert, COMMIT');
      assert.equal(lockedMeanwhile, '55P03', 'lock_not_available');
      assert.equal(await seen(102), 1, 'committed');
      await database.db.execute(sql.raw(`delete from ${table} where n = 102`));
    });

    test("its failure is the next statement's, and that statement does not run", async () => {
      // Another connection holds the row: the deferred lock waits past lock_timeout and fails.
      await other.query('begin');
      await other.query(`select n from ${table} where n = 101 for update`);
      try {
        await assert.rejects(
          database.db.transaction(async (tx) => {
            await tx.execute(sql.raw(`set local lock_timeout = 50`));
            await runWithNext(tx, lock, [[101]]);
            await run(tx, insert, [103]);
          }),
          (err: Error) => /lock timeout/.test(String((err.cause as Error | undefined)?.message ?? err.message)),
        );
      } finally {
        await other.query('rollback');
      }
      assert.equal(await seen(103), 0);
      // The connection serves the next transaction.
      await database.db.transaction(async (tx) => {
        await runWithNext(tx, lock, [[101]]);
        await run(tx, insert, [104]);
      });
      assert.equal(await seen(104), 1);
      await database.db.execute(sql.raw(`delete from ${table} where n = 104`));
    });

    test('before a statement that cannot carry it (no parameters), it goes on its own, first', async () => {
      let inside: unknown;
      const took = await exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, read, [100]);
          await runWithNext(tx, insert, [105]);
          inside = rowsOf<{ n: number }>(
            await tx.execute(sql.raw(`select count(*)::int as n from ${table} where n = 105`)),
          )[0]!.n;
          throw rollback;
        }),
      );
      assert.equal(inside, 1, 'the deferred insert ran before the statement after it');
      assert.equal(took, 4, 'BEGIN with the read, the insert, the count, ROLLBACK');
      assert.equal(await seen(105), 0, 'rolled back');
    });

    test('with no statement after it, it goes with the COMMIT: one exchange, and it commits', async () => {
      const took = await exchangesOf(() =>
        database.db.transaction(async (tx) => {
          await run(tx, read, [100]);
          await runWithNext(tx, insert, [106]);
        }),
      );
      assert.equal(took, 2, 'BEGIN with the read, the insert with COMMIT');
      assert.equal(await seen(106), 1);
      // Alone in its transaction, it carries BEGIN too.
      assert.equal(await exchangesOf(() => database.db.transaction(async (tx) => runWithNext(tx, insert, [106]))), 1);
      assert.equal(await seen(106), 2);
      await database.db.execute(sql.raw(`delete from ${table} where n = 106`));
    });

    test('a transaction that rolls back never sends it, nor does the next transaction', async () => {
      assert.equal(await deferredThenRolledBack(insert, 109), 2, 'BEGIN with the read, ROLLBACK');
      await database.db.transaction(async (tx) => run(tx, read, [100]));
      assert.equal(await seen(109), 0);
    });

    test("one that fails with the COMMIT fails the transaction with PostgreSQL's error, wrote nothing, and leaves the connection clean", async () => {
      const positive = statement('pipelined_deferred_positive', `insert into ${table} values (1 / $1::int)`);
      await run(database.db, positive, [1]);
      await database.db.execute(sql.raw(`delete from ${table} where n = 1`));
      await assert.rejects(
        database.db.transaction(async (tx) => {
          await run(tx, insert, [110]);
          await runWithNext(tx, positive, [0]);
        }),
        (err: { code?: string }) => err.code === '22012', // division_by_zero, not CommitOutcomeUnknown
      );
      assert.equal(await seen(110), 0, 'the statement before it rolled back');
      // The connection was rolled back before it went back to the pool: the next transaction commits.
      await database.db.transaction(async (tx) => run(tx, insert, [111]));
      assert.equal(await seen(111), 1);
      await database.db.execute(sql.raw(`delete from ${table} where n = 111`));
    });

    test('with statements unnamed (behind an older PgBouncer), it is parsed in the exchange that carries it', async () => {
      const { url } = await testDatabase();
      const unnamed = await openDatabase({
        databaseUrl: url,
        dataDir: '',
        poolSize: 1,
        migrate: false,
        preparedStatements: false,
      });
      try {
        const pool = (unnamed.db as unknown as { $client: pg.Pool }).$client;
        const client = await pool.connect();
        let answers = 0;
        (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection.on(
          'readyForQuery',
          () => answers++,
        );
        client.release();
        const took = await (async () => {
          const before = answers;
          await unnamed.db.transaction(async (tx) => {
            await run(tx, read, [100]);
            await runWithNext(tx, lock, [[100, 101]]);
            await runWithNext(tx, insert, [112]);
          });
          return answers - before;
        })();
        assert.equal(took, 2, 'BEGIN with the read; the lock, the insert and COMMIT');
        assert.equal(await seen(112), 1);
      } finally {
        await unnamed.close();
        await database.db.execute(sql.raw(`delete from ${table} where n = 112`));
      }
    });

    test('outside a transaction, or before the statement is prepared on the connection, it runs at once', async () => {
      await runWithNext(database.db, insert, [107]);
      assert.equal(await seen(107), 1);
      const fresh = statement('pipelined_deferred_fresh', `insert into ${table} values ($1::int + 0)`);
      assert.equal(
        await deferredThenRolledBack(fresh, 108),
        3,
        'BEGIN with the read, the unprepared statement on its own, ROLLBACK',
      );
      await database.db.execute(sql.raw(`delete from ${table} where n in (107, 108)`));
    });
  });

  test('the connection keeps fast properties through transactions and their carried statements', async () => {
    // A property deleted from node-postgres's Client makes it a dictionary: every read of its own
    // members on every statement then a hash lookup. V8 tells which (a natives-syntax check).
    setFlagsFromString('--allow-natives-syntax');
    const fastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
    const deferred = statement('pipelined_fast_properties', `insert into ${table} values ($1::int + 0)`);
    await run(database.db, deferred, [0]); // prepared on the connection, so it can be carried
    await database.db.transaction(async (tx) => {
      await runWithNext(tx, deferred, [120]);
    });
    await database.db.transaction(async (tx) => tx.execute(sql`select 1`)).catch(() => {});
    await database.db
      .transaction(async () => {
        throw rollback;
      })
      .catch(() => {});
    const pool = (database.db as unknown as { $client: pg.Pool }).$client;
    const client = await pool.connect();
    try {
      assert.equal(fastProperties(client), true);
    } finally {
      client.release();
      await database.db.execute(sql.raw(`delete from ${table} where n in (0, 120)`));
    }
  });
});
