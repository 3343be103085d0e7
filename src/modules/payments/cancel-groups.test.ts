// Payment cancels arriving together run in one transaction (cancel-groups.ts); each still gets
// its own outcome, and a group the database refuses falls back to one transaction each. "One
// transaction" is observed directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { after, before, describe, test } from 'node:test';
import { rowsOf } from '../../db/open.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet, intentFor, paymentXmins } from '../../test/money.ts';

describe('payment cancels in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  /** An authorized (Created) payment of `amount` from the wallet, with its intent's id. */
  async function authorized(walletId: string, amount: number): Promise<{ id: string; intentId: string }> {
    const intentId = await intentFor(t, m, walletId, amount);
    const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount } } },
    });
    assert.equal(res.status, 201, res.raw);
    return { id: res.body.included[0].id, intentId };
  }
  const cancel = (paymentId: string) => t.request('POST', `/api/v1/payments/${paymentId}/cancel`, { as: m });
  const intentXmins = async (ids: string[]) =>
    rowsOf<{ xmin: string }>(
      await t.ctx.db.execute(sql`select xmin::text as xmin from payment_intents where id in ${ids}`),
    );

  test('cancels sent together share one transaction, and each gets its own outcome', async () => {
    const a = await fundedWallet(t, m, 5000);
    const b = await fundedWallet(t, m, 5000);
    const [a1, a2, b1, twice, done] = [
      await authorized(a.wallet.id, 2000),
      await authorized(a.wallet.id, 1500),
      await authorized(b.wallet.id, 1000),
      await authorized(b.wallet.id, 700),
      await authorized(b.wallet.id, 300),
    ];
    const cap = await t.request('POST', `/api/v1/payments/${done.id}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 300 } } },
    });
    assert.equal(cap.status, 200, cap.raw);
    const [ra1, ra2, rb1, first, second, missing, captured] = await Promise.all([
      cancel(a1.id),
      cancel(a2.id),
      cancel(b1.id),
      cancel(twice.id),
      cancel(twice.id),
      cancel(randomUUID()),
      cancel(done.id),
    ]);
    for (const r of [ra1, ra2, rb1, first]) {
      assert.equal(r!.status, 200, r!.raw);
      assert.equal(r!.body.data.attributes.status, 'Canceled');
      assert.equal(r!.body.included[0].attributes.status, 'Canceled');
    }
    // The same payment twice: the later finds it canceled, as after the first's commit.
    assert.equal(errorsOf(second!)[0]!.code, 'IllegalOperation');
    assert.equal(errorsOf(missing!)[0]!.code, 'PaymentNotFound');
    assert.equal(errorsOf(captured!)[0]!.code, 'IllegalOperation');

    const xmins = [
      ...(await paymentXmins(t, [a1.id, a2.id, b1.id, twice.id])),
      ...(await intentXmins([a1.intentId, a2.intentId, b1.intentId, twice.intentId])),
    ];
    assert.equal(xmins.length, 8);
    assert.equal(new Set(xmins.map((r) => r.xmin)).size, 1, 'one transaction wrote the group, payments and intents');
    // Every reservation released; the captured payment's 300 stays spent.
    assert.equal((await balanceOf(t, m, a.wallet.id)).available.deposit, 5000);
    const bb = await balanceOf(t, m, b.wallet.id);
    assert.equal(bb.reserved.total, 0);
    assert.equal(bb.available.deposit, 5000 - 300);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each cancel runs again alone, and only the failing one fails', async () => {
    const w = await fundedWallet(t, m, 10_000);
    const payments = [
      await authorized(w.wallet.id, 1000),
      await authorized(w.wallet.id, 4444),
      await authorized(w.wallet.id, 2000),
    ];
    // A fault only this amount hits.
    await withRefusal(t, { table: 'payments', on: 'update', when: 'new.amount = 4444' }, async () => {
      const results = await Promise.all(payments.map((p) => cancel(p.id)));
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 503, 200],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await paymentXmins(t, [payments[0]!.id, payments[2]!.id]);
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
      assert.equal((await balanceOf(t, m, w.wallet.id)).reserved.total, 4444);
    });
    await assertLedgerSound(t);
  });
});
