// Authorize (spec "Authorize rules", docs/adr/0004-idempotency-in-the-database.md, docs/payments.md#payments-in-detail): idempotency, the wallet reservation
// and its limits, automatic capture, the card processor (latency, declines, in-flight 409s,
// crash recovery without a second charge), and many concurrent authorizes of one intent.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { TestClock } from '../../clock.ts';
import { rowsOf } from '../../db/open.ts';
import type { CardProcessor } from '../../providers/card-processor.ts';
import {
  BEFORE_THE_SUITE,
  createTestApp,
  errorsOf,
  type Merchant,
  type Response,
  type TestApp,
} from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  createWallet,
  deposit,
  clearPending,
  fundedWallet,
  linkAccount,
} from '../../test/money.ts';

const intentBody = (attributes: Record<string, unknown>) => ({ data: { type: 'CreatePaymentIntent', attributes } });
const authBody = (attributes: Record<string, unknown>) => ({ data: { type: 'AuthorizePaymentIntent', attributes } });

async function intentFor(t: TestApp, m: Merchant, walletId: string, amount: number): Promise<string> {
  const res = await t.request('POST', '/api/v1/payment-intents', { as: m, body: intentBody({ amount, walletId }) });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}

const authorizeReq = (t: TestApp, m: Merchant, intentId: string, attributes: Record<string, unknown>) =>
  t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, { as: m, body: authBody(attributes) });

/** Charges the sandbox processor recorded for this merchant (one per processor reference). */
async function charges(t: TestApp, clientId: string) {
  return rowsOf<{ reference: string; amount: number; outcome: string; calls: number }>(
    await t.ctx.db.execute(
      sql`select reference, amount, outcome, calls from sandbox_processor_charges where client_id = ${clientId}`,
    ),
  );
}

async function activePayments(t: TestApp, m: Merchant, intentId: string) {
  const res = await t.request('GET', `/api/v1/payments?filter[paymentIntentId]=${intentId}&page[limit]=50`, { as: m });
  return res.body.data as { id: string; attributes: { status: string; amount: number } }[];
}

