// Card rails (spec "VirtualDebitCard", "Payments"; docs/adr/0010-one-process-five-listeners.md, docs/payments.md#payments-in-detail): the single-use virtual
// debit card on the secure listener, the sandbox card network, the gift flow (spec "Payment
// intents" create rule 5) and the wallet scan-and-pay flow, end to end.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { isLuhnValid } from '../../providers/card-issuing.ts';
import { kycApplication, webhookBody } from '../../test/fixtures.ts';
import { createTestApp, LOCAL_RECEIVERS, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet } from '../../test/money.ts';
import { startReceiver, type Receiver } from '../../test/receiver.ts';

const DAY = 86_400_000;
const ADDRESS = {
  street: '1 Main St',
  street2: 'Suite 4',
  city: 'Springfield',
  state: 'IL',
  postalCode: '62701',
  country: 'US',
};

// ----- helpers ------------------------------------------------------------------------------

async function createIntent(t: TestApp, m: Merchant, attributes: Record<string, unknown>) {
  const res = await t.request('POST', '/api/v1/payment-intents', {
    as: m,
    body: { data: { type: 'CreatePaymentIntent', attributes } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data as { id: string; attributes: Record<string, any> };
}

const authorize = (t: TestApp, m: Merchant, intentId: string, amount: number) =>
  t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
    as: m,
    body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID() } } },
  });

async function authorized(
  t: TestApp,
  m: Merchant,
  intentAttributes: Record<string, unknown>,
  amount = intentAttributes.amount as number,
) {
  const intent = await createIntent(t, m, intentAttributes);
  const res = await authorize(t, m, intent.id, amount);
  assert.equal(res.status, 201, res.raw);
  return { payment: res.body.included[0], id: res.body.included[0].id as string, intentId: intent.id };
}

async function readCard(t: TestApp, m: Merchant | undefined, id: string) {
  const res = await t.card.inject({ method: 'GET', url: `/api/v1/payments/${id}/card`, headers: m?.headers ?? {} });
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), raw: res.body };
}

const network = (t: TestApp, m: Merchant, id: string, step: 'auth' | 'capture' | 'auth-capture', amount?: unknown) =>
  t.request('POST', `/api/v1/simulation/${id}/card/${step}`, {
    as: m,
    ...(amount !== undefined ? { body: { data: { type: 'CardNetworkEvent', attributes: { amount } } } } : {}),
  });

const getPayment = async (t: TestApp, m: Merchant, id: string) => {
  const res = await t.request('GET', `/api/v1/payments/${id}`, { as: m });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.attributes as Record<string, any>;
};
const capture = (t: TestApp, m: Merchant, id: string, amount: number) =>
  t.request('POST', `/api/v1/payments/${id}/capture`, {
    as: m,
    body: { data: { type: 'CapturePayment', attributes: { amount } } },
  });
const cancel = (t: TestApp, m: Merchant, id: string) => t.request('POST', `/api/v1/payments/${id}/cancel`, { as: m });
const refund = (t: TestApp, m: Merchant, id: string, amount: number) =>
  t.request('POST', `/api/v1/payments/${id}/refund`, {
    as: m,
    body: { data: { type: 'Refund', attributes: { amount, idempotencyKey: randomUUID() } } },
  });

async function createGift(t: TestApp, m: Merchant, amount: number): Promise<string> {
  const res = await t.request('POST', '/api/v1/simulation/gifts', {
    as: m,
    body: { data: { type: 'Gift', attributes: { amount } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}
async function giftOf(t: TestApp, m: Merchant, lookUpId: string) {
  const res = await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: m });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.attributes as { available: number; originalAmount: number };
}

async function cardReads(t: TestApp, paymentId: string): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(
    await t.ctx.db.execute(sql`select count(*) as n from card_reads where payment_id = ${paymentId}`),
  );
  return Number(row!.n);
}

async function clientLedger(t: TestApp, m: Merchant, code: string): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(
    await t.ctx.db.execute(
      sql`select coalesce(sum(p.amount), 0) as n from ledger_postings p join ledger_accounts a on a.id = p.account_id
          where a.owner_type = 'client' and a.owner_id = ${m.clientId} and a.code = ${code}`,
    ),
  );
  return Number(row!.n);
}
const money = async (t: TestApp, m: Merchant) => ({
  cardNetwork: await clientLedger(t, m, 'external.card_network'),
  settlement: await clientLedger(t, m, 'merchant.settlement'),
  bank: await clientLedger(t, m, 'external.bank'),
});

