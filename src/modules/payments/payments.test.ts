// Payments (spec "Payment", "States and transitions > Payment", "Payments"; docs/adr/0002-wire-conventions.md, docs/adr/0004-idempotency-in-the-database.md, docs/adr/0003-double-entry-ledger.md, docs/payments.md#payments-in-detail): the state machine and what each transition does to the money, refunds, direct
// payments, settlement, authorization expiry, reads and lists. Authorize is used only to reach
// states (its own rules are tested with the intents).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { TestClock } from '../../clock.ts';
import { rowsOf } from '../../db/open.ts';
import { webhookBody } from '../../test/fixtures.ts';
import {
  BEFORE_THE_SUITE,
  createTestApp,
  LOCAL_RECEIVERS,
  createUser,
  errorsOf,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  createWallet,
  fundedWallet,
  linkAccount,
  paymentXmins,
} from '../../test/money.ts';
import { genericPlan } from '../../test/plans.ts';
import { startReceiver, type Receiver } from '../../test/receiver.ts';
import { SANDBOX_SETTLE_DELAY_MS, SETTLE_BATCH, SETTLE_BATCH_BEHIND, SETTLE_BEHIND_MS } from './domain.ts';
import { LOCK_ACTIVE_PAYMENTS, LOCK_PAYMENTS, PAYMENTS_OF_INTENTS } from './sql.ts';

const DAY = 86_400_000;
const ROUTING = '011000015';

// ----- helpers ------------------------------------------------------------------------------

async function authorized(
  t: TestApp,
  m: Merchant,
  walletId: string,
  amount: number,
  attributes: Record<string, unknown> = {},
  intentAmount = amount,
) {
  const intent = await t.request('POST', '/api/v1/payment-intents', {
    as: m,
    body: { data: { type: 'CreatePaymentIntent', attributes: { amount: intentAmount, walletId } } },
  });
  assert.equal(intent.status, 201, intent.raw);
  const res = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
    as: m,
    body: {
      data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID(), ...attributes } },
    },
  });
  assert.equal(res.status, 201, res.raw);
  return {
    intent: res.body.data,
    payment: res.body.included[0],
    id: res.body.included[0].id as string,
    intentId: intent.body.data.id as string,
  };
}

const capture = (t: TestApp, m: Merchant, id: string, amount: unknown) =>
  t.request('POST', `/api/v1/payments/${id}/capture`, {
    as: m,
    body: { data: { type: 'CapturePayment', attributes: { amount } } },
  });
const cancel = (t: TestApp, m: Merchant, id: string) => t.request('POST', `/api/v1/payments/${id}/cancel`, { as: m });
const refund = (t: TestApp, m: Merchant, id: string, amount: unknown, idempotencyKey: string = randomUUID()) =>
  t.request('POST', `/api/v1/payments/${id}/refund`, {
    as: m,
    body: { data: { type: 'Refund', attributes: { amount, idempotencyKey } } },
  });
const failPull = (t: TestApp, m: Merchant, id: string, body?: unknown) =>
  t.request('POST', `/api/v1/simulation/payments/${id}/fail-bank-pull`, { as: m, ...(body ? { body } : {}) });
const getPayment = (t: TestApp, m: Merchant, id: string, query = '') =>
  t.request('GET', `/api/v1/payments/${id}${query}`, { as: m });
const statusOf = async (t: TestApp, m: Merchant, id: string) => {
  const res = await getPayment(t, m, id);
  assert.equal(res.status, 200, res.raw);
  return res.body.data.attributes.status as string;
};
const intentStatus = async (t: TestApp, m: Merchant, id: string) =>
  (await t.request('GET', `/api/v1/payment-intents/${id}`, { as: m })).body.data.attributes.status as string;

/** The sandbox bank settles a second after capture. */
async function settle(t: TestApp) {
  t.clock.advance(1000);
  await t.ctx.jobs.runOnce('payment-settlement');
}

const createPayment = (t: TestApp, m: Merchant, attributes: Record<string, unknown>) =>
  t.request('POST', '/api/v1/payments', { as: m, body: { data: { type: 'CreatePayment', attributes } } });

const reward = (t: TestApp, m: Merchant, walletId: string, amount: number) =>
  t.request('POST', '/api/v1/rewards', {
    as: m,
    body: { data: { type: 'IssueReward', attributes: { walletId, amount, idempotencyKey: randomUUID() } } },
  });

async function counterparty(t: TestApp, m: Merchant, label = 'Payee') {
  const res = await t.request('POST', '/api/v1/counterparties', {
    as: m,
    body: {
      data: {
        type: 'Counterparty',
        attributes: { label, accountNumber: '000123456789', routingNumber: ROUTING, accountType: 'checking' },
      },
    },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id as string;
}
const cpBalance = async (t: TestApp, m: Merchant, id: string) =>
  (await t.request('GET', `/api/v1/counterparties/${id}`, { as: m })).body.data.attributes.balance;

/** The merchant-level ledger account's balance (sum of its postings). */
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
  settlement: await clientLedger(t, m, 'merchant.settlement'),
  bank: await clientLedger(t, m, 'external.bank'),
});

/** A receiver subscribed to every topic of the merchant. */
async function eventsOf(t: TestApp, m: Merchant): Promise<Receiver> {
  const rx = await startReceiver();
  const res = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url: rx.url, topics: ['*'] }) });
  assert.equal(res.status, 201, res.raw);
  return rx;
}
interface Envelope {
  data: { id: string; attributes: { topic: string; walletId?: string; userId?: string } };
  included: { id: string; type: string; attributes: Record<string, any> }[];
}
/** Delivered events about one resource, in the order they happened (event ids are UUIDv7). */
async function delivered(t: TestApp, rx: Receiver, resourceId: string): Promise<Envelope[]> {
  await t.ctx.webhooks.runOnce();
  return rx.received
    .map((r) => JSON.parse(r.body) as Envelope)
    .filter((e) => e.included[0]?.id === resourceId)
    .sort((a, b) => (a.data.id < b.data.id ? -1 : 1));
}

// ----- the state machine ---------------------------------------------------------------------