describe('authorize', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('201: the intent PromotedToPayment in data, the Created payment in included; the wallet money reserved', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const intentId = await intentFor(t, m, wallet.id, 3000);
    const res = await authorizeReq(t, m, intentId, {
      amount: 3000,
      idempotencyKey: randomUUID(),
      reference: 'order-1',
      channel: 'web',
    });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.data.type, 'PaymentIntent');
    assert.equal(res.body.data.attributes.status, 'PromotedToPayment');
    const [payment] = res.body.included;
    assert.equal(payment.type, 'Payment');
    assert.equal(payment.attributes.status, 'Created');
    assert.equal(payment.attributes.amount, 3000);
    assert.equal(payment.attributes.reference, 'order-1');
    assert.equal(payment.attributes.channel, 'web');
    assert.deepEqual(res.body.data.relationships.payments.data, [{ type: 'Payment', id: payment.id }]);
    assert.deepEqual(payment.relationships.paymentIntent.data, { type: 'PaymentIntent', id: intentId });
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 2000);
    assert.equal(b.reserved.total, 3000);
    assert.equal(b.total.total, 5000);
    await assertLedgerSound(t);
  });

  test("channel in Accrue's object form {type, id} is recorded as type:id; a bad one is 400", async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const res = await authorizeReq(t, m, await intentFor(t, m, wallet.id, 500), {
      amount: 500,
      channel: { type: 'Store', id: 'nyc-store-1' },
    });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.included[0].attributes.channel, 'Store:nyc-store-1');
    const listed = await t.request('GET', '/api/v1/payments?filter[channel]=Store:nyc-store-1', { as: m });
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id),
      [res.body.included[0].id],
    );
    for (const channel of [
      { type: 'Kiosk', id: 'k1' },
      { type: 'App' },
      { type: 'App', id: '' },
      { type: 'App', id: 'a', extra: 1 },
      7,
    ]) {
      const bad = await authorizeReq(t, m, await intentFor(t, m, wallet.id, 100), { amount: 100, channel });
      assert.equal(bad.status, 400, JSON.stringify(channel));
      assert.equal(errorsOf(bad)[0]!.code, 'ValidationError');
    }
  });

  describe('idempotency', () => {
    test('the same key and attributes replay the first success byte for byte', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const intentId = await intentFor(t, m, wallet.id, 1000);
      const attrs = {
        amount: 1000,
        idempotencyKey: randomUUID(),
        reference: 'r',
        channel: 'pos',
        risk: { deviceSessionId: 'd1' },
      };
      const first = await authorizeReq(t, m, intentId, attrs);
      assert.equal(first.status, 201);
      t.clock.advance(30_000);
      const again = await authorizeReq(t, m, intentId, attrs);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.raw, first.raw);
      assert.equal((await activePayments(t, m, intentId)).length, 1);
      assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 1000, 'reserved once');
    });

    test('the same key with any changed attribute is 409 IdempotencyKeyReused', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const intentId = await intentFor(t, m, wallet.id, 1000);
      const key = randomUUID();
      const base = {
        amount: 1000,
        idempotencyKey: key,
        reference: 'r',
        channel: 'pos',
        risk: { deviceSessionId: 'd1' },
        meta: { processor: { token: 'a' } },
      };
      assert.equal((await authorizeReq(t, m, intentId, base)).status, 201);
      for (const changed of [
        { amount: 999 },
        { reference: 'r2' },
        { channel: 'web' },
        { risk: { deviceSessionId: 'd2' } },
        { meta: { processor: { token: 'b' } } },
        { applyWalletBalance: false },
      ]) {
        const res = await authorizeReq(t, m, intentId, { ...base, ...changed });
        assert.equal(res.status, 409, JSON.stringify(changed));
        assert.equal(errorsOf(res)[0]!.code, 'IdempotencyKeyReused', JSON.stringify(changed));
      }
    });

    test('a repeated call on a PromotedToPayment intent returns the active payment, with or without a key, and authorizes nothing', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const intentId = await intentFor(t, m, wallet.id, 1500);
      const first = await authorizeReq(t, m, intentId, { amount: 1500, idempotencyKey: randomUUID() });
      const paymentId = first.body.included[0].id;
      for (const attrs of [{ amount: 1500 }, { amount: 1500, idempotencyKey: randomUUID() }, { amount: 700 }]) {
        const res = await authorizeReq(t, m, intentId, attrs);
        assert.equal(res.status, 201, JSON.stringify(attrs)); // as the first answer (Accrue declares 201 only)
        assert.equal(res.body.data.attributes.status, 'PromotedToPayment');
        assert.equal(res.body.included[0].id, paymentId);
      }
      assert.equal((await activePayments(t, m, intentId)).length, 1);
      assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 1500);
    });

    test('a key is 1 to 255 characters', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const intentId = await intentFor(t, m, wallet.id, 100);
      for (const idempotencyKey of ['', 'k'.repeat(256), 7]) {
        const res = await authorizeReq(t, m, intentId, { amount: 100, idempotencyKey });
        assert.equal(res.status, 400);
        assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/idempotencyKey');
      }
    });
  });

  describe('where the money comes from', () => {
    test('the spending order: merchant rewards, accrue rewards, deposit; then the linked account', async () => {
      const am = await t.createMerchant({ depositRewardBps: 1000 });
      const { wallet } = await fundedWallet(t, am, 1000); // +100 accrue
      await t.request('POST', '/api/v1/rewards', {
        as: am,
        body: {
          data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 50, idempotencyKey: randomUUID() } },
        },
      });
      const intentId = await intentFor(t, am, wallet.id, 1400);
      const res = await authorizeReq(t, am, intentId, { amount: 1400 });
      assert.equal(res.status, 201, res.raw);
      const b = await balanceOf(t, am, wallet.id);
      assert.deepEqual(
        b.available,
        { deposit: 0, reward: { accrue: 0, merchant: 0, total: 0 }, total: 0 },
        'the wallet is spent in full',
      );
      assert.equal(b.reserved.total, 1150, 'the rest (250) will come from the bank at capture');
      // Capturing less takes merchant rewards first and releases deposit money last.
      const cap = await t.request('POST', `/api/v1/payments/${res.body.included[0].id}/capture`, {
        as: am,
        body: { data: { type: 'CapturePayment', attributes: { amount: 120 } } },
      });
      assert.equal(cap.status, 200);
      const after = await balanceOf(t, am, wallet.id);
      assert.deepEqual(after.available, { deposit: 1000, reward: { accrue: 30, merchant: 0, total: 30 }, total: 1030 });
      await assertLedgerSound(t);
    });

    test('applyWalletBalance false: everything from the linked account, the wallet untouched', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const intentId = await intentFor(t, m, wallet.id, 800);
      const res = await authorizeReq(t, m, intentId, { amount: 800, applyWalletBalance: false });
      assert.equal(res.status, 201);
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.available.deposit, 5000);
      assert.equal(b.reserved.total, 0);
    });

    test('more than the intent amount, or than the upper limit, is 402 Failed and changes nothing', async () => {
      const lm = await t.createMerchant({ bankFundingLimit: 1000 });
      const { wallet } = await fundedWallet(t, lm, 2000);
      const intentId = await intentFor(t, lm, wallet.id, 5000);
      const over = await authorizeReq(t, lm, intentId, { amount: 5001 });
      assert.equal(over.status, 402);
      assert.equal(errorsOf(over)[0]!.code, 'Failed');
      const limit = await authorizeReq(t, lm, intentId, { amount: 3001 });
      assert.equal(limit.status, 402, 'wallet 2000 + bank funding limit 1000');
      assert.equal((await balanceOf(t, lm, wallet.id)).reserved.total, 0);
      const ok = await authorizeReq(t, lm, intentId, { amount: 3000 });
      assert.equal(ok.status, 201);
      await assertLedgerSound(t);
    });

    test('with no connected linked account for the rest: 402, the intent RequiresAction (LinkedAccountMissing); linking one lets it through', async () => {
      const user = await approvedUser(t, m);
      const funding = await linkAccount(t, m, user.id);
      const wallet = await createWallet(t, m, user.id);
      await deposit(t, m, wallet.id, 1000, funding.id);
      await clearPending(t, m, wallet.id);
      await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${funding.id}`, { as: m });
      const intentId = await intentFor(t, m, wallet.id, 1500);
      const res = await authorizeReq(t, m, intentId, { amount: 1500 });
      assert.equal(res.status, 402);
      assert.equal(errorsOf(res)[0]!.code, 'Failed');
      const intent = (await t.request('GET', `/api/v1/payment-intents/${intentId}`, { as: m })).body.data.attributes;
      assert.equal(intent.status, 'RequiresAction');
      assert.equal(intent.error, 'LinkedAccountMissing');
      assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 0);
      // Within the wallet's money it needs no bank.
      await linkAccount(t, m, user.id);
      const ok = await authorizeReq(t, m, intentId, { amount: 1500 });
      assert.equal(ok.status, 201, ok.raw);
      assert.equal(ok.body.data.attributes.status, 'PromotedToPayment');
      assert.equal(ok.body.data.attributes.error, null);
    });

    test('captureMode automatic captures at once: the payment is Processing', async () => {
      const am = await t.createMerchant({ captureMode: 'automatic' });
      const { wallet } = await fundedWallet(t, am, 5000);
      const intentId = await intentFor(t, am, wallet.id, 2000);
      const res = await authorizeReq(t, am, intentId, { amount: 2000 });
      assert.equal(res.status, 201);
      assert.equal(res.body.included[0].attributes.status, 'Processing');
      assert.equal(res.body.included[0].attributes.capturedAmount, 2000);
      const b = await balanceOf(t, am, wallet.id);
      assert.equal(b.reserved.total, 0);
      assert.equal(b.total.total, 3000);
      await assertLedgerSound(t);
    });

    test('only Promotable and RequiresAction intents can be authorized', async () => {
      const { wallet } = await fundedWallet(t, m, 5000);
      const canceled = await intentFor(t, m, wallet.id, 100);
      await t.request('POST', `/api/v1/payment-intents/${canceled}/cancel`, { as: m });
      const res = await authorizeReq(t, m, canceled, { amount: 100 });
      assert.equal(res.status, 402, 'the authorization fails: 402, the status Accrue declares');
      assert.equal(errorsOf(res)[0]!.code, 'IllegalOperation');
      const expired = await intentFor(t, m, wallet.id, 100);
      t.clock.advance(900_000);
      const late = await authorizeReq(t, m, expired, { amount: 100 });
      assert.equal(late.status, 402);
      assert.equal(errorsOf(late)[0]!.code, 'PaymentIntentExpired');
      const missing = await authorizeReq(t, m, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', { amount: 100 });
      assert.equal(missing.status, 404);
      assert.equal(errorsOf(missing)[0]!.code, 'PaymentIntentNotFound');
    });
  });
});

describe('authorize with the card processor', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({ cardProcessor: { enabled: true, latencyMs: 150 } });
  });
  after(() => t.close());

  test('runs inline with its latency; the answer is recorded and handed back in included[].meta.processor', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const intentId = await intentFor(t, m, wallet.id, 1000);
    const started = Date.now();
    const res = await authorizeReq(t, m, intentId, {
      amount: 1000,
      idempotencyKey: randomUUID(),
      meta: { processor: { merchantToken: 'tok_1' } },
    });
    assert.ok(Date.now() - started >= 150, 'waited for the processor');
    assert.equal(res.status, 201, res.raw);
    const meta = res.body.included[0].meta.processor;
    assert.deepEqual(meta.request, { merchantToken: 'tok_1' });
    assert.equal(meta.response.outcome, 'approved');
    const got = await t.request('GET', `/api/v1/payments/${res.body.included[0].id}`, { as: m });
    assert.deepEqual(got.body.data.meta.processor, meta, 'recorded with the payment');
    const all = await charges(t, m.clientId);
    const c = all.filter((x) => x.amount === 1000);
    assert.equal(c.length, 1);
    assert.equal(c[0]!.calls, 1);
  });

  test('a decline (amount ending in 02) is 402 with the payment Failed; the money is released; the intent stays Promotable', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const intentId = await intentFor(t, m, wallet.id, 5000);
    const key = randomUUID();
    const res = await authorizeReq(t, m, intentId, { amount: 1202, idempotencyKey: key });
    assert.equal(res.status, 402, res.raw);
    const [e] = errorsOf(res);
    assert.equal(e!.code, 'Failed');
    const paymentId = e!.meta.paymentId as string;
    assert.equal(
      (await t.request('GET', `/api/v1/payments/${paymentId}`, { as: m })).body.data.attributes.status,
      'Failed',
    );
    assert.equal(
      (await t.request('GET', `/api/v1/payment-intents/${intentId}`, { as: m })).body.data.attributes.status,
      'Promotable',
    );
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 5000);
    // The decline is definitive for that key: a retry replays it.
    const again = await authorizeReq(t, m, intentId, { amount: 1202, idempotencyKey: key });
    assert.equal(again.status, 402);
    assert.equal(again.raw, res.raw);
    // A new attempt with another key and amount goes through.
    const ok = await authorizeReq(t, m, intentId, { amount: 1200, idempotencyKey: randomUUID() });
    assert.equal(ok.status, 201, ok.raw);
    await assertLedgerSound(t);
  });

  test("an intent's payments, a declined one and the one after it, read oldest first alike on the intent and in the list", async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const intentId = await intentFor(t, m, wallet.id, 5000);
    const declined = await authorizeReq(t, m, intentId, { amount: 1202, idempotencyKey: randomUUID() });
    assert.equal(declined.status, 402, declined.raw);
    const ok = await authorizeReq(t, m, intentId, { amount: 1200, idempotencyKey: randomUUID() });
    assert.equal(ok.status, 201, ok.raw);
    const failedId = errorsOf(declined)[0]!.meta.paymentId as string;
    const theirs = (await t.request('GET', `/api/v1/payments?filter[paymentIntentId]=${intentId}`, { as: m })).body
      .data as { id: string }[];
    const acceptedId = theirs.find((p) => p.id !== failedId)!.id;
    const expected = [failedId, acceptedId].map((id) => ({ type: 'Payment', id }));
    const one = await t.request('GET', `/api/v1/payment-intents/${intentId}`, { as: m });
    assert.deepEqual(one.body.data.relationships.payments.data, expected);
    const list = await t.request('GET', '/api/v1/payment-intents?page[limit]=100', { as: m });
    assert.deepEqual(
      list.body.data.find((i: { id: string }) => i.id === intentId).relationships.payments.data,
      expected,
    );
  });

  test('while the processor works: the same key is 409 IdempotencyKeyInUse, other requests 409 AlreadyExists; one charge', async () => {
    const slow = await t.createMerchant({ cardProcessor: { enabled: true, latencyMs: 600 } });
    const { wallet } = await fundedWallet(t, slow, 5000);
    const intentId = await intentFor(t, slow, wallet.id, 1000);
    const key = randomUUID();
    const first = authorizeReq(t, slow, intentId, { amount: 1000, idempotencyKey: key });
    await new Promise((r) => setTimeout(r, 200));
    const sameKey = await authorizeReq(t, slow, intentId, { amount: 1000, idempotencyKey: key });
    assert.equal(sameKey.status, 409);
    assert.equal(errorsOf(sameKey)[0]!.code, 'IdempotencyKeyInUse');
    const otherKey = await authorizeReq(t, slow, intentId, { amount: 1000, idempotencyKey: randomUUID() });
    assert.equal(otherKey.status, 409);
    assert.equal(errorsOf(otherKey)[0]!.code, 'AlreadyExists');
    const noKey = await authorizeReq(t, slow, intentId, { amount: 1000 });
    assert.equal(errorsOf(noKey)[0]!.code, 'AlreadyExists');
    assert.equal(noKey.headers['retry-after'], '1');
    const done = await first;
    assert.equal(done.status, 201);
    const replay = await authorizeReq(t, slow, intentId, { amount: 1000, idempotencyKey: key });
    assert.equal(replay.raw, done.raw);
    assert.equal((await charges(t, slow.clientId)).length, 1);
    assert.equal((await activePayments(t, slow, intentId)).length, 1);
  });

  test('an unreachable processor is 503; the attempt is finished on a later retry with the same reference, charged once', async () => {
    let down = true;
    const real = t.ctx.providers.cardProcessor;
    const flaky: CardProcessor = {
      authorize: async (r) => {
        const answer = await real.authorize(r); // it charged...
        if (down) throw new Error('connection reset'); // ...but the answer was lost
        return answer;
      },
    };
    const ft = await createTestApp({ providers: { cardProcessor: flaky } });
    try {
      const fm = await ft.createMerchant({ cardProcessor: { enabled: true, latencyMs: 10 } });
      const { wallet } = await fundedWallet(ft, fm, 5000);
      const intentId = await intentFor(ft, fm, wallet.id, 1000);
      const key = randomUUID();
      const lost = await authorizeReq(ft, fm, intentId, { amount: 1000, idempotencyKey: key });
      assert.equal(lost.status, 503);
      assert.equal(errorsOf(lost)[0]!.code, 'ServiceUnavailable');
      assert.equal(
        (await balanceOf(ft, fm, wallet.id)).reserved.total,
        1000,
        'the reservation stays with the open attempt',
      );
      const early = await authorizeReq(ft, fm, intentId, { amount: 1000, idempotencyKey: key });
      assert.equal(early.status, 409, 'the attempt still belongs to its lease');
      down = false;
      ft.clock.advance(20_000); // the lease (latency + 15 s) runs out
      const done = await authorizeReq(ft, fm, intentId, { amount: 1000, idempotencyKey: key });
      assert.equal(done.status, 201, done.raw);
      const c = await charges(ft, fm.clientId);
      assert.equal(c.length, 1, 'one charge');
      assert.equal(c[0]!.calls, 2, 'the processor was asked twice with the same reference');
      assert.equal((await activePayments(ft, fm, intentId)).length, 1);
      assert.equal((await balanceOf(ft, fm, wallet.id)).reserved.total, 1000);
      await assertLedgerSound(ft);
    } finally {
      await ft.close();
    }
  });

  test('the recovery job finishes an attempt whose process died, with no client retry', async () => {
    let answers = 0;
    const real = t.ctx.providers.cardProcessor;
    const dies: CardProcessor = {
      authorize: async (r) => {
        answers++;
        if (answers === 1) throw new Error('process died');
        return real.authorize(r);
      },
    };
    // Recovery runs counted: no other file's attempt has lapsed at these times.
    const ft = await createTestApp({ providers: { cardProcessor: dies }, clock: new TestClock(BEFORE_THE_SUITE) });
    try {
      const fm = await ft.createMerchant({ cardProcessor: { enabled: true, latencyMs: 10 } });
      const { wallet } = await fundedWallet(ft, fm, 5000);
      const intentId = await intentFor(ft, fm, wallet.id, 700);
      const key = randomUUID();
      assert.equal((await authorizeReq(ft, fm, intentId, { amount: 700, idempotencyKey: key })).status, 503);
      assert.equal(await ft.ctx.jobs.runOnce('authorization-recovery'), 0, 'not before the lease runs out');
      ft.clock.advance(20_000);
      assert.equal(await ft.ctx.jobs.runOnce('authorization-recovery'), 1);
      const intent = (await ft.request('GET', `/api/v1/payment-intents/${intentId}`, { as: fm })).body.data.attributes;
      assert.equal(intent.status, 'PromotedToPayment');
      // The client's retry now gets the recorded outcome under its key.
      const retry = await authorizeReq(ft, fm, intentId, { amount: 700, idempotencyKey: key });
      assert.equal(retry.status, 201);
      assert.equal(retry.headers['idempotent-replayed'], 'true');
      assert.equal((await activePayments(ft, fm, intentId)).length, 1);
      await assertLedgerSound(ft);
    } finally {
      await ft.close();
    }
  });
});

describe('authorize under concurrency', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  for (const processor of [false, true]) {
    test(`100 parallel authorizes of one intent (same key, no key, other keys, mixed) make one payment and one reservation${processor ? ' (card processor)' : ''}`, async () => {
      const m = await t.createMerchant(processor ? { cardProcessor: { enabled: true, latencyMs: 100 } } : {});
      const { wallet } = await fundedWallet(t, m, 10_000);
      const intentId = await intentFor(t, m, wallet.id, 2500);
      const shared = randomUUID();
      const results: Response[] = await Promise.all(
        Array.from({ length: 100 }, (_, i) => {
          const attrs: Record<string, unknown> = { amount: 2500 };
          if (i % 3 === 0) attrs.idempotencyKey = shared;
          else if (i % 3 === 1) attrs.idempotencyKey = randomUUID();
          return authorizeReq(t, m, intentId, attrs);
        }),
      );
      const statuses = results.map((r) => r.status);
      assert.ok(
        statuses.every((s) => s === 201 || s === 200 || s === 409),
        statuses.join(','),
      );
      const created = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
      assert.equal(created.length, 1, `exactly one authorization ran: ${statuses.join(',')}`);
      const paymentId = created[0]!.body.included[0].id;
      for (const r of results.filter((x) => x.status === 200 || x.status === 201))
        assert.equal(r.body.included[0].id, paymentId);
      for (const r of results.filter((x) => x.status === 409))
        assert.ok(['AlreadyExists', 'IdempotencyKeyInUse'].includes(errorsOf(r)[0]!.code));
      assert.equal((await activePayments(t, m, intentId)).length, 1);
      assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 2500, 'one reservation');
      if (processor) assert.equal((await charges(t, m.clientId)).length, 1, 'one charge');
      await assertLedgerSound(t);
    });
  }
});
