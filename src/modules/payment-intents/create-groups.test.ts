// Intent creations arriving together are written by one statement (create-groups.ts); each
// still gets its own outcome, a group the database refuses falls back to one statement each,
// and a group whose outcome is unknown is not written again. "One statement" is observed
// directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { after, before, describe, test } from 'node:test';
import { rowsOf } from '../../db/open.ts';
import { withRefusal, writersOf } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { fundedWallet } from '../../test/money.ts';

describe('payment intent creations in groups', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const create = (m: Merchant, walletId: string, amount: number) =>
    t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount, walletId } } },
    });
  const intentsOfAmounts = async (walletId: string, amounts: number[]) =>
    rowsOf<{ n: number }>(
      await t.ctx.db.execute(
        sql`select count(*)::int as n from payment_intents where wallet_id = ${walletId} and amount in ${amounts}`,
      ),
    );

  test('creations sent together share one statement, each with its own intent, event and outcome', async () => {
    const m = await t.createMerchant();
    const a = await fundedWallet(t, m, 5000);
    const b = await fundedWallet(t, m, 300);
    const results = await Promise.all([
      create(m, a.wallet.id, 100),
      create(m, b.wallet.id, 200),
      create(m, randomUUID(), 300),
      create(m, a.wallet.id, 400),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      [201, 201, 404, 201],
      results.map((r) => r.raw).join('\n'),
    );
    assert.equal(errorsOf(results[2]!)[0]!.code, 'WalletIdentifierNotFound');
    const made = [results[0]!, results[1]!, results[3]!];
    // Each intent is its own, with its own wallet's balance block.
    assert.deepEqual(
      made.map((r) => [r.body.data.attributes.amount, r.body.data.attributes.walletId]),
      [
        [100, a.wallet.id],
        [200, b.wallet.id],
        [400, a.wallet.id],
      ],
    );
    assert.deepEqual(
      made.map((r) => r.body.data.attributes.balance.available),
      [5000, 300, 5000],
    );
    const ids = made.map((r) => r.body.data.id as string);
    assert.equal(new Set(ids).size, 3);
    const writers = await writersOf(t, 'payment_intents', ids);
    assert.equal(writers.length, 3);
    assert.equal(new Set(writers.map((w) => w.xmin)).size, 1, 'one statement wrote the group');
    const events = rowsOf<{ resourceId: string }>(
      await t.ctx.db.execute(
        sql`select resource_id as "resourceId" from events where topic = 'PaymentIntentCreated' and resource_id in ${ids}`,
      ),
    );
    assert.deepEqual(events.map((e) => e.resourceId).sort(), [...ids].sort(), 'one PaymentIntentCreated per intent');
    const list = await t.request('GET', '/api/v1/payment-intents', { as: m });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.meta.total, 3, "the list counters count each intent of the group's one statement");
    for (const r of made)
      assert.equal(
        (await t.request('GET', `/api/v1/payment-intents/${r.body.data.id}`, { as: m })).body.data.attributes.amount,
        r.body.data.attributes.amount,
      );
  });

  test('a group the database refuses: each creation is written again alone, and only the refused one fails', async () => {
    const m = await t.createMerchant();
    const w = await fundedWallet(t, m, 10_000);
    await withRefusal(t, { table: 'payment_intents', on: 'insert', when: 'new.amount = 4444' }, async () => {
      const results = await Promise.all([
        create(m, w.wallet.id, 1000),
        create(m, w.wallet.id, 4444),
        create(m, w.wallet.id, 2000),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        [201, 503, 201],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const writers = await writersOf(t, 'payment_intents', [results[0]!.body.data.id, results[2]!.body.data.id]);
      assert.equal(new Set(writers.map((r) => r.xmin)).size, 2, 'one statement each after the group failed');
    });
    assert.equal((await intentsOfAmounts(w.wallet.id, [4444]))[0]!.n, 0);
  });

  test('a group whose statement got no answer may have been written: none is written again, each gets 503', async () => {
    const m = await t.createMerchant();
    const w = await fundedWallet(t, m, 10_000);
    // 08006 (connection failure) is what a statement lost on the way ends in: its outcome is unknown.
    await withRefusal(
      t,
      { table: 'payment_intents', on: 'insert', when: 'new.amount = 5555', raise: "errcode = '08006'" },
      async () => {
        const results = await Promise.all([
          create(m, w.wallet.id, 1001),
          create(m, w.wallet.id, 5555),
          create(m, w.wallet.id, 2001),
        ]);
        assert.deepEqual(
          results.map((r) => r.status),
          [503, 503, 503],
        );
        for (const r of results) assert.equal(errorsOf(r)[0]!.code, 'ServiceUnavailable');
      },
    );
    assert.equal((await intentsOfAmounts(w.wallet.id, [1001, 5555, 2001]))[0]!.n, 0, 'not written again one by one');
  });
});
