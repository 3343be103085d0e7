// Refunds arriving together run in one transaction (refund-groups.ts); each still gets its own
// outcome (a replay, a 409, a refusal), two of one payment are planned one after the other, and
// a group the database refuses falls back to one transaction each. "One transaction" is
// observed directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { after, before, describe, test } from 'node:test';
import { rowsOf } from '../../db/open.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, capturedPayment, fundedWallet } from '../../test/money.ts';

describe('refunds in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const captured = (walletId: string, amount: number) => capturedPayment(t, m, walletId, amount);
  const refund = (paymentId: string, amount: number, idempotencyKey: string = randomUUID()) =>
    t.request('POST', `/api/v1/payments/${paymentId}/refund`, {
      as: m,
      body: { data: { type: 'Refund', attributes: { amount, idempotencyKey } } },
    });
  const refundXmins = async (paymentIds: string[]) =>
    rowsOf<{ payment_id: string; xmin: string }>(
      await t.ctx.db.execute(sql`select payment_id, xmin::text as xmin from refunds where payment_id in ${paymentIds}`),
    );

  test('refunds sent together share one transaction, and each gets its own outcome', async () => {
    const a = await fundedWallet(t, m, 5000);
    const b = await fundedWallet(t, m, 5000);
    const [a1, a2, keyed, b1, twice, small] = [
      await captured(a.wallet.id, 2000),
      await captured(a.wallet.id, 1400),
      await captured(a.wallet.id, 100),
      await captured(b.wallet.id, 1000),
      await captured(b.wallet.id, 700),
      await captured(b.wallet.id, 300),
    ];
    const used = randomUUID();
    const first = await refund(small, 100, used);
    assert.equal(first.status, 200, first.raw);
    const shared = randomUUID();
    const [ra1, ra2, rb1, twice1, twice2, missing, tooMuch, replay, sameKey1, sameKey2] = await Promise.all([
      refund(a1, 2000),
      refund(a2, 500),
      refund(b1, 1000),
      refund(twice, 400),
      refund(twice, 300),
      refund(randomUUID(), 100),
      refund(small, 201),
      refund(small, 100, used),
      refund(keyed, 1, shared),
      refund(keyed, 1, shared),
    ]);
    for (const r of [ra1, ra2, rb1, twice1, twice2]) assert.equal(r!.status, 200, r!.raw);
    assert.equal(errorsOf(missing!)[0]!.code, 'PaymentNotFound');
    assert.equal(errorsOf(tooMuch!)[0]!.code, 'InvalidRefund');
    assert.equal(replay!.status, 200);
    assert.equal(replay!.headers['idempotent-replayed'], 'true');
    assert.equal(replay!.raw, first.raw, 'replayed byte for byte');
    // The same key twice at once: one ran (in the group's transaction), the other was in flight.
    assert.deepEqual([sameKey1!.status, sameKey2!.status].sort(), [200, 409]);
    assert.equal(errorsOf([sameKey1!, sameKey2!].find((r) => r.status === 409)!)[0]!.code, 'IdempotencyKeyInUse');

    const rows = await refundXmins([a1, a2, keyed, b1]);
    assert.equal(rows.length, 4);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    // One payment twice: the second ran after the first committed, and found 300 left.
    const twiceRows = await refundXmins([twice]);
    assert.equal(new Set(twiceRows.map((r) => r.xmin)).size, 2, 'the second refund of a payment waits for the group');
    assert.equal(twice2!.body.data.attributes.refundedAmount, 700);
    assert.deepEqual(
      twice2!.body.data.relationships.refunds.data.map((r: { id: string }) => r.id),
      [twice1!.body.meta.refundId, twice2!.body.meta.refundId],
    );
    assert.equal(ra1!.body.data.relationships.captures.data[0].id, a1, "a bank-rail payment's capture is the payment");
    // Wallet A got 2,000 + 500 + 1 back; wallet B 1,000 + 700 + 100.
    assert.equal((await balanceOf(t, m, a.wallet.id)).available.deposit, 5000 - 3500 + 2501);
    assert.equal((await balanceOf(t, m, b.wallet.id)).available.deposit, 5000 - 2000 + 1800);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each refund runs again alone, and only the failing one fails', async () => {
    const w = await fundedWallet(t, m, 10_000);
    const payments = [
      await captured(w.wallet.id, 1000),
      await captured(w.wallet.id, 4444),
      await captured(w.wallet.id, 2000),
    ];
    // A fault only this amount hits.
    await withRefusal(t, { table: 'refunds', on: 'insert', when: 'new.amount = 4444' }, async () => {
      const results = await Promise.all(payments.map((id, n) => refund(id, [1000, 4444, 2000][n]!)));
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 503, 200],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await refundXmins([payments[0]!, payments[2]!]);
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
      assert.equal((await balanceOf(t, m, w.wallet.id)).available.deposit, 10_000 - 4444);
    });
    await assertLedgerSound(t);
  });
});
