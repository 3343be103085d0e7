// Accrue's payment operations beyond the checkout's core (docs/adr/0001-spec-then-accrue.md): PATCH a payment's
// reference, increase an authorization, complete a card payment, and the response members
// Accrue requires on the existing ones (links.self and included on capture and cancel, included
// on GET). Each through HTTP, with bad input, another merchant's ids and the ledger after.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createTestApp, dbKind, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet, intentFor } from '../../test/money.ts';

async function authorized(t: TestApp, m: Merchant, walletId: string, amount: number) {
  const intentId = await intentFor(t, m, walletId, amount);
  const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
    as: m,
    body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, reference: 'order-1' } } },
  });
  assert.equal(res.status, 201, res.raw);
  return { id: res.body.included[0].id as string, intentId };
}

const patch = (t: TestApp, m: Merchant, id: string, body: unknown) =>
  t.request('PATCH', `/api/v1/payments/${id}`, { as: m, body });
const increase = (t: TestApp, m: Merchant, id: string, amount: unknown, extra: Record<string, unknown> = {}) =>
  t.request('PATCH', `/api/v1/payments/${id}/increase-authorization`, {
    as: m,
    body: { data: { type: 'IncreaseAuthorization', attributes: { increase: amount, ...extra } } },
  });
const capture = (t: TestApp, m: Merchant, id: string, amount: number) =>
  t.request('POST', `/api/v1/payments/${id}/capture`, {
    as: m,
    body: { data: { type: 'CapturePayment', attributes: { amount } } },
  });
const cancel = (t: TestApp, m: Merchant, id: string, query = '') =>
  t.request('POST', `/api/v1/payments/${id}/cancel${query}`, { as: m });
const complete = (t: TestApp, m: Merchant, id: string, query = '') =>
  t.request('POST', `/api/v1/payments/${id}/complete${query}`, { as: m });
const payment = async (t: TestApp, m: Merchant, id: string) =>
  (await t.request('GET', `/api/v1/payments/${id}`, { as: m })).body.data;

/** The outbox's events about one resource, oldest first: topic and the resource as sent. */
async function eventsAbout(t: TestApp, m: Merchant, resourceId: string): Promise<{ topic: string; resource: any }[]> {
  const res = await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as: m });
  assert.equal(res.status, 200, res.raw);
  return (res.body.data as any[])
    .filter((e) => e.relationships.event.data.id === resourceId)
    .reverse()
    .map((e) => ({ topic: e.attributes.topic, resource: e.attributes.payload.included[0] }));
}

