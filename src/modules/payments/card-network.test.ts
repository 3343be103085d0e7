// The sandbox card network's records (Accrue's AuthorizationRequest and CardCapture): every
// authorization and capture the network answers is kept and listed, declines and refused
// captures included; Accrue's Simulate… type names and `authorizationRequestId`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet } from '../../test/money.ts';

async function authorizedOn(t: TestApp, m: Merchant, attributes: Record<string, unknown>, amount: number) {
  const intent = await t.request('POST', '/api/v1/payment-intents', {
    as: m,
    body: { data: { type: 'CreatePaymentIntent', attributes: { amount, ...attributes } } },
  });
  assert.equal(intent.status, 201, intent.raw);
  const res = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
    as: m,
    body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.included[0].id as string;
}

/** A new gift of `amount` cents: its id, and what it has left. */
async function newGift(t: TestApp, m: Merchant, amount: number) {
  const res = await t.request('POST', '/api/v1/simulation/gifts', {
    as: m,
    body: { data: { type: 'Gift', attributes: { amount } } },
  });
  assert.equal(res.status, 201, res.raw);
  const lookUpId = res.body.data.id as string;
  const available = async () =>
    (await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: m })).body.data.attributes.available as number;
  return { lookUpId, available };
}

const step = (
  t: TestApp,
  m: Merchant,
  id: string,
  path: 'auth' | 'capture' | 'auth-capture',
  type: string,
  attributes: Record<string, unknown> = {},
) => t.request('POST', `/api/v1/simulation/${id}/card/${path}`, { as: m, body: { data: { type, attributes } } });
const auths = (t: TestApp, m: Merchant, id: string, query = '') =>
  t.request('GET', `/api/v1/simulation/${id}/card/auth${query}`, { as: m });
const captures = (t: TestApp, m: Merchant, id: string, query = '') =>
  t.request('GET', `/api/v1/simulation/${id}/card/capture${query}`, { as: m });
const summary = (res: { body: any }) =>
  (res.body.data as any[]).map((r) => [r.attributes.status ?? r.attributes.success, r.attributes.amount]);