describe('payments: the state machine', () => {
  let t: TestApp;
  let m: Merchant;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
    rx = await eventsOf(t, m);
  });
  after(async () => {
    await rx.close();
    await t.close();
  });

  test('authorize → Created: wallet money reserved (merchant reward, accrue, deposit), the rest from the linked account; PaymentCreated', async () => {
    const am = await t.createMerchant({ depositRewardBps: 1000 });
    const arx = await eventsOf(t, am);
    try {
      const { wallet } = await fundedWallet(t, am, 2000); // 2000 deposit + 200 accrue
      assert.equal((await reward(t, am, wallet.id, 150)).status, 200);
      const before = await money(t, am);
      const { payment, intent, id } = await authorized(t, am, wallet.id, 3000);
      assert.equal(payment.type, 'Payment');
      assert.equal(payment.attributes.status, 'Created');
      assert.equal(payment.attributes.amount, 3000);
      assert.equal(payment.attributes.capturedAmount, 0);
      assert.equal(payment.attributes.rail, 'bank');
      assert.equal(
        payment.attributes.expiresAt,
        new Date(t.clock.now().getTime() + 7 * DAY).toISOString(),
        'an authorization lives 7 days',
      );
      assert.deepEqual(payment.relationships.paymentIntent, {
        data: { type: 'PaymentIntent', id: intent.id },
        links: { self: `http://api.test/api/v1/payment-intents/${intent.id}` },
      });
      assert.equal(payment.links.self, `http://api.test/api/v1/payments/${id}`);
      assert.match(
        payment.links.virtualDebitCard,
        /\/api\/v1\/payments\/[^/]+\/card$/,
        'Accrue requires the link on every payment',
      );
      assert.equal(intent.attributes.status, 'PromotedToPayment');
      const b = await balanceOf(t, am, wallet.id);
      assert.deepEqual(b.available, { deposit: 0, reward: { accrue: 0, merchant: 0, total: 0 }, total: 0 });
      assert.deepEqual(b.reserved, { total: 2350 });
      assert.equal(b.total.total, 2350, "reserved money is still the wallet's");
      assert.deepEqual(await money(t, am), before, 'nothing leaves before capture');
      const evs = await delivered(t, arx, id);
      assert.deepEqual(
        evs.map((e) => e.data.attributes.topic),
        ['PaymentCreated'],
      );
      assert.equal(evs[0]!.included[0]!.type, 'Payment');
      assert.equal(evs[0]!.included[0]!.attributes.status, 'Created');
      assert.equal(evs[0]!.data.attributes.walletId, wallet.id);
      await assertLedgerSound(t);
    } finally {
      await arx.close();
    }
  });

  test('authorize uses rewards only from rewardMinimumPurchase; a partial capture takes rewards first and releases the rest', async () => {
    const rm = await t.createMerchant({ rewardMinimumPurchase: 1000 });
    const { wallet } = await fundedWallet(t, rm, 2000);
    assert.equal((await reward(t, rm, wallet.id, 500)).status, 200);
    await authorized(t, rm, wallet.id, 900);
    let b = await balanceOf(t, rm, wallet.id);
    assert.equal(b.available.reward.merchant, 500, 'a 900 purchase cannot use rewards');
    assert.equal(b.available.deposit, 1100);
    assert.equal(b.reserved.total, 900);
    const { id } = await authorized(t, rm, wallet.id, 1000);
    b = await balanceOf(t, rm, wallet.id);
    assert.equal(b.available.reward.merchant, 0, 'a 1000 purchase spends the merchant reward first');
    assert.equal(b.available.deposit, 600);
    assert.equal(b.reserved.total, 1900);
    assert.equal((await capture(t, rm, id, 700)).status, 200);
    b = await balanceOf(t, rm, wallet.id);
    assert.equal(b.reserved.total, 900);
    assert.equal(b.available.reward.merchant, 0, 'the reward was captured');
    assert.equal(b.available.deposit, 900, '300 of deposit released');
    const r = await refund(t, rm, id, 700);
    assert.deepEqual(r.body.included[0].attributes.returned, {
      linked: 0,
      deposit: 200,
      accrueReward: 0,
      merchantReward: 500,
      gift: 0,
    });
    await assertLedgerSound(t);
  });

  test('capture: Created → Processing (200, payment with its intent included); the uncaptured rest is released; PaymentCaptured', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const { id, intentId } = await authorized(t, m, wallet.id, 3000);
    const before = await money(t, m);
    const over = await capture(t, m, id, 3001);
    assert.equal(over.status, 400);
    assert.equal(errorsOf(over)[0]!.code, 'ValidationError');
    assert.equal(errorsOf(over)[0]!.source?.pointer, '/data/attributes/amount');
    for (const bad of [0, -1, 10.5, '100']) assert.equal((await capture(t, m, id, bad)).status, 400, String(bad));
    assert.equal(await statusOf(t, m, id), 'Created');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 3000);

    const res = await capture(t, m, id, 2000);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.id, id);
    assert.equal(res.body.data.attributes.status, 'Processing');
    assert.equal(res.body.data.attributes.amount, 3000);
    assert.equal(res.body.data.attributes.capturedAmount, 2000);
    assert.deepEqual(res.body.data.relationships.paymentIntent.data, { type: 'PaymentIntent', id: intentId });
    assert.equal(res.body.included.length, 1);
    assert.equal(res.body.included[0].type, 'PaymentIntent');
    assert.equal(res.body.included[0].id, intentId);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 3000, '1000 uncaptured went back');
    assert.equal(b.total.total, 3000);
    const after = await money(t, m);
    assert.equal(after.settlement - before.settlement, 2000, 'captured money is owed to the merchant');
    assert.equal(after.bank, before.bank, 'the wallet covered it all');
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentCaptured'],
    );
    assert.equal(evs[1]!.included[0]!.attributes.status, 'Processing');
    assert.equal(evs[1]!.included[0]!.attributes.capturedAmount, 2000);
    await assertLedgerSound(t);
  });

  test("capture with a linked-account part: the wallet's reservation first, then the bank pull", async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const { id } = await authorized(t, m, wallet.id, 1500);
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 1000);
    const before = await money(t, m);
    assert.equal((await capture(t, m, id, 1200)).status, 200);
    const after = await money(t, m);
    assert.equal(after.settlement - before.settlement, 1200);
    assert.equal(before.bank - after.bank, 200, '200 pulled from the linked account');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.total.total, 0);
    assert.equal(b.reserved.total, 0);
    await assertLedgerSound(t);
  });

  test('without applyWalletBalance the bank pays it all: captured from the bank, refunded to the bank; the wallet is untouched', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const before = await money(t, m);
    const { id } = await authorized(t, m, wallet.id, 800, { applyWalletBalance: false });
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 0);
    assert.equal((await capture(t, m, id, 800)).status, 200);
    let after = await money(t, m);
    assert.equal(before.bank - after.bank, 800);
    assert.equal(after.settlement - before.settlement, 800);
    const r = await refund(t, m, id, 800);
    assert.deepEqual(r.body.included[0].attributes.returned, {
      linked: 800,
      deposit: 0,
      accrueReward: 0,
      merchantReward: 0,
      gift: 0,
    });
    after = await money(t, m);
    assert.deepEqual(after, before);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1000);
    await assertLedgerSound(t);
  });

  test('a capture racing a cancel: exactly one wins and the money follows it', async () => {
    for (let i = 0; i < 3; i++) {
      const { wallet } = await fundedWallet(t, m, 1000);
      const { id } = await authorized(t, m, wallet.id, 600);
      const [cap, can] = await Promise.all([capture(t, m, id, 600), cancel(t, m, id)]);
      // A refused capture is 402 (Accrue's failure status for capture), a refused cancel 400.
      assert.deepEqual(
        [cap.status, can.status].sort(),
        cap.status === 200 ? [200, 400] : [200, 402],
        `${cap.raw} ${can.raw}`,
      );
      const loser = cap.status === 200 ? can : cap;
      assert.equal(errorsOf(loser)[0]!.code, 'IllegalOperation');
      const status = await statusOf(t, m, id);
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.reserved.total, 0);
      assert.equal(b.available.deposit, status === 'Processing' ? 400 : 1000, status);
    }
    await assertLedgerSound(t);
  });

  test('settlement: Processing → Sent one second after capture; PaymentUpdated', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id } = await authorized(t, m, wallet.id, 1200);
    assert.equal((await capture(t, m, id, 1200)).status, 200);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal(await statusOf(t, m, id), 'Processing');
    t.clock.advance(999);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal(await statusOf(t, m, id), 'Processing', 'not yet');
    t.clock.advance(1);
    await t.ctx.jobs.runOnce('payment-settlement');
    const p = (await getPayment(t, m, id)).body.data.attributes;
    assert.equal(p.status, 'Sent');
    assert.equal(p.capturedAmount, 1200);
    assert.equal(p.updatedAt, t.clock.now().toISOString());
    assert.equal((await balanceOf(t, m, wallet.id)).total.total, 800);
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentCaptured', 'PaymentUpdated'],
    );
    assert.equal(evs[2]!.included[0]!.attributes.status, 'Sent');
    await assertLedgerSound(t);
  });

  test('POST /simulation/payments/{id}/settle settles that payment at once (200); a payment not Processing is 400 IllegalOperation', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id } = await authorized(t, m, wallet.id, 700);
    const early = await t.request('POST', `/api/v1/simulation/payments/${id}/settle`, { as: m });
    assert.equal(early.status, 400, early.raw);
    assert.equal(errorsOf(early)[0]!.code, 'IllegalOperation');
    assert.equal((await capture(t, m, id, 700)).status, 200);
    const other = await authorized(t, m, wallet.id, 300);
    assert.equal((await capture(t, m, other.id, 300)).status, 200);
    const res = await t.request('POST', `/api/v1/simulation/payments/${id}/settle`, { as: m });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.id, id);
    assert.equal(res.body.data.attributes.status, 'Sent');
    assert.equal(await statusOf(t, m, other.id), 'Processing', 'only the payment named');
    const again = await t.request('POST', `/api/v1/simulation/payments/${id}/settle`, { as: m });
    assert.equal(again.status, 400, again.raw);
    assert.equal(errorsOf(again)[0]!.code, 'IllegalOperation');
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentCaptured', 'PaymentUpdated'],
    );
    await assertLedgerSound(t);
  });

  test('fail-bank-pull: Processing → Failed; the wallet gets its money back, the bank part is not owed; PaymentUpdated', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const before = await money(t, m);
    const { id } = await authorized(t, m, wallet.id, 1500);
    assert.equal((await capture(t, m, id, 1500)).status, 200);
    const res = await failPull(t, m, id, {
      data: { type: 'SimulateBankPullFailure', attributes: { reason: 'R02: account closed' } },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Failed');
    assert.equal(res.body.data.attributes.failureReason, 'R02: account closed');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 1000);
    assert.equal(b.reserved.total, 0);
    assert.deepEqual(await money(t, m), before, 'the merchant is owed nothing; the bank pull is undone');
    // A failed payment does not settle.
    await settle(t);
    assert.equal(await statusOf(t, m, id), 'Failed');
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentCaptured', 'PaymentUpdated'],
    );
    assert.equal(evs[2]!.included[0]!.attributes.status, 'Failed');
    // Without a body, a default reason is recorded.
    const other = await authorized(t, m, wallet.id, 300);
    await capture(t, m, other.id, 300);
    const plain = await failPull(t, m, other.id);
    assert.equal(plain.status, 200, plain.raw);
    assert.equal(plain.body.data.attributes.status, 'Failed');
    assert.ok(plain.body.data.attributes.failureReason);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1000);
    await assertLedgerSound(t);
  });

  test('fail-bank-pull after a partial refund returns only what was not refunded, to where it came from', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const before = await money(t, m);
    const { id } = await authorized(t, m, wallet.id, 1500); // 1000 deposit + 500 bank
    await capture(t, m, id, 1500);
    const r = await refund(t, m, id, 500);
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(
      r.body.included[0].attributes.returned,
      { linked: 500, deposit: 0, accrueReward: 0, merchantReward: 0, gift: 0 },
      'the bank part first',
    );
    assert.equal((await failPull(t, m, id)).status, 200);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(
      b.available.deposit,
      1000,
      'the wallet paid 1000 and none of it was refunded yet: all of it comes back',
    );
    assert.deepEqual(await money(t, m), before, 'the bank got back only the 500 it gave');
    await assertLedgerSound(t);
  });

  test('cancel: Created → Canceled; funds released; the intent becomes Canceled; PaymentUpdated, PaymentIntentUpdated', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const before = await money(t, m);
    const { id, intentId } = await authorized(t, m, wallet.id, 2500);
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 2000);
    const res = await cancel(t, m, id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.ok(res.body.data.attributes.failureReason);
    assert.equal(await statusOf(t, m, id), 'Canceled');
    assert.equal(await intentStatus(t, m, intentId), 'Canceled');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 2000);
    assert.deepEqual(await money(t, m), before);
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentUpdated'],
    );
    assert.equal(evs[1]!.included[0]!.attributes.status, 'Canceled');
    const intentEvents = await delivered(t, rx, intentId);
    assert.equal(intentEvents.at(-1)!.data.attributes.topic, 'PaymentIntentUpdated');
    assert.equal(intentEvents.at(-1)!.included[0]!.attributes.status, 'Canceled');
    await assertLedgerSound(t);
  });

  test('captureMode automatic: authorize captures at once (Processing, PaymentCaptured), then settles', async () => {
    const am = await t.createMerchant({ captureMode: 'automatic' });
    const arx = await eventsOf(t, am);
    try {
      const { wallet } = await fundedWallet(t, am, 3000);
      const before = await money(t, am);
      const { payment, id } = await authorized(t, am, wallet.id, 1000);
      assert.equal(payment.attributes.status, 'Processing');
      assert.equal(payment.attributes.capturedAmount, 1000);
      const b = await balanceOf(t, am, wallet.id);
      assert.equal(b.reserved.total, 0);
      assert.equal(b.available.deposit, 2000);
      assert.equal((await money(t, am)).settlement - before.settlement, 1000);
      const again = await capture(t, am, id, 1000);
      assert.equal(again.status, 402);
      assert.equal(errorsOf(again)[0]!.code, 'IllegalOperation');
      await settle(t);
      assert.equal(await statusOf(t, am, id), 'Sent');
      const evs = await delivered(t, arx, id);
      assert.deepEqual(
        evs.map((e) => e.data.attributes.topic),
        ['PaymentCreated', 'PaymentCaptured', 'PaymentUpdated'],
      );
      await assertLedgerSound(t);
    } finally {
      await arx.close();
    }
  });

  test('every other transition is IllegalOperation (400; a capture 402) and changes nothing', async () => {
    const { wallet } = await fundedWallet(t, m, 20_000);
    const AMOUNT = 500;
    // Built in this order so settling the Sent ones leaves the Processing one Processing.
    const sent = await authorized(t, m, wallet.id, AMOUNT);
    await capture(t, m, sent.id, AMOUNT);
    const returned = await authorized(t, m, wallet.id, AMOUNT);
    await capture(t, m, returned.id, AMOUNT);
    await settle(t);
    assert.equal((await refund(t, m, returned.id, AMOUNT)).status, 200);
    const canceled = await authorized(t, m, wallet.id, AMOUNT);
    await cancel(t, m, canceled.id);
    const created = await authorized(t, m, wallet.id, AMOUNT);
    const failed = await authorized(t, m, wallet.id, AMOUNT);
    await capture(t, m, failed.id, AMOUNT);
    await failPull(t, m, failed.id);
    const processing = await authorized(t, m, wallet.id, AMOUNT);
    await capture(t, m, processing.id, AMOUNT);
    const byState: Record<string, string> = {
      Created: created.id,
      Processing: processing.id,
      Sent: sent.id,
      Failed: failed.id,
      Canceled: canceled.id,
      Returned: returned.id,
    };
    for (const [state, id] of Object.entries(byState)) assert.equal(await statusOf(t, m, id), state);

    const actions: Record<string, [allowedFrom: string[], run: (id: string) => ReturnType<TestApp['request']>]> = {
      capture: [['Created'], (id) => capture(t, m, id, AMOUNT)],
      cancel: [['Created'], (id) => cancel(t, m, id)],
      refund: [['Processing', 'Sent'], (id) => refund(t, m, id, 1)],
      'fail-bank-pull': [['Processing'], (id) => failPull(t, m, id)],
    };
    const balance = await balanceOf(t, m, wallet.id);
    const ledger = await money(t, m);
    let checked = 0;
    for (const [action, [allowed, run]] of Object.entries(actions)) {
      for (const [state, id] of Object.entries(byState)) {
        if (allowed.includes(state)) continue;
        const res = await run(id);
        // Capture's only failure status in Accrue's contract is 402.
        assert.equal(res.status, action === 'capture' ? 402 : 400, `${action} of a ${state} payment: ${res.raw}`);
        assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation', `${action} of a ${state} payment`);
        assert.equal(await statusOf(t, m, id), state, `${action} of a ${state} payment left it ${state}`);
        checked++;
      }
    }
    assert.equal(checked, 24 - 5);
    assert.deepEqual(await balanceOf(t, m, wallet.id), balance, 'no money moved');
    assert.deepEqual(await money(t, m), ledger);
    await assertLedgerSound(t);
  });
});