async function eventsOf(t: TestApp, m: Merchant): Promise<Receiver> {
  const rx = await startReceiver();
  const res = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url: rx.url, topics: ['*'] }) });
  assert.equal(res.status, 201, res.raw);
  return rx;
}
async function topicsOf(t: TestApp, rx: Receiver, resourceId: string): Promise<{ topic: string; status?: string }[]> {
  await t.ctx.webhooks.runOnce();
  return rx.received
    .map((r) => JSON.parse(r.body))
    .filter((e) => e.included[0]?.id === resourceId)
    .sort((a, b) => (a.data.id < b.data.id ? -1 : 1))
    .map((e) => ({ topic: e.data.attributes.topic, status: e.included[0].attributes.status }));
}

/** A card payment's events: created as Created, captured (on the network) as Sent, nothing else in between. */
function assertCardEvents(events: { topic: string; status?: string }[]) {
  assert.deepEqual(events[0], { topic: 'PaymentCreated', status: 'Created' });
  assert.deepEqual(events.at(-1), { topic: 'PaymentCaptured', status: 'Sent' });
  assert.ok(
    events.slice(1, -1).every((e) => e.topic === 'PaymentUpdated' && e.status === 'Created'),
    JSON.stringify(events),
  );
}

// ----- card rails ---------------------------------------------------------------------------