describe('PATCH /payments/{id}: the reference', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test("Accrue's bare body and the data-wrapped one both set it; null clears it; PaymentUpdated only when it changes", async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id } = await authorized(t, m, wallet.id, 500);
    const bare = await patch(t, m, id, { id, type: 'Payment', attributes: { reference: 'INV-7' } });
    assert.equal(bare.status, 200, bare.raw);
    assert.equal(bare.body.data.attributes.reference, 'INV-7');
    assert.equal(bare.body.data.attributes.status, 'Created');
    const wrapped = await patch(t, m, id, { data: { type: 'Payment', attributes: { reference: 'INV-8' } } });
    assert.equal(wrapped.status, 200, wrapped.raw);
    assert.equal((await payment(t, m, id)).attributes.reference, 'INV-8');
    const same = await patch(t, m, id, { data: { id, type: 'Payment', attributes: { reference: 'INV-8' } } });
    assert.equal(same.status, 200);
    const cleared = await patch(t, m, id, { type: 'Payment', attributes: { reference: null } });
    assert.equal(cleared.body.data.attributes.reference, null);
    const updates = (await eventsAbout(t, m, id))
      .filter((e) => e.topic === 'PaymentUpdated')
      .map((e) => e.resource.attributes.reference);
    assert.deepEqual(updates, ['INV-7', 'INV-8', null], 'one event per change, none for the same value');
    // Any status: a settled payment's reference can change too.
    await capture(t, m, id, 500);
    assert.equal((await patch(t, m, id, { type: 'Payment', attributes: { reference: 'late' } })).status, 200);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1500, 'no money moved');
    await assertLedgerSound(t);
  });

  test("an id in the body that is not the path's is 409 Conflict and nothing changes; bad bodies are 400 with pointers into the body as sent", async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const { id } = await authorized(t, m, wallet.id, 300);
    const wrong = randomUUID();
    for (const [body, pointer] of [
      [{ id: wrong, type: 'Payment', attributes: { reference: 'x' } }, '/id'],
      [{ data: { id: wrong, type: 'Payment', attributes: { reference: 'x' } } }, '/data/id'],
    ] as const) {
      const res = await patch(t, m, id, body);
      assert.equal(res.status, 409, res.raw);
      assert.equal(errorsOf(res)[0]!.code, 'Conflict');
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
    }
    const upper = await patch(t, m, id, {
      id: id.toUpperCase(),
      type: 'Payment',
      attributes: { reference: 'same id, other case' },
    });
    assert.equal(upper.status, 200, upper.raw);
    for (const [body, pointer] of [
      [{ type: 'Payment', attributes: { reference: 'x', amount: 5 } }, '/attributes'],
      [{ data: { type: 'Payment', attributes: { reference: 'x', amount: 5 } } }, '/data/attributes'],
      [{ type: 'Payment', attributes: {} }, '/attributes'],
      [{ type: 'Payment', attributes: { reference: '' } }, '/attributes/reference'],
      [{ type: 'Refund', attributes: { reference: 'x' } }, '/type'],
      [{ id: 'not-a-uuid', type: 'Payment', attributes: { reference: 'x' } }, '/id'],
    ] as const) {
      const res = await patch(t, m, id, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(
        errorsOf(res).some((e) => e.source?.pointer?.startsWith(pointer)),
        `${JSON.stringify(body)}: ${res.raw}`,
      );
    }
    assert.equal((await payment(t, m, id)).attributes.reference, 'same id, other case');
  });

  test("another merchant's payment, or an unknown one, is 404 PaymentNotFound, even with a mismatched body id", async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const { id } = await authorized(t, m, wallet.id, 300);
    for (const body of [
      { type: 'Payment', attributes: { reference: 'theirs' } },
      { id: randomUUID(), type: 'Payment', attributes: { reference: 'theirs' } },
    ]) {
      const res = await patch(t, other, id, body);
      assert.equal(res.status, 404, res.raw);
      assert.equal(errorsOf(res)[0]!.code, 'PaymentNotFound');
    }
    assert.equal((await patch(t, m, randomUUID(), { type: 'Payment', attributes: { reference: 'x' } })).status, 404);
    assert.equal((await payment(t, m, id)).attributes.reference, 'order-1');
  });
});

