// Authorizes arriving together run in one transaction (authorize-groups.ts); each still gets
// its own outcome, two of one wallet are planned on the balances the first leaves, and a group
// the database refuses falls back to one transaction each. "One transaction" is observed
// directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { webhookBody } from '../../test/fixtures.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type Response, type TestApp } from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  createWallet,
  fundedWallet,
  intentFor,
  paymentXmins,
} from '../../test/money.ts';
import { walletOfIntent } from './wallet-hints.ts';

describe('authorizes in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const intent = (walletId: string, amount: number) => intentFor(t, m, walletId, amount);
  const authorize = (intentId: string, attributes: Record<string, unknown>) =>
    t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes } },
    });
  const paymentOf = (r: Response) =>
    r.body.included[0] as { id: string; attributes: { status: string; amount: number } };
  const reserved = async (paymentId: string) =>
    rowsOf<{ sourcing: { deposit: number; linked: number } }>(
      await t.ctx.db.execute(sql`select sourcing from payments where id = ${paymentId}`),
    )[0]!.sourcing;

  test('authorizes sent together share one transaction, and each gets its own outcome', async () => {
    const hook = await t.request('POST', '/api/v1/webhooks', {
      as: m,
      body: webhookBody({ url: 'https://example.com/hook', topics: ['PaymentCreated', 'PaymentIntentUpdated'] }),
    });
    assert.equal(hook.status, 201, hook.raw);
    const a = await fundedWallet(t, m, 5000);
    const b = await fundedWallet(t, m, 5000);
    const noAccount = await createWallet(t, m, (await approvedUser(t, m)).id);
    const [a1, a2, b1, promoted, same, keyed, canceled, over, small, needsAction] = await Promise.all([
      intent(a.wallet.id, 3000),
      intent(a.wallet.id, 2500),
      intent(b.wallet.id, 1000),
      intent(b.wallet.id, 500),
      intent(b.wallet.id, 600),
      intent(b.wallet.id, 700),
      intent(b.wallet.id, 800),
      intent(b.wallet.id, 900),
      intent(b.wallet.id, 400),
      intent(noAccount.id, 100),
    ]);
    const earlier = await authorize(promoted, { amount: 500, idempotencyKey: 'grp-earlier' });
    assert.equal(earlier.status, 201, earlier.raw);
    assert.equal((await authorize(keyed, { amount: 700, idempotencyKey: 'grp-keyed' })).status, 201);
    assert.equal((await t.request('POST', `/api/v1/payment-intents/${canceled}/cancel`, { as: m })).status, 200);

    const [
      ra1,
      ra2,
      rb1,
      replay,
      again,
      reused,
      sameA,
      sameB,
      keyTwiceA,
      keyTwiceB,
      missing,
      illegal,
      tooMuch,
      action,
    ] = await Promise.all([
      authorize(a1, { amount: 3000, idempotencyKey: 'grp-a1' }),
      authorize(a2, { amount: 2500 }),
      authorize(b1, { amount: 1000, idempotencyKey: 'grp-b1' }),
      authorize(promoted, { amount: 500, idempotencyKey: 'grp-earlier' }),
      authorize(promoted, { amount: 500 }),
      authorize(keyed, { amount: 699, idempotencyKey: 'grp-keyed' }),
      authorize(same, { amount: 600 }),
      authorize(same, { amount: 600 }),
      authorize(over, { amount: 100, idempotencyKey: 'grp-twice' }),
      authorize(over, { amount: 100, idempotencyKey: 'grp-twice' }),
      authorize(randomUUID(), { amount: 100 }),
      authorize(canceled, { amount: 800 }),
      authorize(small, { amount: 401 }),
      authorize(needsAction, { amount: 100 }),
    ]);
    for (const r of [ra1, ra2, rb1]) assert.equal(r!.status, 201, r!.raw);
    // The replay is the first response byte for byte; without a key, the active payment (201:
    // Accrue declares no other success status for authorize).
    assert.equal(replay!.status, 201);
    assert.equal(replay!.headers['idempotent-replayed'], 'true');
    assert.equal(replay!.raw, earlier.raw);
    assert.equal(again!.status, 201, again!.raw);
    assert.equal(paymentOf(again!).id, paymentOf(earlier).id);
    assert.equal(errorsOf(reused!)[0]!.code, 'IdempotencyKeyReused');
    // One intent twice, one key twice: the later is concurrent with the earlier (409).
    assert.deepEqual([sameA!.status, errorsOf(sameB!)[0]?.code], [201, 'AlreadyExists']);
    assert.deepEqual([keyTwiceA!.status, errorsOf(keyTwiceB!)[0]?.code], [201, 'IdempotencyKeyInUse']);
    assert.equal(errorsOf(missing!)[0]!.code, 'PaymentIntentNotFound');
    assert.equal(errorsOf(illegal!)[0]!.code, 'IllegalOperation');
    assert.deepEqual([tooMuch!.status, errorsOf(tooMuch!)[0]?.code], [402, 'Failed']);
    // Runs alone after the group: the intent records that it requires action.
    assert.equal(action!.status, 402, action!.raw);
    assert.equal(
      (await t.request('GET', `/api/v1/payment-intents/${needsAction}`, { as: m })).body.data.attributes.status,
      'RequiresAction',
    );

    const written = [ra1, ra2, rb1, sameA, keyTwiceA].map((r) => paymentOf(r!).id);
    const rows = await paymentXmins(t, written);
    assert.equal(rows.length, 5);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    // Two authorizes of one wallet: the second was planned on what the first left (2,000 cents
    // of deposit money, the rest from the linked account).
    assert.deepEqual(
      [
        (await reserved(paymentOf(ra1!).id)).deposit,
        (await reserved(paymentOf(ra2!).id)).deposit,
        (await reserved(paymentOf(ra2!).id)).linked,
      ],
      [3000, 2000, 500],
    );
    const ba = await balanceOf(t, m, a.wallet.id);
    assert.equal(ba.available.deposit, 0);
    assert.equal(ba.reserved.total, 5000);
    assert.equal((await balanceOf(t, m, b.wallet.id)).reserved.total, 500 + 700 + 1000 + 600 + 100);
    // Each payment's events, each delivered to the webhook.
    const deliveries = rowsOf<{ resource_id: string; topic: string; n: number }>(
      await t.ctx.db.execute(sql`select e.resource_id, e.topic, count(d.id)::int as n from events e join event_deliveries d on d.event_id = e.id
        where e.resource_id in ${[...written, a1, a2, b1, same, over]} group by e.resource_id, e.topic`),
    );
    assert.equal(deliveries.length, 10, JSON.stringify(deliveries));
    assert.ok(deliveries.every((d) => d.n === 1));
    // The stored response of a grouped authorize replays it byte for byte.
    const replayed = await authorize(a1, { amount: 3000, idempotencyKey: 'grp-a1' });
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.equal(replayed.raw, ra1!.raw);
    await assertLedgerSound(t);
  });

  test('the wallet of each intent created here is remembered, so a group never waits on another group for it', async () => {
    // The scheduling itself is tested in db/groups.test.ts; this is what feeds it.
    const w = await fundedWallet(t, m, 1000);
    const id = await intent(w.wallet.id, 100);
    assert.equal(walletOfIntent(id), w.wallet.id);
    assert.equal(walletOfIntent(randomUUID()), undefined);
  });

  test('a group the database fails: each authorize runs again alone, and only the failing one fails', async () => {
    const w = await fundedWallet(t, m, 10_000);
    const intents = await Promise.all([1000, 6666, 2000].map((amount) => intent(w.wallet.id, amount)));
    // A fault only this amount hits.
    await withRefusal(t, { table: 'payments', on: 'insert', when: 'new.amount = 6666' }, async () => {
      const results = await Promise.all(
        intents.map((id, n) => authorize(id, { amount: [1000, 6666, 2000][n]!, idempotencyKey: `fault-${n}` })),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [201, 503, 201],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await paymentXmins(t, [paymentOf(results[0]!).id, paymentOf(results[2]!).id]);
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
      assert.equal((await balanceOf(t, m, w.wallet.id)).reserved.total, 3000);
    });
    await assertLedgerSound(t);
  });
});