describe('card rails: the virtual debit card', () => {
  let t: TestApp;
  let cm: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    cm = await t.createMerchant({ rails: 'card' });
    other = await t.createMerchant({ rails: 'card' });
  });
  after(() => t.close());

  test('authorize issues a single-use card: the payment is Created on rail card with links.virtualDebitCard on the secure listener; the wallet money is reserved', async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const { payment, id } = await authorized(t, cm, { amount: 2000, walletId: wallet.id, billingAddress: ADDRESS });
    assert.equal(payment.attributes.status, 'Created');
    assert.equal(payment.attributes.rail, 'card');
    assert.equal(payment.links.virtualDebitCard, `http://card.test/api/v1/payments/${id}/card`);
    assert.equal(payment.links.self, `http://api.test/api/v1/payments/${id}`);
    const b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 2000);
    assert.equal(b.available.deposit, 3000);
    await assertLedgerSound(t);
  });

  test('the issuer is asked outside the transaction: down, authorize is 503 and the money stays with the open attempt; a retry after its lease gets the card asked for first', async () => {
    let down = true;
    const asked: string[] = [];
    const real = t.ctx.providers.cardIssuer;
    const ft = await createTestApp({
      providers: {
        cardIssuer: {
          issue: async (r) => {
            asked.push(r.reference);
            if (down) throw new Error('issuer timeout');
            return real.issue(r);
          },
        },
      },
    });
    try {
      const fm = await ft.createMerchant({ rails: 'card' });
      const { wallet } = await fundedWallet(ft, fm, 5000);
      const intent = await createIntent(ft, fm, { amount: 1200, walletId: wallet.id });
      const key = randomUUID();
      const body = { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1200, idempotencyKey: key } } };
      const failed = await ft.request('POST', `/api/v1/payment-intents/${intent.id}/authorize`, { as: fm, body });
      assert.equal(failed.status, 503, failed.raw);
      assert.equal(errorsOf(failed)[0]!.code, 'ServiceUnavailable');
      assert.equal((await balanceOf(ft, fm, wallet.id)).reserved.total, 1200, 'reserved once, for the open attempt');
      const early = await ft.request('POST', `/api/v1/payment-intents/${intent.id}/authorize`, { as: fm, body });
      assert.equal(early.status, 409, 'the attempt still holds its lease');
      down = false;
      ft.clock.advance(16_000); // the lease (AUTHORIZATION_LEASE_MARGIN_MS, 15 s) runs out
      const done = await ft.request('POST', `/api/v1/payment-intents/${intent.id}/authorize`, { as: fm, body });
      assert.equal(done.status, 201, done.raw);
      assert.equal(asked.length, 2);
      assert.equal(asked[0], asked[1], 'asked again with the same reference');
      const card = await readCard(ft, fm, done.body.included[0].id);
      assert.equal(card.status, 200, card.raw);
      assert.deepEqual(
        { number: card.body.data.attributes.number, cvc: card.body.data.attributes.cvc },
        await real
          .issue({ reference: asked[0]!, amount: 1200, now: ft.clock.now() })
          .then((c) => ({ number: c.number, cvc: c.cvc })),
        'the card the issuer gives for that reference',
      );
      assert.equal((await balanceOf(ft, fm, wallet.id)).reserved.total, 1200);
      await assertLedgerSound(ft);
    } finally {
      await ft.close();
    }
  });

  test('reading it: a Luhn-valid 16-digit number, expiry, cvc and the intent billing address; no-store; sealed at rest; every read recorded', async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const { id } = await authorized(t, cm, { amount: 1500, walletId: wallet.id, billingAddress: ADDRESS });
    const res = await readCard(t, cm, id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['content-type'], 'application/vnd.api+json');
    const card = res.body.data;
    assert.equal(card.type, 'VirtualDebitCard');
    const a = card.attributes;
    assert.match(a.number, /^\d{16}$/);
    assert.ok(isLuhnValid(a.number), `${a.number} passes the Luhn check`);
    assert.match(a.expirationMonth, /^(0[1-9]|1[0-2])$/);
    assert.match(a.expirationYear, /^\d{4}$/);
    const now = t.clock.now();
    assert.ok(
      Number(a.expirationYear) * 12 + Number(a.expirationMonth) > now.getUTCFullYear() * 12 + now.getUTCMonth() + 1,
      'not expired',
    );
    assert.match(a.cvc, /^\d{3}$/);
    assert.deepEqual(a.billingAddress, ADDRESS);
    assert.equal(await cardReads(t, id), 1);

    const again = await readCard(t, cm, id);
    assert.deepEqual(again.body.data, card, 'the same card on every read');
    assert.equal(await cardReads(t, id), 2, 'every read is recorded');

    // At rest, the number and cvc are sealed.
    const rows = rowsOf<{ j: string; number_sealed: string; cvc_sealed: string; last4: string }>(
      await t.ctx.db.execute(
        sql`select row_to_json(v)::text as j, v.number_sealed, v.cvc_sealed, v.last4 from virtual_cards v where v.payment_id = ${id}`,
      ),
    );
    assert.equal(rows.length, 1);
    assert.ok(!rows[0]!.j.includes(a.number), 'the number is not stored in clear');
    assert.notEqual(rows[0]!.number_sealed, a.number);
    assert.notEqual(rows[0]!.cvc_sealed, a.cvc);
    assert.equal(rows[0]!.last4, a.number.slice(-4));

    // Single use: another payment has another card. Without an intent billing address, the
    // address of the user's KYC application.
    const second = await authorized(t, cm, { amount: 100, walletId: wallet.id });
    const other2 = await readCard(t, cm, second.id);
    assert.equal(other2.status, 200);
    assert.notEqual(other2.body.data.attributes.number, a.number);
    assert.notEqual(other2.body.data.id, card.id);
    assert.deepEqual(
      other2.body.data.attributes.billingAddress,
      kycApplication('x@example.com').data.attributes.address,
    );
    assert.deepEqual(other2.body.data.relationships, {
      payment: { data: { type: 'Payment', id: second.id } },
      paymentIntent: { data: { type: 'PaymentIntent', id: second.intentId } },
    });
  });

  test("only the secure listener serves it, to the payment's merchant: 401 without credentials, 404 PaymentNotFound for another merchant (not recorded)", async () => {
    const { wallet } = await fundedWallet(t, cm, 1000);
    const { id } = await authorized(t, cm, { amount: 500, walletId: wallet.id });
    const onApi = await t.request('GET', `/api/v1/payments/${id}/card`, { as: cm });
    assert.equal(onApi.status, 404, 'the API listener does not serve card data');
    assert.ok(!onApi.raw.includes('"number"'));
    const anonymous = await readCard(t, undefined, id);
    assert.equal(anonymous.status, 401);
    const theirs = await readCard(t, other, id);
    assert.equal(theirs.status, 404);
    assert.equal(errorsOf(theirs as never)[0]!.code, 'PaymentNotFound');
    const unknown = await readCard(t, cm, randomUUID());
    assert.equal(unknown.status, 404);
    assert.equal(errorsOf(unknown as never)[0]!.code, 'PaymentNotFound');
    assert.equal((await readCard(t, cm, 'nope')).status, 400);
    assert.equal(await cardReads(t, id), 0, 'refused reads reveal nothing and record nothing');
  });

  test('readable only while the payment is Created (400 IllegalOperation after); a bank-rail payment has no card (404 CardNotFound)', async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const used = await authorized(t, cm, { amount: 1000, walletId: wallet.id });
    assert.equal((await network(t, cm, used.id, 'auth-capture')).status, 200);
    const afterCapture = await readCard(t, cm, used.id);
    assert.equal(afterCapture.status, 400);
    assert.equal(errorsOf(afterCapture as never)[0]!.code, 'IllegalOperation');
    assert.ok(!afterCapture.raw.includes('"number"'));
    const canceled = await authorized(t, cm, { amount: 1000, walletId: wallet.id });
    assert.equal((await readCard(t, cm, canceled.id)).status, 200);
    assert.equal((await cancel(t, cm, canceled.id)).status, 200);
    const afterCancel = await readCard(t, cm, canceled.id);
    assert.equal(afterCancel.status, 400);
    assert.equal(errorsOf(afterCancel as never)[0]!.code, 'IllegalOperation');

    const bm = await t.createMerchant();
    const bw = await fundedWallet(t, bm, 1000);
    const bank = await authorized(t, bm, { amount: 500, walletId: bw.wallet.id });
    assert.match(
      bank.payment.links.virtualDebitCard,
      /\/api\/v1\/payments\/[^/]+\/card$/,
      'Accrue requires the link on every payment',
    );
    const none = await readCard(t, bm, bank.id);
    assert.equal(none.status, 404);
    assert.equal(errorsOf(none as never)[0]!.code, 'CardNotFound');
  });

  test('the capture endpoint is refused for card rails (402 IllegalOperation: the capture fails); automatic capture leaves card payments to the network', async () => {
    const { wallet } = await fundedWallet(t, cm, 3000);
    const { id } = await authorized(t, cm, { amount: 1000, walletId: wallet.id });
    const res = await capture(t, cm, id, 1000);
    assert.equal(res.status, 402);
    assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation');
    assert.equal((await getPayment(t, cm, id)).status, 'Created');
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 1000);

    const am = await t.createMerchant({ rails: 'card', captureMode: 'automatic' });
    const aw = await fundedWallet(t, am, 1000);
    const auto = await authorized(t, am, { amount: 700, walletId: aw.wallet.id });
    assert.equal(auto.payment.attributes.status, 'Created', 'the card must still be readable');
    assert.equal((await readCard(t, am, auto.id)).status, 200);
    await assertLedgerSound(t);
  });
});

