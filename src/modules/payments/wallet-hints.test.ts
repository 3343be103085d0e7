// A capture, refund or cancel of a payment whose wallet a running group is locking waits for a
// later group (wallet-hints.ts, db/groups.ts rowOf), so the requests of other wallets that
// arrive with it are not held up behind that lock. Observed directly: while another
// transaction holds one wallet's ledger accounts, a group stuck on them is running; a request
// of another wallet sent with a second request of the held wallet is answered before the
// lock is released, and the second request of the held wallet after it. Needs two sessions
// of a PostgreSQL server (PGlite runs one statement at a time).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, dbKind, type Merchant, type Response, type TestApp } from '../../test/harness.ts';
import { whileLocked, within } from '../../test/locks.ts';
import { assertLedgerSound, authorizedPayment, capturedPayment, fundedWallet } from '../../test/money.ts';

const skip = dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)';

describe('requests of a wallet a running group locks wait for a later group', { skip }, () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const authorized = (walletId: string) => authorizedPayment(t, m, walletId, 1000);
  const captured = (walletId: string) => capturedPayment(t, m, walletId, 1000);
  const capture = (id: string) =>
    t.request('POST', `/api/v1/payments/${id}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 1000 } } },
    });
  const refund = (id: string) =>
    t.request('POST', `/api/v1/payments/${id}/refund`, {
      as: m,
      body: { data: { type: 'Refund', attributes: { amount: 1000, idempotencyKey: `${id}-r` } } },
    });
  const cancel = (id: string) => t.request('POST', `/api/v1/payments/${id}/cancel`, { as: m });

  /** A payment made by POST /payments (Processing at once). */
  async function direct(walletId: string): Promise<string> {
    const res = await t.request('POST', '/api/v1/payments', {
      as: m,
      body: { data: { type: 'CreatePayment', attributes: { amount: 1000, walletId, idempotencyKey: randomUUID() } } },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.id;
  }

  const waitingOnLocks = async () =>
    rowsOf<{ n: number }>(
      await t.ctx.db.execute(
        sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      ),
    )[0]!.n;
  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (const started = Date.now(); !(await check()); ) {
      assert.ok(Date.now() - started < 10_000, `timed out waiting: ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  // Each request is answered 200.
  for (const [name, make, send] of [
    ['capture', authorized, capture],
    ['refund', captured, refund],
    ['refund of a direct payment', direct, refund],
    ['cancel', authorized, cancel],
  ] as const) {
    test(`${name}: a request of another wallet is not held up by the locked wallet`, async () => {
      const held = await fundedWallet(t, m, 5000);
      const other = await fundedWallet(t, m, 5000);
      const [first, second, free] = [
        await make(held.wallet.id),
        await make(held.wallet.id),
        await make(other.wallet.id),
      ];

      let one!: Promise<Response>;
      let two!: Promise<Response>;
      await whileLocked(
        t,
        sql`select id from ledger_accounts where owner_id = ${held.wallet.id} order by id for no key update`,
        async () => {
          // The first request's group runs, and waits on the held wallet's lock.
          one = send(first);
          await until(async () => (await waitingOnLocks()) >= 1, "the first group waiting on the wallet's lock");
          let three: Promise<Response>;
          [two, three] = [send(second), send(free)];
          const answered = await within(three, 5_000);
          assert.notEqual(answered, 'pending', 'the other wallet was held up by the locked one');
          assert.equal((answered as Response).status, 200, (answered as Response).raw);
          assert.equal(await within(two, 200), 'pending', 'the held wallet waits for its lock');
        },
      );
      for (const r of await Promise.all([one, two])) assert.equal(r.status, 200, r.raw);
      await assertLedgerSound(t);
    });
  }
});