// ----- authorization expiry ------------------------------------------------------------------

describe('payments: authorization expiry', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('a Created payment is canceled 7 days after authorize, its funds released and its intent Canceled; captured ones are not touched', async () => {
    const rx = await eventsOf(t, m);
    try {
      const { wallet } = await fundedWallet(t, m, 4000);
      const before = await money(t, m);
      const { id, intentId, payment } = await authorized(t, m, wallet.id, 1500);
      const expiresAt = new Date(payment.attributes.expiresAt).getTime();
      assert.equal(expiresAt, t.clock.now().getTime() + 7 * DAY);
      const captured = await authorized(t, m, wallet.id, 1000);
      await capture(t, m, captured.id, 1000);
      t.clock.advance(7 * DAY - 1);
      await t.ctx.jobs.runOnce('authorization-expiry');
      assert.equal(await statusOf(t, m, id), 'Created', 'not before expiresAt');
      assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 1500);
      t.clock.advance(1);
      await t.ctx.jobs.runOnce('authorization-expiry');
      const p = (await getPayment(t, m, id)).body.data.attributes;
      assert.equal(p.status, 'Canceled');
      assert.ok(p.failureReason);
      assert.equal(await intentStatus(t, m, intentId), 'Canceled');
      assert.equal(await statusOf(t, m, captured.id), 'Processing', 'a captured payment does not expire');
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.reserved.total, 0);
      assert.equal(b.available.deposit, 3000);
      assert.equal((await money(t, m)).settlement - before.settlement, 1000);
      // Nothing more to do, and the expired authorization cannot be captured.
      await t.ctx.jobs.runOnce('authorization-expiry');
      assert.equal(errorsOf(await capture(t, m, id, 100))[0]!.code, 'IllegalOperation');
      const evs = await delivered(t, rx, id);
      assert.deepEqual(
        evs.map((e) => e.data.attributes.topic),
        ['PaymentCreated', 'PaymentUpdated'],
      );
      assert.equal(evs[1]!.included[0]!.attributes.status, 'Canceled');
      await assertLedgerSound(t);
    } finally {
      await rx.close();
    }
  });
});