describe('card rails: the sandbox card network', () => {
  let t: TestApp;
  let cm: Merchant;
  let other: Merchant;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    cm = await t.createMerchant({ rails: 'card' });
    other = await t.createMerchant({ rails: 'card' });
    rx = await eventsOf(t, cm);
  });
  after(async () => {
    await rx.close();
    await t.close();
  });

  test('auth up to the payment amount (402 over), capture up to what was authorized (402 over); capture settles Created → Sent, money to the card network, the rest released', async () => {
    const { wallet } = await fundedWallet(t, cm, 5000);
    const before = await money(t, cm);
    const { id } = await authorized(t, cm, { amount: 3000, walletId: wallet.id });

    const early = await network(t, cm, id, 'capture');
    assert.equal(early.status, 400, 'nothing authorized on the card yet');
    assert.equal(errorsOf(early)[0]!.code, 'IllegalOperation');
    const tooMuch = await network(t, cm, id, 'auth', 3001);
    assert.equal(tooMuch.status, 402);
    assert.equal(errorsOf(tooMuch)[0]!.code, 'Failed');

    const auth = await network(t, cm, id, 'auth', 2000);
    assert.equal(auth.status, 200, auth.raw);
    assert.equal(auth.body.data.attributes.status, 'Created');
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 3000, 'an auth moves no money yet');
    const beyond = await network(t, cm, id, 'auth', 1001);
    assert.equal(beyond.status, 402, 'at most the payment amount in all');
    const overCapture = await network(t, cm, id, 'capture', 2001);
    assert.equal(overCapture.status, 402);
    assert.equal(errorsOf(overCapture)[0]!.code, 'Failed');
    assert.equal((await getPayment(t, cm, id)).status, 'Created');

    const cap = await network(t, cm, id, 'capture', 1500);
    assert.equal(cap.status, 200, cap.raw);
    assert.equal(cap.body.data.attributes.status, 'Sent');
    assert.equal(cap.body.data.attributes.capturedAmount, 1500);
    const b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 0, 'the uncaptured 1500 is released');
    assert.equal(b.available.deposit, 3500);
    const after = await money(t, cm);
    assert.equal(after.cardNetwork - before.cardNetwork, 1500, 'the money went to the card network');
    assert.equal(after.settlement, before.settlement);
    assert.equal(after.bank, before.bank);

    // Settled: nothing more happens on the card or the bank.
    for (const step of ['auth', 'capture', 'auth-capture'] as const) {
      const res = await network(t, cm, id, step);
      assert.equal(res.status, 400, step);
      assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation');
    }
    t.clock.advance(1000);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal((await getPayment(t, cm, id)).status, 'Sent');
    assert.equal(errorsOf(await cancel(t, cm, id))[0]!.code, 'IllegalOperation');
    assertCardEvents(await topicsOf(t, rx, id));

    // Refunds come back from the card network to the wallet.
    const r1 = await refund(t, cm, id, 500);
    assert.equal(r1.status, 200, r1.raw);
    assert.equal(r1.body.included[0].attributes.returned.deposit, 500);
    assert.equal((await refund(t, cm, id, 1000)).status, 200);
    assert.equal((await getPayment(t, cm, id)).status, 'Returned');
    assert.equal((await balanceOf(t, cm, wallet.id)).available.deposit, 5000);
    assert.equal((await money(t, cm)).cardNetwork, before.cardNetwork);
    await assertLedgerSound(t);
  });

  test('auth-capture: both steps at once, by default for the whole amount; a linked-account part is pulled from the bank', async () => {
    const { wallet } = await fundedWallet(t, cm, 1000);
    const before = await money(t, cm);
    const { id } = await authorized(t, cm, { amount: 1200, walletId: wallet.id });
    const res = await network(t, cm, id, 'auth-capture');
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Sent');
    assert.equal(res.body.data.attributes.capturedAmount, 1200);
    assert.equal((await balanceOf(t, cm, wallet.id)).total.total, 0);
    const after = await money(t, cm);
    assert.equal(after.cardNetwork - before.cardNetwork, 1200);
    assert.equal(before.bank - after.bank, 200);
    const partial = await authorized(t, cm, { amount: 300, walletId: (await fundedWallet(t, cm, 1000)).wallet.id });
    const p = await network(t, cm, partial.id, 'auth-capture', 250);
    assert.equal(p.status, 200, p.raw);
    assert.equal(p.body.data.attributes.capturedAmount, 250);
    await assertLedgerSound(t);
  });

  test("a bank-rail payment has no card (400 IllegalOperation); another merchant's payment is 404 PaymentNotFound; bodies are validated", async () => {
    const { wallet } = await fundedWallet(t, cm, 2000);
    const { id } = await authorized(t, cm, { amount: 1000, walletId: wallet.id });
    for (const step of ['auth', 'capture', 'auth-capture'] as const) {
      const res = await network(t, other, id, step);
      assert.equal(res.status, 404, step);
      assert.equal(errorsOf(res)[0]!.code, 'PaymentNotFound');
    }
    for (const amount of [0, -1, 1.5, '100'])
      assert.equal((await network(t, cm, id, 'auth', amount)).status, 400, String(amount));
    const extra = await t.request('POST', `/api/v1/simulation/${id}/card/auth`, {
      as: cm,
      body: { data: { type: 'CardNetworkEvent', attributes: { amount: 10, currency: 'USD' } } },
    });
    assert.equal(extra.status, 400);
    assert.equal((await getPayment(t, cm, id)).status, 'Created');
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 1000);

    const bm = await t.createMerchant();
    const bw = await fundedWallet(t, bm, 1000);
    const bank = await authorized(t, bm, { amount: 500, walletId: bw.wallet.id });
    for (const step of ['auth', 'capture', 'auth-capture'] as const) {
      const res = await network(t, bm, bank.id, step);
      assert.equal(res.status, 400, step);
      assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation');
    }
    assert.equal((await getPayment(t, bm, bank.id)).status, 'Created');
  });

  test('before capture, cancel releases the reservation (even after a network auth), and so does expiry after 7 days', async () => {
    const { wallet } = await fundedWallet(t, cm, 3000);
    const before = await money(t, cm);
    const c = await authorized(t, cm, { amount: 1000, walletId: wallet.id });
    await network(t, cm, c.id, 'auth', 1000);
    const res = await cancel(t, cm, c.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.equal(errorsOf(await network(t, cm, c.id, 'capture'))[0]!.code, 'IllegalOperation');
    let b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 3000);

    const e = await authorized(t, cm, { amount: 2000, walletId: wallet.id });
    assert.equal((await balanceOf(t, cm, wallet.id)).reserved.total, 2000);
    t.clock.advance(7 * DAY);
    await t.ctx.jobs.runOnce('authorization-expiry');
    assert.equal((await getPayment(t, cm, e.id)).status, 'Canceled');
    assert.equal((await readCard(t, cm, e.id)).status, 400, 'an expired card cannot be read');
    b = await balanceOf(t, cm, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 3000);
    assert.deepEqual(await money(t, cm), before);
    await assertLedgerSound(t);
  });
});

