// A capture or cancel of a payment locks only the wallet accounts it moves money between
// (money.ts, movedWalletAccounts): the reserved account of each bucket the payment holds money
// in, and that bucket's available account where money returns to it. Observed directly: while
// another transaction holds the wallet's other accounts, the request is still answered; while
// it holds one the request moves, the request waits for it. Needs two sessions of a PostgreSQL
// server (PGlite runs one statement at a time).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { WALLET_CODES } from '../../ledger/accounts.ts';
import { createTestApp, dbKind, type Merchant, type Response, type TestApp } from '../../test/harness.ts';
import { whileLocked, within } from '../../test/locks.ts';
import { assertLedgerSound, authorizedPayment, balanceOf, fundedWallet } from '../../test/money.ts';

const skip = dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)';

describe('a capture or cancel locks only the wallet accounts it moves', { skip }, () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const capture = (id: string, amount: number) =>
    t.request('POST', `/api/v1/payments/${id}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount } } },
    });
  const cancel = (id: string) => t.request('POST', `/api/v1/payments/${id}/cancel`, { as: m });
  /** Runs `body` while another transaction holds the wallet's accounts whose codes are `codes`. */
  const holding = (walletId: string, codes: readonly string[], body: () => Promise<void>) =>
    whileLocked(
      t,
      sql`select id from ledger_accounts where owner_id = ${walletId} and code in ${codes} order by id for update`,
      body,
    );

  // The wallets are funded by deposits only: their payments hold deposit money, no rewards.
  for (const [name, amount, send, moved] of [
    ['a capture in full', 1000, (id: string) => capture(id, 1000), ['deposit.reserved']],
    ['a partial capture', 1000, (id: string) => capture(id, 400), ['deposit.reserved', 'deposit.available']],
    ['a cancel', 1000, cancel, ['deposit.reserved', 'deposit.available']],
  ] as const) {
    test(`${name} is not held up by the wallet's other accounts, and waits for one it moves`, async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const free = await authorizedPayment(t, m, wallet.id, amount);
      const others = WALLET_CODES.filter((c) => !(moved as readonly string[]).includes(c));
      await holding(wallet.id, others, async () => {
        const answered = await within(send(free), 5_000);
        assert.notEqual(answered, 'pending', 'the request waited on an account it does not move');
        assert.equal((answered as Response).status, 200, (answered as Response).raw);
      });
      const held = await authorizedPayment(t, m, wallet.id, amount);
      let sent!: Promise<Response>;
      await holding(wallet.id, [moved.at(-1)!], async () => {
        // the last account it moves
        sent = send(held);
        assert.equal(await within(sent, 300), 'pending', 'the request did not wait for an account it moves');
      });
      assert.equal((await sent).status, 200);
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.reserved.total, 0);
      await assertLedgerSound(t);
    });
  }
});