// ----- refunds -------------------------------------------------------------------------------

describe('payments: refunds', () => {
  let t: TestApp;
  let m: Merchant;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
    rx = await eventsOf(t, m);
  });
  after(async () => {
    await rx.close();
    await t.close();
  });

  test('partial refunds go back where the money came from: the bank first, then deposit, accrue, merchant reward; fully refunded Sent → Returned', async () => {
    const rm = await t.createMerchant({ depositRewardBps: 1000 });
    const rrx = await eventsOf(t, rm);
    try {
      await refundsInOrder(rm, rrx);
    } finally {
      await rrx.close();
    }
  });

  async function refundsInOrder(m: Merchant, rx: Receiver) {
    const { wallet } = await fundedWallet(t, m, 1000); // 1000 deposit + 100 accrue
    assert.equal((await reward(t, m, wallet.id, 50)).status, 200);
    const start = await money(t, m);
    const { id } = await authorized(t, m, wallet.id, 1650); // 50 merchant, 100 accrue, 1000 deposit, 500 bank
    await capture(t, m, id, 1650);
    await settle(t);
    assert.equal(await statusOf(t, m, id), 'Sent');
    assert.equal((await balanceOf(t, m, wallet.id)).total.total, 0);

    const steps: [number, Record<string, number>, { deposit: number; accrue: number; merchant: number }][] = [
      [
        400,
        { linked: 400, deposit: 0, accrueReward: 0, merchantReward: 0, gift: 0 },
        { deposit: 0, accrue: 0, merchant: 0 },
      ],
      [
        300,
        { linked: 100, deposit: 200, accrueReward: 0, merchantReward: 0, gift: 0 },
        { deposit: 200, accrue: 0, merchant: 0 },
      ],
      [
        850,
        { linked: 0, deposit: 800, accrueReward: 50, merchantReward: 0, gift: 0 },
        { deposit: 1000, accrue: 50, merchant: 0 },
      ],
      [
        100,
        { linked: 0, deposit: 0, accrueReward: 50, merchantReward: 50, gift: 0 },
        { deposit: 1000, accrue: 100, merchant: 50 },
      ],
    ];
    const refundIds: string[] = [];
    for (const [amount, returned, wallet_] of steps) {
      const res = await refund(t, m, id, amount);
      assert.equal(res.status, 200, res.raw);
      const r = res.body.included[0];
      assert.equal(res.body.meta.refundId, r.id);
      assert.equal(res.body.data.id, id, 'the answer is the payment');
      assert.deepEqual(res.body.data.relationships.refunds.data.at(-1), { type: 'Refund', id: r.id });
      refundIds.push(r.id);
      assert.equal(r.type, 'Refund');
      assert.deepEqual(r.attributes, {
        paymentId: id,
        amount,
        status: 'Sent',
        returned,
        updatedAt: t.clock.now().toISOString(),
        createdAt: t.clock.now().toISOString(),
      });
      const b = await balanceOf(t, m, wallet.id);
      assert.deepEqual(
        { deposit: b.available.deposit, accrue: b.available.reward.accrue, merchant: b.available.reward.merchant },
        wallet_,
        `after refunding ${amount}`,
      );
      const status = await statusOf(t, m, id);
      assert.equal(status, refundIds.length < steps.length ? 'Sent' : 'Returned');
    }
    const p = (await getPayment(t, m, id)).body.data.attributes;
    assert.equal(p.refundedAmount, 1650);
    assert.deepEqual(await money(t, m), start, 'the merchant gave back everything, the bank got its 500 back');
    const evs = await delivered(t, rx, id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentCaptured', 'PaymentUpdated', 'PaymentUpdated'],
    );
    assert.equal(evs[3]!.included[0]!.attributes.status, 'Returned');
    for (const rid of refundIds) {
      const [ev] = await delivered(t, rx, rid);
      assert.equal(ev?.data.attributes.topic, 'RefundCreated');
      assert.equal(ev!.included[0]!.type, 'Refund');
      assert.equal(ev!.included[0]!.attributes.paymentId, id);
      assert.equal(ev!.data.attributes.walletId, wallet.id);
    }
    const more = await refund(t, m, id, 1);
    assert.equal(more.status, 400);
    assert.equal(errorsOf(more)[0]!.code, 'IllegalOperation');
    await assertLedgerSound(t);
  }

  test('the refunds of a payment add up to at most what was captured (400 InvalidRefund)', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const { id } = await authorized(t, m, wallet.id, 1500);
    await capture(t, m, id, 1000);
    await settle(t);
    const over = await refund(t, m, id, 1001);
    assert.equal(over.status, 400);
    assert.equal(errorsOf(over)[0]!.code, 'InvalidRefund');
    assert.equal(errorsOf(over)[0]!.source?.pointer, '/data/attributes/amount');
    assert.equal((await refund(t, m, id, 600)).status, 200);
    const over2 = await refund(t, m, id, 401);
    assert.equal(over2.status, 400);
    assert.equal(errorsOf(over2)[0]!.code, 'InvalidRefund');
    assert.equal(await statusOf(t, m, id), 'Sent');
    assert.equal((await refund(t, m, id, 400)).status, 200);
    assert.equal(await statusOf(t, m, id), 'Returned', 'what was captured, not what was authorized, is the whole');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 3000);
    for (const amount of [0, -5, 1.5, '10']) assert.equal((await refund(t, m, id, amount)).status, 400, String(amount));
    const noKey = await t.request('POST', `/api/v1/payments/${id}/refund`, {
      as: m,
      body: { data: { type: 'Refund', attributes: { amount: 1 } } },
    });
    assert.equal(noKey.status, 400, 'idempotencyKey is required');
    assert.equal(errorsOf(noKey)[0]!.source?.pointer, '/data/attributes/idempotencyKey');
    await assertLedgerSound(t);
  });

  test('concurrent refunds never add up to more than was captured, each planned after the ones before it', async () => {
    const { wallet } = await fundedWallet(t, m, 400);
    const { id } = await authorized(t, m, wallet.id, 1000); // 400 deposit, 600 from the bank
    await capture(t, m, id, 1000);
    await settle(t);
    const results = await Promise.all(Array.from({ length: 5 }, () => refund(t, m, id, 300)));
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 3, results.map((r) => r.raw).join('\n'));
    for (const r of results.filter((r) => r.status !== 200)) {
      assert.equal(r.status, 400, r.raw);
      assert.equal(errorsOf(r)[0]!.code, 'InvalidRefund');
    }
    const p = (await getPayment(t, m, id)).body.data.attributes;
    assert.equal(p.refundedAmount, 900);
    assert.equal(p.status, 'Sent');
    // The bank's 600 first, then deposit money: a refund that planned without an earlier one
    // would send the bank more than it paid.
    const returned = ok.map((r) => r.body.included[0].attributes.returned);
    assert.equal(
      returned.reduce((s, r) => s + r.linked, 0),
      600,
      JSON.stringify(returned),
    );
    assert.equal(
      returned.reduce((s, r) => s + r.deposit, 0),
      300,
      JSON.stringify(returned),
    );
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 300);
    await assertLedgerSound(t);
  });

  test('idempotent: the same key and amount replay byte for byte; another amount or payment is 409 IdempotencyKeyReused', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const { id } = await authorized(t, m, wallet.id, 2000);
    await capture(t, m, id, 2000);
    await settle(t);
    const key = randomUUID();
    const first = await refund(t, m, id, 700, key);
    assert.equal(first.status, 200);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    t.clock.advance(60_000);
    const again = await refund(t, m, id, 700, key);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.raw, first.raw, 'byte-identical');
    assert.equal((await getPayment(t, m, id)).body.data.attributes.refundedAmount, 700, 'refunded once');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1700);
    const reused = await refund(t, m, id, 701, key);
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    const second = await authorized(t, m, wallet.id, 500);
    await capture(t, m, second.id, 500);
    const elsewhere = await refund(t, m, second.id, 700, key);
    assert.equal(elsewhere.status, 409);
    assert.equal(errorsOf(elsewhere)[0]!.code, 'IdempotencyKeyReused');
    // A refused refund stores nothing: the key can be used once the request is right.
    const fresh = randomUUID();
    assert.equal((await refund(t, m, second.id, 501, fresh)).status, 400);
    assert.equal((await refund(t, m, second.id, 500, fresh)).status, 200);
    assert.equal((await getPayment(t, m, id)).body.data.attributes.refundedAmount, 700);
    await assertLedgerSound(t);
  });

  test('refunds while Processing: partial, then settlement → Sent; in full, then settlement → Returned', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const partial = await authorized(t, m, wallet.id, 1000);
    await capture(t, m, partial.id, 1000);
    const full = await authorized(t, m, wallet.id, 800);
    await capture(t, m, full.id, 800);
    assert.equal((await refund(t, m, partial.id, 300)).status, 200);
    assert.equal((await refund(t, m, full.id, 500)).status, 200);
    assert.equal((await refund(t, m, full.id, 300)).status, 200);
    assert.equal(await statusOf(t, m, partial.id), 'Processing');
    assert.equal(await statusOf(t, m, full.id), 'Processing', 'still with the bank');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 3000 - 700);
    await settle(t);
    assert.equal(await statusOf(t, m, partial.id), 'Sent');
    assert.equal(await statusOf(t, m, full.id), 'Returned');
    const evs = await delivered(t, rx, full.id);
    assert.equal(evs.at(-1)!.data.attributes.topic, 'PaymentUpdated');
    assert.equal(evs.at(-1)!.included[0]!.attributes.status, 'Returned');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 2300);
    await assertLedgerSound(t);
  });

  test("a direct payment's refund returns the wallet's part and the bank's, never the external (cash) part", async () => {
    const { wallet, account } = await fundedWallet(t, m, 1000);
    const before = await money(t, m);
    const res = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 2000,
      linkedAccountId: account.id,
      externalPayments: [{ method: 'Cash', amount: 500 }],
    });
    assert.equal(res.status, 200, res.raw);
    const id = res.body.data.id;
    assert.equal(res.body.data.attributes.capturedAmount, 1500);
    const over = await refund(t, m, id, 1501);
    assert.equal(over.status, 400);
    const r = await refund(t, m, id, 1500);
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(r.body.included[0].attributes.returned, {
      linked: 500,
      deposit: 1000,
      accrueReward: 0,
      merchantReward: 0,
      gift: 0,
    });
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1000);
    assert.deepEqual(await money(t, m), before);
    await settle(t);
    assert.equal(await statusOf(t, m, id), 'Returned');
    await assertLedgerSound(t);
  });
});