describe('PATCH /payments/{id}/increase-authorization', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('reserves more of the wallet (merchant rewards first): amount grows, links.self and the intent in included; PaymentUpdated; capture takes the new amount', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const { id, intentId } = await authorized(t, m, wallet.id, 1000); // deposit
    const r = await t.request('POST', '/api/v1/rewards', {
      as: m,
      body: {
        data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 200, idempotencyKey: randomUUID() } },
      },
    });
    assert.equal(r.status, 200, r.raw);
    const res = await increase(t, m, id, 500); // 200 merchant reward + 300 deposit
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.amount, 1500);
    assert.equal(res.body.data.attributes.status, 'Created');
    assert.equal(res.body.links.self, `http://api.test/api/v1/payments/${id}/increase-authorization`);
    assert.deepEqual(
      res.body.included.map((i: any) => [i.type, i.id]),
      [['PaymentIntent', intentId]],
    );
    let b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 1500);
    assert.equal(b.available.deposit, 1700);
    assert.equal(b.available.reward.merchant, 0);
    const events = await eventsAbout(t, m, id);
    assert.deepEqual(events.at(-1)!.topic, 'PaymentUpdated');
    assert.equal(events.at(-1)!.resource.attributes.amount, 1500);

    assert.equal((await capture(t, m, id, 1500)).status, 200);
    b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.total.total, 1700);
    await assertLedgerSound(t);
  });

  test('402 Failed when the wallet cannot cover the increase: nothing reserved, amount unchanged; the rest of the rules', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const { id } = await authorized(t, m, wallet.id, 800);
    const short = await increase(t, m, id, 201);
    assert.equal(short.status, 402, short.raw);
    assert.equal(errorsOf(short)[0]!.code, 'Failed');
    assert.equal(errorsOf(short)[0]!.source?.pointer, '/data/attributes/increase');
    assert.equal((await payment(t, m, id)).attributes.amount, 800);
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 800);
    for (const body of [
      { increase: 0 },
      { increase: -5 },
      { increase: 1.5 },
      { increase: '10' },
      {},
      { increase: 10, amount: 10 },
    ]) {
      const res = await t.request('PATCH', `/api/v1/payments/${id}/increase-authorization`, {
        as: m,
        body: { data: { type: 'IncreaseAuthorization', attributes: body } },
      });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    const wrongType = await t.request('PATCH', `/api/v1/payments/${id}/increase-authorization`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { increase: 10 } } },
    });
    assert.equal(wrongType.status, 400);
    const theirs = await increase(t, other, id, 100);
    assert.equal(theirs.status, 404);
    assert.equal(errorsOf(theirs)[0]!.code, 'PaymentNotFound');
    assert.equal((await increase(t, m, id, 200)).status, 200, 'exactly what is left');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 0);
    // Only Created: after a capture, or a cancel, 402 IllegalOperation.
    await capture(t, m, id, 1000);
    const late = await increase(t, m, id, 1);
    assert.equal(late.status, 402, 'the only failure status Accrue declares for it');
    assert.equal(errorsOf(late)[0]!.code, 'IllegalOperation');
    assert.equal((await payment(t, m, id)).attributes.amount, 1000);
    await assertLedgerSound(t);
  });

  test('a Closed wallet (402 WalletClosed) and a gift payment (402 IllegalOperation) cannot increase; nothing changes', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id } = await authorized(t, m, wallet.id, 500);
    await t.ctx.db.execute(sql`update wallets set status = 'Closed' where id = ${wallet.id}`);
    const closed = await increase(t, m, id, 100);
    assert.equal(closed.status, 402, closed.raw);
    assert.equal(errorsOf(closed)[0]!.code, 'WalletClosed');
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: m,
      body: { data: { type: 'Gift', attributes: { amount: 1000 } } },
    });
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 400, lookUpId: gift.body.data.id } } },
    });
    const auth = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 400 } } },
    });
    const onGift = await increase(t, m, auth.body.included[0].id, 100);
    assert.equal(onGift.status, 402, onGift.raw);
    assert.equal(errorsOf(onGift)[0]!.code, 'IllegalOperation');
    assert.equal((await payment(t, m, id)).attributes.amount, 500);
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 500);
    await assertLedgerSound(t);
  });

  test('with an idempotencyKey a retry replays the first answer and reserves once; the same key for another amount is 409', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id } = await authorized(t, m, wallet.id, 500);
    const key = randomUUID();
    const first = await increase(t, m, id, 300, { idempotencyKey: key });
    assert.equal(first.status, 200, first.raw);
    const again = await increase(t, m, id, 300, { idempotencyKey: key });
    assert.equal(again.raw, first.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const reused = await increase(t, m, id, 301, { idempotencyKey: key });
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 800, 'reserved once');
    await assertLedgerSound(t);
  });

  test('a card-rail payment: the card may then be authorized for the new amount', async () => {
    const cm = await t.createMerchant({ rails: 'card' });
    const { wallet } = await fundedWallet(t, cm, 2000);
    const { id } = await authorized(t, cm, wallet.id, 1000);
    assert.equal((await increase(t, cm, id, 250)).status, 200);
    const auth = await t.request('POST', `/api/v1/simulation/${id}/card/auth-capture`, { as: cm });
    assert.equal(auth.status, 200, auth.raw);
    assert.equal(auth.body.data.attributes.capturedAmount, 1250);
    assert.equal((await balanceOf(t, cm, wallet.id)).total.total, 750);
    await assertLedgerSound(t);
  });

  test('racing a capture or a cancel of the same payment: one order wins, the other sees its result; the ledger stays sound', {
    timeout: 120_000,
  }, async () => {
    // On PostgreSQL these are real races (intent, payment, then ledger locks); PGlite runs them one after the other.
    const rounds = dbKind === 'postgres' ? 12 : 4;
    for (let i = 0; i < rounds; i++) {
      const { wallet } = await fundedWallet(t, m, 2000);
      const { id } = await authorized(t, m, wallet.id, 1000);
      // The rival starts a little later in some rounds, so both orders happen.
      const lag = [0, 3, 10][Math.floor(i / 2) % 3]!;
      const rivalRequest = async () => {
        await new Promise((r) => setTimeout(r, lag));
        return i % 2 === 0 ? capture(t, m, id, 1000) : cancel(t, m, id);
      };
      const [inc, rival] = await Promise.all([increase(t, m, id, 400), rivalRequest()]);
      assert.equal(rival.status, 200, rival.raw);
      const p = (await payment(t, m, id)).attributes;
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.reserved.total, 0, 'nothing stays reserved after a capture or a cancel');
      if (inc.status === 200) {
        // The increase ran first: the capture took 1000 of 1400 and released 400; a cancel released all.
        assert.equal(p.amount, 1400);
        assert.equal(b.available.deposit, i % 2 === 0 ? 1000 : 2000);
      } else {
        assert.equal(inc.status, 402, inc.raw);
        assert.equal(errorsOf(inc)[0]!.code, 'IllegalOperation');
        assert.equal(p.amount, 1000);
        assert.equal(b.available.deposit, i % 2 === 0 ? 1000 : 2000);
      }
      assert.equal(p.status, i % 2 === 0 ? 'Processing' : 'Canceled');
    }
    await assertLedgerSound(t);
  });
});