// ----- gifts --------------------------------------------------------------------------------

describe('card rails: the gift flow', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
    other = await t.createMerchant();
    rx = await eventsOf(t, m);
  });
  after(async () => {
    await rx.close();
    await t.close();
  });

  test("end to end: gift → remaining → intent by lookUpId (no KYC) → authorize (gift untouched) → the gift's card → card auth holds → capture spends → Sent", async () => {
    const lookUpId = await createGift(t, m, 5000);
    assert.match(lookUpId, /^\d{19}$/);
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 5000, originalAmount: 5000 });
    const before = await money(t, m);

    const intent = await createIntent(t, m, { amount: 3000, lookUpId, billingAddress: ADDRESS });
    assert.equal(intent.attributes.status, 'Promotable', 'gift intents skip KYC');
    assert.equal(intent.attributes.paymentMethod, 'Gift');
    assert.equal(intent.attributes.walletId, null);
    assert.equal(intent.attributes.balance.available, 5000);
    const auth = await authorize(t, m, intent.id, 3000);
    assert.equal(auth.status, 201, auth.raw);
    const payment = auth.body.included[0];
    const id = payment.id as string;
    assert.equal(payment.attributes.status, 'Created');
    assert.equal(payment.attributes.rail, 'gift');
    assert.equal(payment.links.virtualDebitCard, `http://card.test/api/v1/payments/${id}/card`);
    assert.deepEqual(
      await giftOf(t, m, lookUpId),
      { available: 5000, originalAmount: 5000 },
      'authorize does not debit the gift',
    );

    const card = await readCard(t, m, id);
    assert.equal(card.status, 200, card.raw);
    assert.equal(card.headers['cache-control'], 'no-store');
    assert.ok(isLuhnValid(card.body.data.attributes.number));
    assert.match(card.body.data.attributes.number, /^\d{16}$/);
    assert.deepEqual(card.body.data.attributes.billingAddress, ADDRESS);
    const [giftCard] = rowsOf<{ id: string; last4: string }>(
      await t.ctx.db.execute(
        sql`select v.id, v.last4 from virtual_cards v join gifts g on g.id = v.gift_id where g.look_up_id = ${lookUpId}`,
      ),
    );
    assert.equal(card.body.data.id, giftCard!.id, "it is the gift's card");
    assert.equal(card.body.data.attributes.number.slice(-4), giftCard!.last4);
    assert.deepEqual((await readCard(t, m, id)).body.data, card.body.data, 'the same card every time');
    assert.equal(await cardReads(t, id), 2);

    const held = await network(t, m, id, 'auth');
    assert.equal(held.status, 200, held.raw);
    assert.equal(held.body.data.attributes.status, 'Created');
    assert.deepEqual(
      await giftOf(t, m, lookUpId),
      { available: 2000, originalAmount: 5000 },
      'the card auth holds the gift',
    );
    const spent = await network(t, m, id, 'capture');
    assert.equal(spent.status, 200, spent.raw);
    assert.equal(spent.body.data.attributes.status, 'Sent');
    assert.equal(spent.body.data.attributes.capturedAmount, 3000);
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 2000, originalAmount: 5000 });
    assert.equal((await money(t, m)).cardNetwork - before.cardNetwork, 3000);
    assert.equal((await readCard(t, m, id)).status, 400, 'a used authorization has no readable card');
    assertCardEvents(await topicsOf(t, rx, id));

    // A refund goes back to the gift.
    const r = await refund(t, m, id, 1000);
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(r.body.included[0].attributes.returned, {
      linked: 0,
      deposit: 0,
      accrueReward: 0,
      merchantReward: 0,
      gift: 1000,
    });
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 3000, originalAmount: 5000 });
    assert.equal((await money(t, m)).cardNetwork - before.cardNetwork, 2000);
    await assertLedgerSound(t);
  });

  test("authorize over what the gift has left is 402 Failed; every payment of a gift uses the gift's one card; holds compete for what is left; cancel releases a hold", async () => {
    const lookUpId = await createGift(t, m, 1000);
    const a = await createIntent(t, m, { amount: 1500, lookUpId });
    const over = await authorize(t, m, a.id, 1001);
    assert.equal(over.status, 402, over.raw);
    assert.equal(errorsOf(over)[0]!.code, 'Failed');
    const pa = await authorize(t, m, a.id, 800);
    assert.equal(pa.status, 201, pa.raw);
    const aId = pa.body.included[0].id as string;
    const b = await authorized(t, m, { amount: 800, lookUpId });
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 1000, originalAmount: 1000 });
    const cardA = (await readCard(t, m, aId)).body.data;
    const cardB = (await readCard(t, m, b.id)).body.data;
    assert.equal(cardA.attributes.number, cardB.attributes.number, "the gift's card");
    assert.equal(cardA.id, cardB.id);

    assert.equal((await network(t, m, aId, 'auth')).status, 200);
    assert.equal((await giftOf(t, m, lookUpId)).available, 200);
    const short = await network(t, m, b.id, 'auth');
    assert.equal(short.status, 402, short.raw);
    assert.equal(errorsOf(short)[0]!.code, 'Failed');
    assert.equal((await getPayment(t, m, b.id)).status, 'Created');
    assert.equal((await giftOf(t, m, lookUpId)).available, 200);

    const canceled = await cancel(t, m, aId);
    assert.equal(canceled.status, 200, canceled.raw);
    assert.equal(canceled.body.data.attributes.status, 'Canceled');
    assert.equal(
      (await t.request('GET', `/api/v1/payment-intents/${a.id}`, { as: m })).body.data.attributes.status,
      'Canceled',
    );
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 1000, originalAmount: 1000 }, 'the hold is released');
    const done = await network(t, m, b.id, 'auth-capture');
    assert.equal(done.status, 200, done.raw);
    assert.equal(done.body.data.attributes.status, 'Sent');
    assert.equal((await giftOf(t, m, lookUpId)).available, 200);
    await assertLedgerSound(t);
  });

  test("a held gift is released when the authorization expires; gifts are the merchant's own", async () => {
    const lookUpId = await createGift(t, m, 900);
    const p = await authorized(t, m, { amount: 600, lookUpId });
    assert.equal((await network(t, m, p.id, 'auth', 400)).status, 200);
    assert.equal((await giftOf(t, m, lookUpId)).available, 500);
    t.clock.advance(7 * DAY);
    await t.ctx.jobs.runOnce('authorization-expiry');
    assert.equal((await getPayment(t, m, p.id)).status, 'Canceled');
    assert.deepEqual(await giftOf(t, m, lookUpId), { available: 900, originalAmount: 900 });

    const theirs = await t.request('POST', '/api/v1/payment-intents', {
      as: other,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, lookUpId } } },
    });
    assert.equal(theirs.status, 400);
    assert.equal(errorsOf(theirs)[0]!.code, 'LookUpIdNotFound');
    assert.equal((await readCard(t, other, p.id)).status, 404);
    await assertLedgerSound(t);
  });
});