// ----- direct payments -----------------------------------------------------------------------

describe('payments: direct payments (POST /payments)', () => {
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

  test('direct payments racing for one balance: never more than it holds, the rest 402 Failed to retry', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    // Each is planned from the balance as read; the ledger refuses the ones it no longer covers.
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, n) =>
        createPayment(t, m, { walletId: wallet.id, amount: 300, ...(n % 2 ? { idempotencyKey: randomUUID() } : {}) }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 3, results.map((r) => r.raw).join('\n'));
    for (const r of results.filter((r) => r.status !== 200)) {
      assert.equal(r.status, 402, r.raw);
      assert.equal(errorsOf(r)[0]!.code, 'Failed');
    }
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 100);
    await assertLedgerSound(t);
  });

  test('200 Processing: the wallet pays in the spending order, the linked account the rest; externalPayments are recorded, not moved; PaymentCreated', async () => {
    const { wallet, account } = await fundedWallet(t, m, 2000);
    assert.equal((await reward(t, m, wallet.id, 100)).status, 200);
    const before = await money(t, m);
    const res = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 3000,
      linkedAccountId: account.id,
      channel: 'pos',
      reference: 'order-77',
      externalPayments: [{ method: 'Cash', amount: 500 }],
    });
    assert.equal(res.status, 200, res.raw);
    const p = res.body.data;
    assert.equal(p.type, 'Payment');
    assert.equal(p.attributes.status, 'Processing');
    assert.equal(p.attributes.amount, 3000);
    assert.equal(p.attributes.capturedAmount, 2500);
    assert.equal(p.attributes.refundedAmount, 0);
    assert.equal(p.attributes.rail, 'bank');
    assert.equal(p.attributes.channel, 'pos');
    assert.equal(p.attributes.reference, 'order-77');
    assert.deepEqual(p.attributes.externalPayments, [{ method: 'Cash', amount: 500 }]);
    assert.deepEqual(p.attributes.disbursement, []);
    assert.deepEqual(p.relationships.paymentIntent, { data: null });
    assert.equal(p.links.self, `http://api.test/api/v1/payments/${p.id}`);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.total.total, 0, '2000 deposit and the 100 reward spent');
    assert.equal(b.reserved.total, 0);
    const after = await money(t, m);
    assert.equal(after.settlement - before.settlement, 2500, 'cash never enters Coffer');
    assert.equal(before.bank - after.bank, 400, 'the linked account pays 2500 - 2100');
    const got = await getPayment(t, m, p.id);
    assert.deepEqual(got.body.data, p);
    await settle(t);
    assert.equal(await statusOf(t, m, p.id), 'Sent');
    const evs = await delivered(t, rx, p.id);
    assert.deepEqual(
      evs.map((e) => e.data.attributes.topic),
      ['PaymentCreated', 'PaymentUpdated'],
    );
    assert.equal(evs[0]!.included[0]!.attributes.status, 'Processing');
    // A direct payment never was an authorization: no capture, no cancel.
    const second = (await createPayment(t, m, { walletId: wallet.id, amount: 10, linkedAccountId: account.id })).body
      .data.id;
    assert.equal(errorsOf(await capture(t, m, second, 10))[0]!.code, 'IllegalOperation');
    assert.equal(errorsOf(await cancel(t, m, second))[0]!.code, 'IllegalOperation');
    await assertLedgerSound(t);
  });

  test('rewardMinimumPurchase applies to the whole purchase (`amount`), cash included', async () => {
    const rm = await t.createMerchant({ rewardMinimumPurchase: 1000 });
    const { wallet } = await fundedWallet(t, rm, 2000);
    assert.equal((await reward(t, rm, wallet.id, 500)).status, 200);
    const small = await createPayment(t, rm, { walletId: wallet.id, amount: 900 });
    assert.equal(small.status, 200, small.raw);
    let b = await balanceOf(t, rm, wallet.id);
    assert.equal(b.available.reward.merchant, 500, 'a 900 purchase cannot use rewards');
    assert.equal(b.available.deposit, 1100);
    const res = await createPayment(t, rm, {
      walletId: wallet.id,
      amount: 1200,
      externalPayments: [{ method: 'Cash', amount: 500 }],
    });
    assert.equal(res.status, 200, res.raw);
    b = await balanceOf(t, rm, wallet.id);
    assert.equal(
      b.available.reward.merchant,
      0,
      'a 1200 purchase is at least 1000: the merchant reward is spent first',
    );
    assert.equal(b.available.deposit, 900);
    await assertLedgerSound(t);
  });

  test('a wallet that covers everything needs no linked account', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const before = await money(t, m);
    const res = await createPayment(t, m, { walletId: wallet.id, amount: 1000 });
    assert.equal(res.status, 200, res.raw);
    assert.equal((await balanceOf(t, m, wallet.id)).total.total, 0);
    assert.equal((await money(t, m)).bank, before.bank);
    const cashOnly = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 300,
      externalPayments: [{ method: 'Cash', amount: 300 }],
    });
    assert.equal(cashOnly.status, 200, cashOnly.raw);
    assert.equal(cashOnly.body.data.attributes.capturedAmount, 0);
    await assertLedgerSound(t);
  });

  test('disbursements reach their counterparties at settlement', async () => {
    const { wallet, account } = await fundedWallet(t, m, 5000);
    const a = await counterparty(t, m, 'A');
    const b = await counterparty(t, m, 'B');
    const before = await money(t, m);
    const res = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 6000,
      linkedAccountId: account.id,
      disbursement: [
        { counterpartyId: a, amount: 1000 },
        { counterpartyId: b, amount: 500, remit: true },
      ],
    });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.data.attributes.disbursement, [
      { counterpartyId: a, amount: 1000, fee: 0, remit: false },
      { counterpartyId: b, amount: 500, fee: 0, remit: true },
    ]);
    assert.equal((await cpBalance(t, m, a)).available, 0, 'not before settlement');
    assert.equal((await cpBalance(t, m, b)).available, 0);
    await settle(t);
    assert.equal(await statusOf(t, m, res.body.data.id), 'Sent');
    assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 1000 });
    assert.deepEqual(await cpBalance(t, m, b), { pending: 0, available: 500 });
    assert.equal((await money(t, m)).settlement - before.settlement, 6000 - 1500, 'the merchant keeps the rest');
    await settle(t);
    assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 1000 }, 'disbursed once');
    await assertLedgerSound(t);
  });

  test('one settlement run settles every due payment in one merged write: disbursements to one counterparty add up; each payment gets its PaymentUpdated', async () => {
    const { wallet, account } = await fundedWallet(t, m, 5000);
    const a = await counterparty(t, m, 'A');
    const b = await counterparty(t, m, 'B');
    const before = await money(t, m);
    const plans: [number, number, number][] = [
      [1000, 100, 50],
      [2000, 200, 0],
      [1500, 0, 70],
    ];
    const ids: string[] = [];
    for (const [amount, toA, toB] of plans) {
      const disbursement = [
        ...(toA ? [{ counterpartyId: a, amount: toA }] : []),
        ...(toB ? [{ counterpartyId: b, amount: toB }] : []),
      ];
      const res = await createPayment(t, m, { walletId: wallet.id, amount, linkedAccountId: account.id, disbursement });
      assert.equal(res.status, 200, res.raw);
      ids.push(res.body.data.id);
    }
    await settle(t);
    for (const id of ids) assert.equal(await statusOf(t, m, id), 'Sent');
    const xmins = await paymentXmins(t, ids);
    assert.equal(new Set(xmins.map((x) => x.xmin)).size, 1, 'settled by one transaction');
    assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 300 });
    assert.deepEqual(await cpBalance(t, m, b), { pending: 0, available: 120 });
    assert.equal((await money(t, m)).settlement - before.settlement, 4500 - 420, 'the merchant keeps the rest');
    for (const id of ids) {
      const evs = await delivered(t, rx, id);
      assert.deepEqual(
        evs.map((e) => e.data.attributes.topic),
        ['PaymentCreated', 'PaymentUpdated'],
      );
      assert.equal(evs[1]!.included[0]!.attributes.status, 'Sent');
      assert.equal(evs[1]!.included[0]!.attributes.updatedAt, t.clock.now().toISOString());
    }
    await assertLedgerSound(t);
  });

  test("a failed bank pull returns the wallet's money and the disbursements never happen", async () => {
    const { wallet, account } = await fundedWallet(t, m, 1000);
    const a = await counterparty(t, m, 'A');
    const before = await money(t, m);
    const res = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 1800,
      linkedAccountId: account.id,
      disbursement: [{ counterpartyId: a, amount: 900 }],
    });
    assert.equal(res.status, 200, res.raw);
    const failed = await failPull(t, m, res.body.data.id);
    assert.equal(failed.status, 200, failed.raw);
    assert.equal(failed.body.data.attributes.status, 'Failed');
    await settle(t);
    assert.equal(await statusOf(t, m, res.body.data.id), 'Failed');
    assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 0 });
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1000);
    assert.deepEqual(await money(t, m), before);
    await assertLedgerSound(t);
  });

  test('fully refunded while Processing: settlement ends Returned and pays no disbursement; a partial refund still disburses', async () => {
    const { wallet, account } = await fundedWallet(t, m, 5000);
    const a = await counterparty(t, m, 'A');
    const before = await money(t, m);
    const full = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 1000,
      linkedAccountId: account.id,
      disbursement: [{ counterpartyId: a, amount: 400 }],
    });
    const partial = await createPayment(t, m, {
      walletId: wallet.id,
      amount: 1000,
      linkedAccountId: account.id,
      disbursement: [{ counterpartyId: a, amount: 300 }],
    });
    assert.equal(full.status, 200, full.raw);
    assert.equal(partial.status, 200, partial.raw);
    assert.equal((await refund(t, m, full.body.data.id, 1000)).status, 200);
    assert.equal((await refund(t, m, partial.body.data.id, 200)).status, 200);
    await settle(t);
    assert.equal(await statusOf(t, m, full.body.data.id), 'Returned');
    assert.equal(await statusOf(t, m, partial.body.data.id), 'Sent');
    assert.deepEqual(
      await cpBalance(t, m, a),
      { pending: 0, available: 300 },
      'only the partially refunded payment disburses',
    );
    assert.equal(
      (await money(t, m)).settlement - before.settlement,
      1000 - 200 - 300,
      'the merchant keeps what is left of the partial payment',
    );
    await assertLedgerSound(t);
  });

  test("body rules: externalPayments and disbursements within the amount, counterparties the merchant's own, each once", async () => {
    const { wallet, account } = await fundedWallet(t, m, 5000);
    const a = await counterparty(t, m);
    const theirs = await counterparty(t, other);
    const cases: [Record<string, unknown>, number, string, string?][] = [
      [
        { externalPayments: [{ method: 'Cash', amount: 1001 }] },
        400,
        'ValidationError',
        '/data/attributes/externalPayments',
      ],
      [
        { externalPayments: [{ method: 'Cash', amount: 300 }], disbursement: [{ counterpartyId: a, amount: 701 }] },
        400,
        'ValidationError',
        '/data/attributes/disbursement',
      ],
      [
        {
          disbursement: [
            { counterpartyId: a, amount: 10 },
            { counterpartyId: theirs, amount: 10 },
          ],
        },
        400,
        'CounterpartyNotFound',
        '/data/attributes/disbursement/1/counterpartyId',
      ],
      [
        {
          disbursement: [
            { counterpartyId: a, amount: 10 },
            { counterpartyId: a, amount: 20 },
          ],
        },
        400,
        'ValidationError',
        '/data/attributes/disbursement',
      ],
      [{ amount: 0 }, 400, 'ValidationError', '/data/attributes/amount'],
      [{ amount: '1000' }, 400, 'ValidationError', '/data/attributes/amount'],
      [{ walletId: 'nope' }, 400, 'ValidationError', '/data/attributes/walletId'],
      [{ walletId: randomUUID() }, 400, 'WalletNotFound', '/data/attributes/walletId'],
      [{ currency: 'USD' }, 400, 'ValidationError', '/data/attributes/currency'],
    ];
    for (const [over, status, code, pointer] of cases) {
      const res = await createPayment(t, m, {
        walletId: wallet.id,
        amount: 1000,
        linkedAccountId: account.id,
        ...over,
      });
      assert.equal(res.status, status, `${JSON.stringify(over)}: ${res.raw}`);
      assert.ok(
        errorsOf(res).some((e) => e.code === code && (!pointer || e.source?.pointer === pointer)),
        `${JSON.stringify(over)}: ${res.raw}`,
      );
    }
    const theirWallet = (await fundedWallet(t, other, 0)).wallet;
    const crossWallet = await createPayment(t, m, { walletId: theirWallet.id, amount: 100 });
    assert.equal(crossWallet.status, 400);
    assert.equal(errorsOf(crossWallet)[0]!.code, 'WalletNotFound');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 5000, 'nothing moved');
    assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 0 });
  });

  test('the linked part is at most bankFundingLimit and needs a connected linkedAccountId of the user, else nothing moves', async () => {
    const lm = await t.createMerchant({ bankFundingLimit: 1000 });
    const { wallet, account, user } = await fundedWallet(t, lm, 500);
    const before = await money(t, lm);
    const overLimit = await createPayment(t, lm, { walletId: wallet.id, amount: 1501, linkedAccountId: account.id });
    assert.equal(overLimit.status, 402, overLimit.raw);
    assert.equal(errorsOf(overLimit)[0]!.code, 'Failed');
    const noAccount = await createPayment(t, lm, { walletId: wallet.id, amount: 501 });
    assert.equal(noAccount.status, 402, noAccount.raw);
    assert.equal(errorsOf(noAccount)[0]!.code, 'Failed');
    const stranger = await approvedUser(t, lm);
    const theirs = await linkAccount(t, lm, stranger.id);
    const notTheirs = await createPayment(t, lm, { walletId: wallet.id, amount: 700, linkedAccountId: theirs.id });
    assert.equal(notTheirs.status, 400);
    assert.equal(errorsOf(notTheirs)[0]!.code, 'LinkedAccountNotFound');
    const gone = await linkAccount(t, lm, user.id);
    await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${gone.id}`, { as: lm });
    const disconnected = await createPayment(t, lm, { walletId: wallet.id, amount: 700, linkedAccountId: gone.id });
    assert.equal(disconnected.status, 400);
    assert.equal(errorsOf(disconnected)[0]!.code, 'LinkedAccountDisconnected');
    assert.equal((await balanceOf(t, lm, wallet.id)).available.deposit, 500, 'nothing moved');
    assert.deepEqual(await money(t, lm), before);
    const list = await t.request('GET', '/api/v1/payments', { as: lm });
    assert.equal(list.body.meta.total, 0, 'refused payments are not recorded');
    const atLimit = await createPayment(t, lm, { walletId: wallet.id, amount: 1500, linkedAccountId: account.id });
    assert.equal(atLimit.status, 200, atLimit.raw);
    assert.equal(before.bank - (await money(t, lm)).bank, 1000);
    await assertLedgerSound(t);
  });

  test("the user's KYC must be Approved (400 InvalidKycStatus)", async () => {
    const u = await createUser(t, m);
    const account = await linkAccount(t, m, u.id);
    const wallet = await createWallet(t, m, u.id);
    const res = await createPayment(t, m, { walletId: wallet.id, amount: 100, linkedAccountId: account.id });
    assert.equal(res.status, 400, res.raw);
    assert.equal(errorsOf(res)[0]!.code, 'InvalidKycStatus');
    assert.equal((await balanceOf(t, m, wallet.id)).total.total, 0);
  });

  test('idempotencyKey, when sent: the same request replays, other attributes are 409 IdempotencyKeyReused', async () => {
    const { wallet, account } = await fundedWallet(t, m, 3000);
    const key = randomUUID();
    const attributes = {
      walletId: wallet.id,
      amount: 1200,
      linkedAccountId: account.id,
      reference: 'r-1',
      idempotencyKey: key,
    };
    const first = await createPayment(t, m, attributes);
    assert.equal(first.status, 200, first.raw);
    const again = await createPayment(t, m, attributes);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.raw, first.raw);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1800, 'paid once');
    const reused = await createPayment(t, m, { ...attributes, amount: 1300 });
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1800);
    await assertLedgerSound(t);
  });
});

describe('payments: settlement runs', () => {
  let t: TestApp;
  before(async () => {
    // Settlement runs counted: no other file's payment is due at these times.
    t = await createTestApp({ clock: new TestClock(BEFORE_THE_SUITE) });
  });
  after(() => t.close());

  test(`a run settles ${SETTLE_BATCH} payments while settlement is on time, ${SETTLE_BATCH_BEHIND} once a run finds them ${SETTLE_BEHIND_MS} ms past due`, async () => {
    const lm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, lm, 100_000);
    const pay = async (n: number) => {
      for (let i = 0; i < n; i += 25) {
        const made = await Promise.all(
          Array.from({ length: Math.min(25, n - i) }, () => createPayment(t, lm, { walletId: wallet.id, amount: 10 })),
        );
        for (const r of made) assert.equal(r.status, 200, r.raw);
      }
    };
    const run = () => t.ctx.jobs.runOnce('payment-settlement');
    const processing = async () =>
      (await t.request('GET', '/api/v1/payments?filter[status]=Processing', { as: lm })).body.meta.total as number;

    await pay(SETTLE_BATCH + 5);
    t.clock.advance(SANDBOX_SETTLE_DELAY_MS + SETTLE_BEHIND_MS / 2);
    assert.deepEqual([await run(), await run(), await run()], [SETTLE_BATCH, 5, 0], 'on time: runs of SETTLE_BATCH');
    assert.equal(await processing(), 0);

    await pay(SETTLE_BATCH + SETTLE_BATCH_BEHIND + 10);
    t.clock.advance(SANDBOX_SETTLE_DELAY_MS + SETTLE_BEHIND_MS + 500);
    assert.deepEqual(
      [await run(), await run(), await run(), await run()],
      [SETTLE_BATCH, SETTLE_BATCH_BEHIND, 10, 0],
      'behind: the run after the first takes SETTLE_BATCH_BEHIND',
    );
    assert.equal(await processing(), 0);
    await assertLedgerSound(t);
  });
});

// ----- reads and lists ----------------------------------------------------------------------

describe('payments: reads and lists', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test("filters, sorts, paging, include; the merchant's own payments only", async () => {
    const lm = await t.createMerchant();
    const { wallet, account } = await fundedWallet(t, lm, 10_000);
    const p1 = await authorized(t, lm, wallet.id, 100, { reference: 'order-1', channel: 'web' });
    t.clock.advance(1000);
    const p2 = await authorized(t, lm, wallet.id, 300, { reference: 'order-2', channel: 'pos' });
    await capture(t, lm, p2.id, 300);
    assert.equal((await refund(t, lm, p2.id, 100)).status, 200);
    t.clock.advance(1000);
    const p3 = (
      await createPayment(t, lm, {
        walletId: wallet.id,
        amount: 200,
        linkedAccountId: account.id,
        reference: 'order-3',
        channel: 'pos',
      })
    ).body.data.id as string;
    t.clock.advance(1000);
    const p4 = await authorized(t, lm, wallet.id, 400);
    await cancel(t, lm, p4.id);
    t.clock.advance(1000);
    const p5 = await authorized(t, lm, wallet.id, 50);
    t.clock.advance(1000);
    await capture(t, lm, p1.id, 100);
    const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((p) => p.id);
    const list = (q = '') => t.request('GET', `/api/v1/payments${q}`, { as: lm });

    const all = await list();
    assert.equal(all.status, 200, all.raw);
    assert.deepEqual(ids(all), [p5.id, p4.id, p3, p2.id, p1.id], 'newest first');
    assert.deepEqual(all.body.meta, { total: 5, limit: 10, offset: 0 });
    assert.equal(all.body.included, undefined);
    for (const p of all.body.data) assert.equal(p.type, 'Payment');
    assert.deepEqual(all.body.data[0].relationships.paymentIntent, {
      data: { type: 'PaymentIntent', id: p5.intentId },
      links: { self: `http://api.test/api/v1/payment-intents/${p5.intentId}` },
    });

    const cases: [string, string[]][] = [
      ['?filter[status]=Processing', [p3, p2.id, p1.id]],
      ['?filter[status]=Created', [p5.id]],
      ['?filter[status]=Canceled', [p4.id]],
      ['?filter[status]=Sent', []],
      [`?filter[paymentIntentId]=${p1.intentId}`, [p1.id]],
      ['?filter[reference]=order-2', [p2.id]],
      ['?filter[channel]=pos', [p3, p2.id]],
      ['?filter[channel]=pos&filter[reference]=order-3', [p3]],
      ['?sort=amount', [p5.id, p1.id, p3, p2.id, p4.id]],
      ['?sort=-amount', [p4.id, p2.id, p3, p1.id, p5.id]],
      ['?sort=createdAt', [p1.id, p2.id, p3, p4.id, p5.id]],
      ['?sort=-updatedAt', [p1.id, p5.id, p4.id, p3, p2.id]],
      ['?sort=status,amount', [p4.id, p5.id, p1.id, p3, p2.id]],
      ['?page[limit]=2&page[offset]=1', [p4.id, p3]],
    ];
    for (const [q, expected] of cases) {
      const res = await list(q);
      assert.equal(res.status, 200, `${q}: ${res.raw}`);
      assert.deepEqual(ids(res), expected, q);
    }
    assert.deepEqual((await list('?page[limit]=2&page[offset]=1')).body.meta, { total: 5, limit: 2, offset: 1 });
    assert.equal((await list('?filter[status]=Processing')).body.meta.total, 3);

    const inc = await list('?include=paymentIntent,captures,refunds');
    assert.equal(inc.status, 200, inc.raw);
    const included = inc.body.included as { type: string; id: string; attributes: Record<string, any> }[];
    const byType = (type: string) =>
      included
        .filter((r) => r.type === type)
        .map((r) => r.id)
        .sort();
    assert.deepEqual(byType('PaymentIntent'), [p1.intentId, p2.intentId, p4.intentId, p5.intentId].sort());
    assert.deepEqual(byType('Capture'), [p1.id, p2.id, p3].sort(), 'captured payments only');
    const refunds = included.filter((r) => r.type === 'Refund');
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0]!.attributes.paymentId, p2.id);
    assert.equal(refunds[0]!.attributes.amount, 100);
    const p2row = inc.body.data.find((p: { id: string }) => p.id === p2.id);
    assert.deepEqual(p2row.relationships.refunds, { data: [{ type: 'Refund', id: refunds[0]!.id }] });
    assert.deepEqual(inc.body.data.find((p: { id: string }) => p.id === p5.id).relationships.refunds, { data: [] });
    const cap = included.find((r) => r.type === 'Capture' && r.id === p2.id)!;
    assert.equal(cap.attributes.amount, 300);

    for (const q of [
      '?sort=reference',
      '?include=wallet',
      '?filter[status]=Authorized',
      '?filter[paymentIntentId]=abc',
      '?page[limit]=0',
      '?filter[color]=red',
    ]) {
      const res = await list(q);
      assert.equal(res.status, 400, `${q}: ${res.raw}`);
    }
    const theirs = await t.request('GET', '/api/v1/payments', { as: other });
    assert.ok(!ids(theirs).some((id) => [p1.id, p2.id, p3, p4.id, p5.id].includes(id)));
    const byIntent = await t.request('GET', `/api/v1/payments?filter[paymentIntentId]=${p1.intentId}`, { as: other });
    assert.deepEqual(ids(byIntent), []);
  });

  test('GET /payments/{id}: include=paymentIntent,refunds; unknown include 400; unknown id 404 PaymentNotFound; malformed id 400', async () => {
    const { wallet } = await fundedWallet(t, m, 2000);
    const { id, intentId } = await authorized(t, m, wallet.id, 900, { reference: 'inv-9', channel: 'web' });
    await capture(t, m, id, 900);
    const r = (await refund(t, m, id, 200)).body.included[0];
    const plain = await getPayment(t, m, id);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-type'], 'application/vnd.api+json');
    assert.deepEqual(plain.body.included, [], 'included is always present (Accrue requires it)');
    const a = plain.body.data.attributes;
    assert.deepEqual(
      {
        status: a.status,
        amount: a.amount,
        capturedAmount: a.capturedAmount,
        refundedAmount: a.refundedAmount,
        reference: a.reference,
        channel: a.channel,
        rail: a.rail,
      },
      {
        status: 'Processing',
        amount: 900,
        capturedAmount: 900,
        refundedAmount: 200,
        reference: 'inv-9',
        channel: 'web',
        rail: 'bank',
      },
    );
    const inc = await getPayment(t, m, id, '?include=paymentIntent,refunds');
    assert.equal(inc.status, 200, inc.raw);
    assert.deepEqual(
      inc.body.included.map((x: { type: string; id: string }) => [x.type, x.id]),
      [
        ['PaymentIntent', intentId],
        ['Refund', r.id],
      ],
    );
    assert.equal(inc.body.included[0].attributes.status, 'PromotedToPayment');
    assert.deepEqual(inc.body.included[0].relationships.payments.data, [{ type: 'Payment', id }]);
    assert.deepEqual(inc.body.data.relationships.refunds, { data: [{ type: 'Refund', id: r.id }] });
    assert.equal((await getPayment(t, m, id, '?include=captures')).status, 400);
    const unknown = await getPayment(t, m, randomUUID());
    assert.equal(unknown.status, 404);
    assert.equal(errorsOf(unknown)[0]!.code, 'PaymentNotFound');
    const malformed = await getPayment(t, m, 'not-a-uuid');
    assert.equal(malformed.status, 400);
    assert.equal(errorsOf(malformed)[0]!.code, 'BadRequest');
    assert.equal((await t.request('GET', `/api/v1/payments/${id}`)).status, 401);
  });

  test("every read of an intent's payments finds them through payments_intent_idx, which holds only the payments of an intent (generic plans)", async () => {
    const reads: [string, string, unknown[]][] = [
      ['payments of intents', PAYMENTS_OF_INTENTS.text, ['{}']],
      ['active payments locked', LOCK_ACTIVE_PAYMENTS.text, ['{}']],
      ["a payment group's intents with their payment ids", LOCK_PAYMENTS.text, ['{}', '{}']],
    ];
    for (const [what, text, params] of reads) {
      const plan = await genericPlan(t.ctx.db, { sql: text, params });
      assert.match(plan, /payments_intent_idx/, `${what}:\n${plan}`);
      assert.doesNotMatch(plan, /Seq Scan on payments/, `${what}:\n${plan}`);
    }
    const [index] = rowsOf<{ def: string }>(
      await t.ctx.db.execute(sql`select indexdef as def from pg_indexes where indexname = 'payments_intent_idx'`),
    );
    assert.match(index!.def, /WHERE \(intent_id IS NOT NULL\)/);
  });

  test("another merchant's payment is 404 PaymentNotFound everywhere, and nothing happens to it", async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const created = await authorized(t, m, wallet.id, 1000);
    const processing = await authorized(t, m, wallet.id, 1000);
    await capture(t, m, processing.id, 1000);
    const attempts: [string, string, () => ReturnType<TestApp['request']>][] = [
      ['get', created.id, () => getPayment(t, other, created.id)],
      ['get with include', created.id, () => getPayment(t, other, created.id, '?include=paymentIntent')],
      ['capture', created.id, () => capture(t, other, created.id, 1000)],
      ['cancel', created.id, () => cancel(t, other, created.id)],
      ['refund', processing.id, () => refund(t, other, processing.id, 100)],
      ['fail-bank-pull', processing.id, () => failPull(t, other, processing.id)],
      [
        'settle',
        processing.id,
        () => t.request('POST', `/api/v1/simulation/payments/${processing.id}/settle`, { as: other }),
      ],
    ];
    for (const [what, , run] of attempts) {
      const res = await run();
      assert.equal(res.status, 404, `${what}: ${res.raw}`);
      assert.equal(errorsOf(res)[0]!.code, 'PaymentNotFound', what);
    }
    assert.equal(await statusOf(t, m, created.id), 'Created');
    assert.equal(await statusOf(t, m, processing.id), 'Processing');
    assert.equal((await getPayment(t, m, processing.id)).body.data.attributes.refundedAmount, 0);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 1000);
    assert.equal(b.available.deposit, 1000);
    await assertLedgerSound(t);
  });
});
