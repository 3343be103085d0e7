// The timeouts on Coffer's PostgreSQL connections (DATABASE_*_TIMEOUT_MS;
// docs/operations.md#database-timeouts): a request that waits too long on a row another
// transaction holds answers a retryable 503 and writes nothing; a transaction left idle (a
// frozen process) loses its session and its locks; the migrations' lock is not bound by them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { openDatabase, rowsOf, type Database } from './open.ts';
import { createTestApp, dbKind, testConfig, testDatabase, type Merchant, type TestApp } from '../test/harness.ts';
import { whileLocked, within } from '../test/locks.ts';
import { assertLedgerSound, balanceOf, depositBody, fundedWallet } from '../test/money.ts';

const skip = dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one: nothing waits on a lock)';

/** A pool of its own on the suite's database, with the timeouts `env` sets, and an app on it. */
async function appWith(env: Record<string, string>): Promise<{ t: TestApp; database: Database }> {
  const { url } = await testDatabase();
  const database = await openDatabase({
    databaseUrl: url,
    dataDir: '',
    poolSize: 4,
    migrate: false,
    timeouts: testConfig(env).databaseTimeouts,
  });
  return { t: await createTestApp({ env, database }), database };
}

const settings = async (db: Database['db']) =>
  rowsOf<{ statement: string; lock: string; idle: string }>(
    await db.execute(
      sql`select current_setting('statement_timeout') as statement, current_setting('lock_timeout') as lock,
        current_setting('idle_in_transaction_session_timeout') as idle`,
    ),
  )[0];

describe('database timeouts', { skip }, () => {
  let shared: Database;
  const opened: { t: TestApp; database: Database }[] = [];
  before(async () => {
    shared = (await testDatabase()).database;
  });
  after(async () => {
    for (const { t, database } of opened) {
      await t.close();
      await database.close();
    }
  });
  const open = async (env: Record<string, string>) => {
    const o = await appWith(env);
    opened.push(o);
    return o;
  };

  /** The wallet's deposits and balance as the API shows them. */
  const ledgerOf = async (t: TestApp, m: Merchant, walletId: string) => ({
    balance: await balanceOf(t, m, walletId),
    deposits: (await t.request('GET', `/api/v1/wallets/${walletId}/transactions`, { as: m })).body.meta.total,
  });

  test('every connection of the pool carries them: the defaults, or the configured values', async () => {
    assert.deepEqual(await settings(shared.db), { statement: '1min', lock: '10s', idle: '15s' });
    const { database } = await open({
      DATABASE_STATEMENT_TIMEOUT_MS: '4000',
      DATABASE_LOCK_TIMEOUT_MS: '250',
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0',
    });
    // Several connections at once: each one of them, not only the first.
    const all = await Promise.all(
      Array.from({ length: 4 }, () =>
        database.db.transaction(async (tx) => {
          const s = await settings(tx as never);
          await tx.execute(sql`select pg_sleep(0.05)`);
          return s;
        }),
      ),
    );
    for (const s of all) assert.deepEqual(s, { statement: '4s', lock: '250ms', idle: '0' });
  });

  for (const [name, env] of [
    ['DATABASE_LOCK_TIMEOUT_MS', { DATABASE_LOCK_TIMEOUT_MS: '300' }],
    ['DATABASE_STATEMENT_TIMEOUT_MS', { DATABASE_STATEMENT_TIMEOUT_MS: '300', DATABASE_LOCK_TIMEOUT_MS: '0' }],
  ] as const) {
    test(`a deposit waiting past ${name} on its wallet's accounts answers 503 with Retry-After and writes nothing; once they are free it goes through`, async () => {
      const { t } = await open(env);
      const m = await t.createMerchant();
      const { wallet, account } = await fundedWallet(t, m, 5_000);
      const before = await ledgerOf(t, m, wallet.id);
      const body = depositBody(1_234, account.id);
      const send = () => t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      // Held by another pool's transaction: another process's, as far as this one can tell.
      await whileLocked(
        { ctx: { db: shared.db } },
        sql`select id from ledger_accounts where owner_id = ${wallet.id} order by id for update`,
        async () => {
          const started = performance.now();
          const res = await send();
          assert.equal(res.status, 503, res.raw);
          assert.equal(res.body.errors[0].code, 'ServiceUnavailable');
          assert.match(res.body.errors[0].detail, /retry shortly/);
          assert.equal(res.headers['retry-after'], '1');
          // Alone and then once more as a group of one (db/groups.ts): well under the default 10 s.
          assert.ok(performance.now() - started < 5_000, `answered after ${performance.now() - started} ms`);
          assert.deepEqual(await ledgerOf(t, m, wallet.id), before);
        },
      );
      const again = await send();
      assert.equal(again.status, 201, again.raw);
      assert.equal((await ledgerOf(t, m, wallet.id)).deposits, before.deposits + 1);
      await assertLedgerSound(t);
    });
  }

  test('a transaction left idle past DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS loses its session and its locks: a deposit waiting on them goes through', async () => {
    const { t, database } = await open({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '500' });
    const m = await t.createMerchant();
    const { wallet, account } = await fundedWallet(t, m, 5_000);
    // A process frozen inside its transaction: it took the wallet's accounts and never goes on.
    let thaw!: () => void;
    const frozen = new Promise<void>((r) => (thaw = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    const holder = database.db.transaction(async (tx) => {
      await tx.execute(sql`select id from ledger_accounts where owner_id = ${wallet.id} order by id for update`);
      locked();
      await frozen;
      await tx.execute(sql`select 1`);
    });
    try {
      await lockTaken;
      const sent = t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
        as: m,
        body: depositBody(700, account.id),
      });
      const answered = await within(sent, 8_000);
      assert.notEqual(answered, 'pending', 'the deposit still waits for the frozen transaction');
      assert.equal((answered as Awaited<typeof sent>).status, 201, (answered as Awaited<typeof sent>).raw);
    } finally {
      thaw();
      await assert.rejects(holder, 'the frozen transaction was ended: nothing it did commits');
    }
    await assertLedgerSound(t);
  });

  test("the migrations' lock waits for another process's migrations past every timeout", async () => {
    const { url } = await testDatabase();
    // Another process migrating: it holds the lock for longer than this one's timeouts.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`select pg_advisory_xact_lock(hashtext('coffer:migrations'))`);
      const opening = openDatabase({
        databaseUrl: url,
        dataDir: '',
        poolSize: 2,
        timeouts: { statementMs: 200, lockMs: 200, idleInTransactionMs: 200 },
      });
      assert.equal(await within(opening, 1_500), 'pending', 'it waits for the lock');
      await other.query('commit');
      await (await opening).close();
    } finally {
      await other.end();
    }
  });
});