describe('POST /payments/{id}/complete and the members Accrue requires on payment answers', () => {
  let t: TestApp;
  let m: Merchant;
  let cm: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    cm = await t.createMerchant({ rails: 'card' });
  });
  after(() => t.close());

  test('complete: a card payment captured on the network is complete already (200, unchanged); nothing captured is 402; bank rails 402 IllegalOperation; another merchant 404', async () => {
    const { wallet } = await fundedWallet(t, cm, 3000);
    const { id, intentId } = await authorized(t, cm, wallet.id, 1000);
    const early = await complete(t, cm, id);
    assert.equal(early.status, 402, early.raw);
    assert.equal(errorsOf(early)[0]!.code, 'Failed');
    assert.equal((await payment(t, cm, id)).attributes.status, 'Created');
    assert.equal(
      (
        await t.request('POST', `/api/v1/simulation/${id}/card/auth-capture`, {
          as: cm,
          body: { data: { type: 'SimulateCardAuthorizationCapture', attributes: { amount: 600 } } },
        })
      ).status,
      200,
    );
    const before = await eventsAbout(t, cm, id);
    const done = await complete(t, cm, id, '?include=paymentIntent');
    assert.equal(done.status, 200, done.raw);
    assert.equal(done.body.data.attributes.status, 'Sent');
    assert.equal(done.body.links.self, `http://api.test/api/v1/payments/${id}/complete?include=paymentIntent`);
    assert.deepEqual(
      done.body.included.map((i: any) => i.id),
      [intentId],
    );
    assert.deepEqual(await eventsAbout(t, cm, id), before, 'nothing changed, no event');
    const b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 0, 'the uncaptured 400 went back at capture');
    assert.equal(b.available.deposit, 2400);
    assert.equal((await complete(t, m, id)).status, 404);
    assert.equal((await complete(t, cm, id, '?include=refunds')).status, 400);

    const bw = await fundedWallet(t, m, 1000);
    const bank = await authorized(t, m, bw.wallet.id, 500);
    const res = await complete(t, m, bank.id);
    assert.equal(res.status, 402);
    assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation');
    const canceled = await authorized(t, cm, wallet.id, 100);
    await cancel(t, cm, canceled.id);
    assert.equal(errorsOf(await complete(t, cm, canceled.id))[0]!.code, 'IllegalOperation');
    await assertLedgerSound(t);
  });

  test('capture and cancel answer links.self and the intent in included; GET always has included; every payment carries links.virtualDebitCard (Accrue requires it)', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const a = await authorized(t, m, wallet.id, 700);
    const cap = await capture(t, m, a.id, 700);
    assert.equal(cap.body.links.self, `http://api.test/api/v1/payments/${a.id}/capture`);
    assert.deepEqual(
      cap.body.included.map((i: any) => i.id),
      [a.intentId],
    );
    assert.match(
      cap.body.data.links.virtualDebitCard,
      /\/api\/v1\/payments\/[^/]+\/card$/,
      'Accrue requires the link on every payment',
    );
    const c = await authorized(t, m, wallet.id, 300);
    const can = await cancel(t, m, c.id, '?include=paymentIntent');
    assert.equal(can.status, 200, can.raw);
    assert.equal(can.body.links.self, `http://api.test/api/v1/payments/${c.id}/cancel?include=paymentIntent`);
    assert.deepEqual(
      can.body.included.map((i: any) => [i.id, i.attributes.status]),
      [[c.intentId, 'Canceled']],
    );
    assert.equal((await cancel(t, m, c.id, '?include=captures')).status, 400);
    const got = await t.request('GET', `/api/v1/payments/${a.id}`, { as: m });
    assert.deepEqual(got.body.included, []);
    const direct = await t.request('POST', '/api/v1/payments', {
      as: m,
      body: { data: { type: 'CreatePayment', attributes: { walletId: wallet.id, amount: 100 } } },
    });
    assert.match(
      direct.body.data.links.virtualDebitCard,
      /\/api\/v1\/payments\/[^/]+\/card$/,
      'Accrue requires the link on every payment',
    );
  });
});
