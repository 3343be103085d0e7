// Captures arriving together run in one transaction (capture-groups.ts); each still gets its
// own outcome, two of one wallet add up, and a group the database refuses falls back to one
// transaction each. "One transaction" is observed directly: rows written by one transaction
// share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, authorizedPayment, balanceOf, fundedWallet, paymentXmins } from '../../test/money.ts';

describe('captures in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const authorized = (walletId: string, amount: number) => authorizedPayment(t, m, walletId, amount);
  const capture = (paymentId: string, amount: number) =>
    t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount } } },
    });

  test('captures sent together share one transaction, and each gets its own outcome', async () => {
    const a = await fundedWallet(t, m, 5000);
    const b = await fundedWallet(t, m, 5000);
    const [a1, a2, b1, twice, over] = [
      await authorized(a.wallet.id, 2000),
      await authorized(a.wallet.id, 1500),
      await authorized(b.wallet.id, 1000),
      await authorized(b.wallet.id, 700),
      await authorized(b.wallet.id, 300),
    ];
    const [ra1, ra2, rb1, first, second, missing, tooMuch] = await Promise.all([
      capture(a1, 2000),
      capture(a2, 1000),
      capture(b1, 1000),
      capture(twice, 700),
      capture(twice, 700),
      capture(randomUUID(), 100),
      capture(over, 301),
    ]);
    for (const r of [ra1, ra2, rb1, first]) assert.equal(r!.status, 200, r!.raw);
    assert.equal(ra2!.body.data.attributes.capturedAmount, 1000);
    assert.equal(ra1!.body.data.attributes.status, 'Processing');
    assert.equal(ra1!.body.included[0].type, 'PaymentIntent');
    // The same payment twice: the later finds it captured, as after the first's commit.
    assert.equal(errorsOf(second!)[0]!.code, 'IllegalOperation');
    assert.equal(errorsOf(missing!)[0]!.code, 'PaymentNotFound');
    assert.equal(errorsOf(tooMuch!)[0]!.code, 'ValidationError');

    const rows = await paymentXmins(t, [a1, a2, b1, twice]);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    // Two captures of one wallet: 3,000 captured, the uncaptured 500 of a2 back to available.
    const ba = await balanceOf(t, m, a.wallet.id);
    assert.equal(ba.reserved.total, 0);
    assert.equal(ba.available.deposit, 5000 - 2000 - 1000);
    const bb = await balanceOf(t, m, b.wallet.id);
    assert.equal(bb.reserved.total, 300);
    assert.equal(bb.available.deposit, 5000 - 1000 - 700 - 300);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each capture runs again alone, and only the failing one fails', async () => {
    const w = await fundedWallet(t, m, 10_000);
    const payments = [
      await authorized(w.wallet.id, 1000),
      await authorized(w.wallet.id, 4444),
      await authorized(w.wallet.id, 2000),
    ];
    // A fault only this amount hits.
    await withRefusal(t, { table: 'payments', on: 'update', when: 'new.captured_amount = 4444' }, async () => {
      const results = await Promise.all(payments.map((id, n) => capture(id, [1000, 4444, 2000][n]!)));
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 503, 200],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await paymentXmins(t, [payments[0]!, payments[2]!]);
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
      assert.equal((await balanceOf(t, m, w.wallet.id)).reserved.total, 4444);
    });
    await assertLedgerSound(t);
  });
});