describe('the sandbox card network: authorization requests and captures', () => {
  let t: TestApp;
  let cm: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    cm = await t.createMerchant({ rails: 'card' });
    other = await t.createMerchant({ rails: 'card' });
  });
  after(() => t.close());

  test("each authorization is recorded (Approved, or Declined with its 402); a capture names one with authorizationRequestId; Accrue's type names", async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const id = await authorizedOn(t, cm, { walletId: wallet.id }, 3000);
    const first = await step(t, cm, id, 'auth', 'SimulateCardAuthorization', { amount: 1000 });
    assert.equal(first.status, 200, first.raw);
    const request = first.body.included[0];
    assert.equal(request.type, 'AuthorizationRequest');
    assert.deepEqual(
      { ...request.attributes, createdAt: undefined, updatedAt: undefined },
      {
        paymentId: id,
        walletId: wallet.id,
        status: 'Approved',
        amount: 1000,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    t.clock.advance(1000);
    const declined = await step(t, cm, id, 'auth', 'SimulateCardAuthorization', { amount: 2001 });
    assert.equal(declined.status, 402, declined.raw);
    assert.equal(errorsOf(declined)[0]!.code, 'Failed');
    t.clock.advance(1000);
    assert.equal((await step(t, cm, id, 'auth', 'CardNetworkEvent', { amount: 500 })).status, 200);
    const list = await auths(t, cm, id);
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(
      summary(list),
      [
        ['Approved', 500],
        ['Declined', 2001],
        ['Approved', 1000],
      ],
      'newest first',
    );
    assert.equal(list.body.meta.total, 3);
    const paged = await auths(t, cm, id, '?page[limit]=1&page[offset]=1');
    assert.deepEqual(summary(paged), [['Declined', 2001]]);
    assert.equal(
      paged.body.links.next,
      `http://api.test/api/v1/simulation/${id}/card/auth?page[limit]=1&page[offset]=2`,
    );
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 3000, 'a decline moves nothing');

    // The capture's type names: its own, not the authorization's.
    assert.equal((await step(t, cm, id, 'capture', 'SimulateCardAuthorization', { amount: 100 })).status, 400);
    const unknownRequest = await step(t, cm, id, 'capture', 'SimulateCardCapture', {
      amount: 100,
      authorizationRequestId: randomUUID(),
    });
    assert.equal(unknownRequest.status, 400);
    assert.equal(errorsOf(unknownRequest)[0]!.source?.pointer, '/data/attributes/authorizationRequestId');
    const declinedId = (list.body.data as any[]).find((r) => r.attributes.status === 'Declined').id;
    assert.equal(
      (await step(t, cm, id, 'capture', 'SimulateCardCapture', { amount: 100, authorizationRequestId: declinedId }))
        .status,
      400,
      'not an Approved one',
    );
    assert.equal((await captures(t, cm, id)).body.meta.total, 0, 'bad input writes nothing');

    const cap = await step(t, cm, id, 'capture', 'SimulateCardCapture', {
      amount: 1200,
      authorizationRequestId: request.id,
    });
    assert.equal(cap.status, 200, cap.raw);
    assert.equal(cap.body.data.attributes.status, 'Sent');
    const c = cap.body.included[0];
    assert.equal(c.type, 'Capture');
    assert.deepEqual(
      { ...c.attributes, createdAt: undefined, updatedAt: undefined, capturedAt: undefined },
      {
        id: c.id,
        paymentId: id,
        amount: 1200,
        success: true,
        method: 'VirtualDebitCard',
        reference: null,
        authorizationRequestId: request.id,
        capturedAt: undefined,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    const listed = await captures(t, cm, id, '?include=payment');
    assert.deepEqual(listed.body.data, [c]);
    assert.deepEqual(
      listed.body.included.map((p: any) => [p.type, p.id]),
      [['Payment', id]],
    );
    const b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 3800);
    await assertLedgerSound(t);
  });

  test('a capture over what was authorized is refused and recorded (success false, 402); filter[success], filter[method], sort; include=captures on the payment list', async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const id = await authorizedOn(t, cm, { walletId: wallet.id }, 2000);
    assert.equal((await step(t, cm, id, 'auth', 'SimulateCardAuthorization', { amount: 1500 })).status, 200);
    t.clock.advance(1000);
    const over = await step(t, cm, id, 'capture', 'SimulateCardCapture', { amount: 1600 });
    assert.equal(over.status, 402, over.raw);
    assert.equal((await t.request('GET', `/api/v1/payments/${id}`, { as: cm })).body.data.attributes.status, 'Created');
    t.clock.advance(1000);
    const ok = await step(t, cm, id, 'capture', 'SimulateCardCapture', { amount: 900 });
    assert.equal(ok.status, 200, ok.raw);
    assert.deepEqual(summary(await captures(t, cm, id)), [
      [true, 900],
      [false, 1600],
    ]);
    assert.deepEqual(summary(await captures(t, cm, id, '?sort=amount')), [
      [true, 900],
      [false, 1600],
    ]);
    assert.deepEqual(summary(await captures(t, cm, id, '?sort=-amount')), [
      [false, 1600],
      [true, 900],
    ]);
    assert.deepEqual(summary(await captures(t, cm, id, '?filter[success]=false')), [[false, 1600]]);
    const refused = (await captures(t, cm, id, '?filter[success]=false')).body.data[0];
    assert.equal(refused.attributes.capturedAt, null);
    assert.deepEqual(summary(await captures(t, cm, id, '?filter[method]=BankRails')), []);
    assert.equal((await captures(t, cm, id, '?filter[method]=VirtualDebitCard')).body.meta.total, 2);
    const page = await t.request(
      'GET',
      `/api/v1/payments?include=captures&filter[paymentIntentId]=${(await t.request('GET', `/api/v1/payments/${id}`, { as: cm })).body.data.relationships.paymentIntent.data.id}`,
      { as: cm },
    );
    assert.deepEqual(
      page.body.included.filter((r: any) => r.type === 'Capture').map((r: any) => [r.id, r.attributes.amount]),
      [[ok.body.included[0].id, 900]],
      'include=captures lists the successful capture',
    );
    for (const q of [
      '?filter[method]=Card',
      '?filter[success]=maybe',
      '?sort=reference',
      '?include=wallet',
      '?filter[status]=Approved',
    ]) {
      assert.equal((await captures(t, cm, id, q)).status, 400, q);
    }
    assert.equal((await auths(t, cm, id, '?sort=amount')).status, 400);
    await assertLedgerSound(t);
  });

  test('cancel (and expiry) end the approved authorizations: Canceled', async () => {
    const { wallet } = await fundedWallet(t, cm, 2000);
    const id = await authorizedOn(t, cm, { walletId: wallet.id }, 1000);
    await step(t, cm, id, 'auth', 'SimulateCardAuthorization', { amount: 400 });
    assert.equal((await t.request('POST', `/api/v1/payments/${id}/cancel`, { as: cm })).status, 200);
    assert.deepEqual(summary(await auths(t, cm, id)), [['Canceled', 400]]);
    const late = await authorizedOn(t, cm, { walletId: wallet.id }, 600);
    await step(t, cm, late, 'auth', 'SimulateCardAuthorization', { amount: 600 });
    t.clock.advance(7 * 86_400_000);
    await t.ctx.jobs.runOnce('authorization-expiry');
    assert.deepEqual(summary(await auths(t, cm, late)), [['Canceled', 600]]);
    assert.equal((await balanceOf(t, cm, wallet.id)).available.deposit, 2000);
    await assertLedgerSound(t);
  });

  test("a canceled gift payment releases the network's hold as a release, not a capture (the chaos campaign counted it as one)", async () => {
    const gm = await t.createMerchant();
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: gm,
      body: { data: { type: 'Gift', attributes: { amount: 1000 } } },
    });
    const lookUpId = gift.body.data.id as string;
    const id = await authorizedOn(t, gm, { lookUpId }, 700);
    assert.equal((await step(t, gm, id, 'auth', 'SimulateCardAuthorization', { amount: 500 })).status, 200);
    assert.equal((await t.request('POST', `/api/v1/payments/${id}/cancel`, { as: gm })).status, 200);
    const entries = rowsOf<{ kind: string; postings: number }>(
      await t.ctx.db.execute(
        sql`select e.kind, (select count(*)::int from ledger_postings p where p.entry_id = e.id) as postings from ledger_entries e where e.ref_type = 'payment' and e.ref_id = ${id} order by e.created_at, e.kind`,
      ),
    );
    assert.deepEqual(entries, [
      { kind: 'gift.hold', postings: 2 },
      { kind: 'gift.release', postings: 2 },
    ]);
    assert.equal(
      (await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: gm })).body.data.attributes.available,
      1000,
    );
    await assertLedgerSound(t);
  });

  test('a gift payment: walletId null, a hold the gift cannot cover is Declined; bank rails list their one capture (BankRails, Direct); another merchant gets 404', async () => {
    const gm = await t.createMerchant();
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: gm,
      body: { data: { type: 'Gift', attributes: { amount: 1000 } } },
    });
    const lookUpId = gift.body.data.id as string;
    const a = await authorizedOn(t, gm, { lookUpId }, 800);
    const b = await authorizedOn(t, gm, { lookUpId }, 800);
    assert.equal((await step(t, gm, a, 'auth', 'SimulateCardAuthorization')).status, 200);
    const short = await step(t, gm, b, 'auth', 'SimulateCardAuthorization');
    assert.equal(short.status, 402, short.raw);
    const listed = await auths(t, gm, b);
    assert.deepEqual(summary(listed), [['Declined', 800]]);
    assert.equal(listed.body.data[0].attributes.walletId, null);
    assert.equal(
      (await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: gm })).body.data.attributes.available,
      200,
      'only the first hold',
    );

    const bm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, bm, 3000);
    const bank = await authorizedOn(t, bm, { walletId: wallet.id }, 700);
    assert.deepEqual((await captures(t, bm, bank)).body.data, [], 'not captured yet');
    await t.request('POST', `/api/v1/payments/${bank}/capture`, {
      as: bm,
      body: { data: { type: 'CapturePayment', attributes: { amount: 600 } } },
    });
    const bankCaptures = await captures(t, bm, bank);
    assert.deepEqual(
      bankCaptures.body.data.map((c: any) => [c.id, c.attributes.method, c.attributes.amount, c.attributes.success]),
      [[bank, 'BankRails', 600, true]],
    );
    assert.deepEqual((await auths(t, bm, bank)).body.data, [], 'a bank-rail payment has no card authorizations');
    const direct = await t.request('POST', '/api/v1/payments', {
      as: bm,
      body: { data: { type: 'CreatePayment', attributes: { walletId: wallet.id, amount: 100 } } },
    });
    assert.deepEqual(
      (await captures(t, bm, direct.body.data.id, '?filter[method]=Direct')).body.data.map(
        (c: any) => c.attributes.amount,
      ),
      [100],
    );

    for (const res of [
      await auths(t, other, a),
      await captures(t, other, a),
      await captures(t, other, bank),
      await auths(t, bm, randomUUID()),
    ]) {
      assert.equal(res.status, 404, res.raw);
      assert.equal(errorsOf(res)[0]!.code, 'NotFound'); // Accrue's code for the sandbox's card lists
    }
    await assertLedgerSound(t);
  });

  test('auth-capture is one step: a repeat answers the same outcome, concurrent ones move the money once; another amount is refused', async () => {
    const gm = await t.createMerchant();
    const { lookUpId, available } = await newGift(t, gm, 5000);
    const g = await authorizedOn(t, gm, { lookUpId }, 3923);
    const first = await step(t, gm, g, 'auth-capture', 'SimulateCardAuthorizationCapture');
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.body.data.attributes.status, 'Sent');
    assert.equal(first.body.included[1].attributes.authorizationRequestId, first.body.included[0].id);
    t.clock.advance(1000);
    const again = await step(t, gm, g, 'auth-capture', 'SimulateCardAuthorizationCapture');
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body, first.body, 'the same answer');
    assert.equal(await available(), 5000 - 3923, 'the gift paid once');
    assert.deepEqual(summary(await auths(t, gm, g)), [['Approved', 3923]]);
    assert.deepEqual(summary(await captures(t, gm, g)), [[true, 3923]]);
    const other = await step(t, gm, g, 'auth-capture', 'SimulateCardAuthorizationCapture', { amount: 100 });
    assert.equal(other.status, 400, other.raw);
    assert.equal(errorsOf(other)[0]!.code, 'IllegalOperation');

    // A wallet: two at once, and a repeat with the amount the first named.
    const { wallet } = await fundedWallet(t, cm, 3000);
    const w = await authorizedOn(t, cm, { walletId: wallet.id }, 2000);
    const both = await Promise.all([
      step(t, cm, w, 'auth-capture', 'CardNetworkEvent', { amount: 1500 }),
      step(t, cm, w, 'auth-capture', 'CardNetworkEvent', { amount: 1500 }),
    ]);
    assert.deepEqual(
      both.map((r) => r.status),
      [200, 200],
      both.map((r) => r.raw).join('\n'),
    );
    assert.deepEqual(both[1]!.body, both[0]!.body);
    const repeat = await step(t, cm, w, 'auth-capture', 'CardNetworkEvent', { amount: 1500 });
    assert.deepEqual(repeat.body, both[0]!.body);
    assert.equal(
      (await step(t, cm, w, 'auth-capture', 'CardNetworkEvent')).status,
      400,
      'all that is left is another request',
    );
    const b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.available.deposit, 1500, 'the wallet paid once; the rest was released');
    assert.equal(b.reserved.total, 0);
    assert.deepEqual(summary(await captures(t, cm, w)), [[true, 1500]]);
    await assertLedgerSound(t);
  });

  test('a failure between the authorization and the capture of auth-capture leaves no hold; the retry succeeds once', async () => {
    const gm = await t.createMerchant();
    const { lookUpId, available } = await newGift(t, gm, 5000);
    const g = await authorizedOn(t, gm, { lookUpId }, 3923);
    const { wallet } = await fundedWallet(t, cm, 3000);
    const w = await authorizedOn(t, cm, { walletId: wallet.id }, 2000);
    for (const id of [g, w]) {
      const failed = await withRefusal(
        t,
        { table: 'card_captures', on: 'insert', when: `new.payment_id = '${id}'` },
        () => step(t, id === g ? gm : cm, id, 'auth-capture', 'SimulateCardAuthorizationCapture'),
      );
      assert.equal(failed.status, 503, failed.raw);
    }
    assert.equal(await available(), 5000, 'no hold on the gift');
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 2000, 'the wallet as authorized');
    for (const [m, id] of [
      [gm, g],
      [cm, w],
    ] as const) {
      assert.deepEqual((await auths(t, m, id)).body.data, [], 'no authorization was kept');
      const p = await t.request('GET', `/api/v1/payments/${id}`, { as: m });
      assert.equal(p.body.data.attributes.status, 'Created');
    }
    await assertLedgerSound(t);

    t.clock.advance(1000);
    const retried = await step(t, gm, g, 'auth-capture', 'SimulateCardAuthorizationCapture');
    assert.equal(retried.status, 200, retried.raw);
    assert.equal(retried.body.data.attributes.capturedAmount, 3923);
    assert.equal(await available(), 5000 - 3923);
    const retriedWallet = await step(t, cm, w, 'auth-capture', 'SimulateCardAuthorizationCapture');
    assert.equal(retriedWallet.status, 200, retriedWallet.raw);
    assert.equal((await balanceOf(t, cm, wallet.id)).available.deposit, 1000);
    assert.deepEqual(summary(await auths(t, gm, g)), [['Approved', 3923]]);
    assert.deepEqual(summary(await captures(t, cm, w)), [[true, 2000]]);
    await assertLedgerSound(t);
  });
});
