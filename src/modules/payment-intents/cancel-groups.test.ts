// Intent cancels arriving together run in one transaction (cancel-groups.ts), including an
// intent promoted to a payment (its payment canceled and its funds released in the same
// transaction); each still gets its own outcome, and a group the database refuses falls back to
// one transaction each. "One transaction" is observed directly: rows written by one
// transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { after, before, describe, test } from 'node:test';
import { rowsOf } from '../../db/open.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet, intentFor, paymentXmins } from '../../test/money.ts';

describe('payment intent cancels in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const cancel = (intentId: string) => t.request('POST', `/api/v1/payment-intents/${intentId}/cancel`, { as: m });
  const authorize = async (intentId: string, amount: number) => {
    const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount } } },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.included[0].id as string;
  };
  const intentXmins = async (ids: string[]) =>
    rowsOf<{ xmin: string }>(
      await t.ctx.db.execute(sql`select xmin::text as xmin from payment_intents where id in ${ids}`),
    );

  test('cancels sent together share one transaction, and each gets its own outcome', async () => {
    const w = await fundedWallet(t, m, 5000);
    const [open1, open2, twice, promoted, captured] = [
      await intentFor(t, m, w.wallet.id, 100),
      await intentFor(t, m, w.wallet.id, 200),
      await intentFor(t, m, w.wallet.id, 300),
      await intentFor(t, m, w.wallet.id, 1000),
      await intentFor(t, m, w.wallet.id, 400),
    ];
    const payment = await authorize(promoted, 1000);
    const spent = await authorize(captured, 400);
    const cap = await t.request('POST', `/api/v1/payments/${spent}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 400 } } },
    });
    assert.equal(cap.status, 200, cap.raw);
    assert.equal((await balanceOf(t, m, w.wallet.id)).reserved.total, 1000);
    const [r1, r2, first, second, rp, missing, rc] = await Promise.all([
      cancel(open1),
      cancel(open2),
      cancel(twice),
      cancel(twice),
      cancel(promoted),
      cancel(randomUUID()),
      cancel(captured),
    ]);
    for (const r of [r1, r2, first, rp]) {
      assert.equal(r!.status, 200, r!.raw);
      assert.equal(r!.body.data.attributes.status, 'Canceled');
    }
    assert.deepEqual(rp!.body.data.relationships.payments.data, [{ type: 'Payment', id: payment }]);
    // The same intent twice: the later finds it canceled, as after the first's commit.
    assert.equal(errorsOf(second!)[0]!.code, 'IllegalOperation');
    assert.equal(errorsOf(missing!)[0]!.code, 'PaymentIntentNotFound');
    assert.equal(errorsOf(rc!)[0]!.code, 'IllegalOperation');

    const xmins = [...(await intentXmins([open1, open2, twice, promoted])), ...(await paymentXmins(t, [payment]))];
    assert.equal(xmins.length, 5);
    assert.equal(
      new Set(xmins.map((r) => r.xmin)).size,
      1,
      'one transaction wrote the group, the promoted intent with its payment',
    );
    const payments = await t.request('GET', `/api/v1/payments/${payment}`, { as: m });
    assert.equal(payments.body.data.attributes.status, 'Canceled');
    const b = await balanceOf(t, m, w.wallet.id);
    assert.equal(b.reserved.total, 0, "the promoted intent's reservation is released");
    assert.equal(b.available.deposit, 5000 - 400);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each cancel runs again alone, and only the failing one fails', async () => {
    const w = await fundedWallet(t, m, 10_000);
    const intents = [
      await intentFor(t, m, w.wallet.id, 1000),
      await intentFor(t, m, w.wallet.id, 4444),
      await intentFor(t, m, w.wallet.id, 2000),
    ];
    // A fault only this amount hits.
    await withRefusal(t, { table: 'payment_intents', on: 'update', when: 'new.amount = 4444' }, async () => {
      const results = await Promise.all(intents.map((id) => cancel(id)));
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 503, 200],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await intentXmins([intents[0]!, intents[2]!]);
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
    });
  });
});