// ----- scan-and-pay -------------------------------------------------------------------------

describe('scan-and-pay: a wallet barcode', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('end to end: barcode → intent (initiator Customer) → authorize → capture → settle → Sent; the barcode is then used up', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const before = await money(t, m);
    const bc = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`, { as: m });
    assert.equal(bc.status, 201, bc.raw);
    const lookUpId = bc.body.data.attributes.lookUpId as string;
    assert.match(lookUpId, /^\d{16}$/);
    const scanned = await t.request('GET', `/api/v1/wallets/barcode/${lookUpId}`, { as: m });
    assert.equal(scanned.status, 200, scanned.raw);
    assert.equal(scanned.body.data.id, wallet.id);

    const intent = await createIntent(t, m, { amount: 2000, lookUpId });
    assert.equal(intent.attributes.initiator, 'Customer');
    assert.equal(intent.attributes.paymentMethod, 'Wallet');
    assert.equal(intent.attributes.walletId, wallet.id);
    assert.equal(intent.attributes.status, 'Promotable');
    const auth = await authorize(t, m, intent.id, 2000);
    assert.equal(auth.status, 201, auth.raw);
    const id = auth.body.included[0].id as string;
    assert.equal(auth.body.included[0].attributes.status, 'Created');
    assert.equal(auth.body.included[0].attributes.rail, 'bank');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 2000);
    const cap = await capture(t, m, id, 2000);
    assert.equal(cap.status, 200, cap.raw);
    assert.equal(cap.body.data.attributes.status, 'Processing');
    t.clock.advance(1000);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal((await getPayment(t, m, id)).status, 'Sent');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 3000);
    assert.equal(b.reserved.total, 0);
    assert.equal((await money(t, m)).settlement - before.settlement, 2000);

    const reuse = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, lookUpId } } },
    });
    assert.equal(reuse.status, 400, reuse.raw);
    assert.equal(errorsOf(reuse)[0]!.code, 'WalletIdentifierExpired');
    await assertLedgerSound(t);
  });

  test('at a card-rail merchant the scanned wallet pays with a virtual card', async () => {
    const cm = await t.createMerchant({ rails: 'card' });
    const { wallet } = await fundedWallet(t, cm, 1000);
    const lookUpId = (await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`, { as: cm })).body.data
      .attributes.lookUpId;
    const { id, payment } = await authorized(t, cm, { amount: 600, lookUpId });
    assert.equal(payment.attributes.rail, 'card');
    assert.equal((await readCard(t, cm, id)).status, 200);
    assert.equal((await network(t, cm, id, 'auth-capture')).status, 200);
    assert.equal((await getPayment(t, cm, id)).status, 'Sent');
    assert.equal((await balanceOf(t, cm, wallet.id)).available.deposit, 400);
    await assertLedgerSound(t);
  });
});
