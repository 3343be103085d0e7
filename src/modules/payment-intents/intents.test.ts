// Payment intents through HTTP (spec "PaymentIntent", "States and transitions > Payment
// intent", "Payment intents"; docs/adr/0002-wire-conventions.md, docs/adr/0003-double-entry-ledger.md, docs/payments.md#payments-in-detail): create by wallet id, barcode or gift, the
// balance block, bad bodies, the list with its filters, sort, include and paging, get, cancel
// from every state (with what it does to the ledger), expiry, and the intent events.
// Authorization itself is tested elsewhere; here it only moves intents into PromotedToPayment
// or RequiresAction.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { kycApplication, webhookBody } from '../../test/fixtures.ts';
import {
  createTestApp,
  LOCAL_RECEIVERS,
  createUser,
  errorsOf,
  type Merchant,
  type Response,
  type TestApp,
} from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  clearPending,
  createWallet,
  deposit,
  fundedWallet,
  linkAccount,
} from '../../test/money.ts';
import { startReceiver } from '../../test/receiver.ts';
import { genericPlan } from '../../test/plans.ts';
import { intentTotal, lockDueExpiries } from './sql.ts';
import { PgDialect } from 'drizzle-orm/pg-core';

const UNKNOWN_ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const BANK_FUNDING_LIMIT = 500_000; // the default setting
const ADDRESS = {
  street: '1 Main St',
  street2: 'Suite 4',
  city: 'Springfield',
  state: 'IL',
  postalCode: '62701',
  country: 'US',
};

const intentBody = (attributes: Record<string, unknown>, type = 'CreatePaymentIntent') => ({
  data: { type, attributes },
});

const postIntent = (t: TestApp, m: Merchant, attributes: Record<string, unknown>) =>
  t.request('POST', '/api/v1/payment-intents', { as: m, body: intentBody(attributes) });

async function createIntent(t: TestApp, m: Merchant, attributes: Record<string, unknown>) {
  const res = await postIntent(t, m, attributes);
  assert.equal(res.status, 201, res.raw);
  return res.body.data as { id: string; type: string; attributes: Record<string, any>; relationships: any; links: any };
}

async function getIntent(t: TestApp, m: Merchant, id: string, query = '') {
  const res = await t.request('GET', `/api/v1/payment-intents/${id}${query}`, { as: m });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

const statusOf = async (t: TestApp, m: Merchant, id: string) =>
  (await getIntent(t, m, id)).data.attributes.status as string;

const cancel = (t: TestApp, m: Merchant, id: string) =>
  t.request('POST', `/api/v1/payment-intents/${id}/cancel`, { as: m });

const authorizeReq = (t: TestApp, m: Merchant, id: string, amount: number) =>
  t.request('POST', `/api/v1/payment-intents/${id}/authorize`, {
    as: m,
    body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID() } } },
  });

/** Authorizes (only to reach PromotedToPayment); returns the created payment. */
async function authorize(t: TestApp, m: Merchant, id: string, amount: number) {
  const res = await authorizeReq(t, m, id, amount);
  assert.equal(res.status, 201, res.raw);
  assert.equal(res.body.data.attributes.status, 'PromotedToPayment');
  assert.equal(res.body.included[0].attributes.status, 'Created');
  return res.body.included[0] as { id: string; attributes: Record<string, any> };
}

async function paymentOf(t: TestApp, m: Merchant, paymentId: string) {
  const res = await t.request('GET', `/api/v1/payments/${paymentId}`, { as: m });
  assert.equal(res.status, 200, res.raw);
  return res.body.data as { id: string; attributes: Record<string, any> };
}

async function barcode(
  t: TestApp,
  m: Merchant,
  walletId: string,
  attributes?: Record<string, unknown>,
): Promise<string> {
  const res = await t.request('POST', `/api/v1/simulation/wallets/${walletId}/barcodes`, {
    as: m,
    ...(attributes ? { body: { data: { type: 'WalletBarcode', attributes } } } : {}),
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.attributes.lookUpId;
}

async function gift(t: TestApp, m: Merchant, amount: number): Promise<string> {
  const res = await t.request('POST', '/api/v1/simulation/gifts', {
    as: m,
    body: { data: { type: 'Gift', attributes: { amount } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}

const giftLeft = async (t: TestApp, m: Merchant, lookUpId: string) =>
  (await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: m })).body.data.attributes.available as number;

async function issueReward(t: TestApp, m: Merchant, walletId: string, amount: number) {
  const res = await t.request('POST', '/api/v1/rewards', {
    as: m,
    body: { data: { type: 'IssueReward', attributes: { walletId, amount, idempotencyKey: randomUUID() } } },
  });
  assert.equal(res.status, 200, res.raw);
}

/** A user taken to a KYC status other than Approved, with a wallet. */
async function unapprovedWallet(
  t: TestApp,
  m: Merchant,
  stage: 'NotStarted' | 'Disclosed' | 'Pending' | 'ManualReview' | 'AwaitingDocuments' | 'Denied',
) {
  const u = await createUser(t, m);
  if (stage !== 'NotStarted')
    assert.equal((await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m })).status, 204);
  const emails = {
    Pending: 'kyc@example.com',
    ManualReview: 'kyc@highrisk.com',
    AwaitingDocuments: 'kyc@highrisk.test',
    Denied: 'kyc@declined.test',
  };
  if (stage !== 'NotStarted' && stage !== 'Disclosed') {
    assert.equal(
      (await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: kycApplication(emails[stage]) }))
        .status,
      200,
    );
    if (stage !== 'Pending') {
      t.clock.advance(500);
      await t.ctx.jobs.runOnce('kyc-decisions');
    }
  }
  const kyc = await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m });
  assert.equal(kyc.body.data.attributes.status, stage === 'Disclosed' ? 'NotStarted' : stage);
  const wallet = await createWallet(t, m, u.id);
  return { user: u, wallet };
}

/** Runs the expiry sweeper until nothing is due (it takes a batch at a time, across merchants). */
async function sweep(t: TestApp): Promise<number> {
  let total = 0;
  for (let i = 0; i < 100; i++) {
    const n = await t.ctx.jobs.runOnce('payment-intent-expiry');
    total += n;
    if (n === 0) break;
  }
  return total;
}

async function closeWallet(t: TestApp, walletId: string) {
  // No endpoint closes a wallet; the row is set as an operator would.
  await t.ctx.db.execute(
    sql`update wallets set status = 'Closed', closed_at = ${t.clock.now().toISOString()} where id = ${walletId}`,
  );
}

async function listIntents(t: TestApp, m: Merchant, query = ''): Promise<Response> {
  const res = await t.request('GET', `/api/v1/payment-intents${query ? `?${query}` : ''}`, { as: m });
  assert.equal(res.status, 200, `${query}: ${res.raw}`);
  return res;
}

const idsOf = async (t: TestApp, m: Merchant, query = '') =>
  (await listIntents(t, m, query)).body.data.map((i: { id: string }) => i.id) as string[];
const sorted = (ids: string[]) => [...ids].sort();

function assertError(res: Response, status: number, code: string, where?: { pointer?: string; parameter?: string }) {
  assert.equal(res.status, status, res.raw);
  const [e] = errorsOf(res);
  assert.equal(e!.code, code, res.raw);
  assert.equal(e!.status, String(status));
  if (where?.pointer !== undefined) assert.equal(e!.source?.pointer, where.pointer, res.raw);
  if (where?.parameter !== undefined) assert.equal(e!.source?.parameter, where.parameter, res.raw);
}

describe('payment intents: create', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('by walletId: 201 Promotable, initiator Merchant, paymentMethod Wallet, every attribute, Location, expiresAt = createdAt + 900 s', async () => {
    const { user, wallet } = await fundedWallet(t, m, 10_000);
    const res = await postIntent(t, m, {
      amount: 2500,
      walletId: wallet.id,
      reference: 'order-1001',
      billingAddress: ADDRESS,
      email: 'buyer@example.com',
      fullName: 'Ada Lovelace',
      phoneNumber: '+14155550123',
    });
    assert.equal(res.status, 201, res.raw);
    assert.match(String(res.headers['content-type']), /^application\/vnd\.api\+json$/);
    const i = res.body.data;
    assert.equal(i.type, 'PaymentIntent');
    assert.equal(res.headers.location, `http://api.test/api/v1/payment-intents/${i.id}`);
    const now = t.clock.now();
    assert.deepEqual(i.attributes, {
      amount: 2500,
      walletId: wallet.id,
      userId: user.id,
      status: 'Promotable',
      error: null,
      reference: 'order-1001',
      initiator: 'Merchant',
      paymentMethod: 'Wallet',
      lookUpId: null,
      balance: { available: 10_000, eligibleReward: 0, upperLimit: 10_000 + BANK_FUNDING_LIMIT },
      billingAddress: ADDRESS,
      email: 'buyer@example.com',
      fullName: 'Ada Lovelace',
      phoneNumber: '+14155550123',
      expiresAt: new Date(now.getTime() + 900_000).toISOString(),
      updatedAt: now.toISOString(),
      createdAt: now.toISOString(),
    });
    assert.deepEqual(i.relationships.payments.data, []);
    assert.equal(i.links.self, `http://api.test/api/v1/payment-intents/${i.id}`);
    // What was created is what is read.
    assert.deepEqual((await getIntent(t, m, i.id)).data, i);
    // Optional attributes absent: null.
    const bare = await createIntent(t, m, { amount: 1, walletId: wallet.id });
    for (const k of ['reference', 'billingAddress', 'email', 'fullName', 'phoneNumber', 'error'])
      assert.equal(bare.attributes[k], null, k);
  });

  test("the lifetime is the merchant's paymentIntentTtlSeconds", async () => {
    const sm = await t.createMerchant({ paymentIntentTtlSeconds: 120 });
    const { wallet } = await fundedWallet(t, sm, 1000);
    const i = await createIntent(t, sm, { amount: 100, walletId: wallet.id });
    assert.equal(i.attributes.expiresAt, new Date(t.clock.now().getTime() + 120_000).toISOString());
    const g = await createIntent(t, sm, { amount: 100, lookUpId: await gift(t, sm, 500) });
    assert.equal(g.attributes.expiresAt, new Date(t.clock.now().getTime() + 120_000).toISOString());
  });

  test('exactly one of walletId or lookUpId: 400 ValidationError at /data/attributes', async () => {
    const { wallet } = await fundedWallet(t, m, 0);
    const code = await barcode(t, m, wallet.id);
    const before = (await listIntents(t, m)).body.meta.total;
    for (const attributes of [{ amount: 100 }, { amount: 100, walletId: wallet.id, lookUpId: code }]) {
      const res = await postIntent(t, m, attributes);
      assertError(res, 400, 'ValidationError', { pointer: '/data/attributes' });
    }
    assert.equal((await listIntents(t, m)).body.meta.total, before, 'nothing created');
    // The refused request with both did not use the barcode.
    assert.equal((await createIntent(t, m, { amount: 100, lookUpId: code })).attributes.walletId, wallet.id);
  });

  test("an unknown walletId, or another merchant's, is 400 WalletNotFound at /data/attributes/walletId", async () => {
    const theirs = await fundedWallet(t, other, 1000);
    const theirCount = (await listIntents(t, other)).body.meta.total;
    for (const walletId of [UNKNOWN_ID, theirs.wallet.id]) {
      const res = await postIntent(t, m, { amount: 100, walletId });
      assertError(res, 404, 'WalletIdentifierNotFound', { pointer: '/data/attributes/walletId' });
    }
    // A gift id is never a walletId: it is not even a uuid.
    const g = await gift(t, m, 500);
    assertError(await postIntent(t, m, { amount: 100, walletId: g }), 400, 'ValidationError', {
      pointer: '/data/attributes/walletId',
    });
    assert.equal(
      (await listIntents(t, other)).body.meta.total,
      theirCount,
      "nothing was created for the wallet's merchant either",
    );
  });

  test('lookUpId of a wallet barcode: initiator Customer, paymentMethod Wallet, the barcode wallet; each intent uses one of its uses', async () => {
    const { user, wallet } = await fundedWallet(t, m, 4000);
    const code = await barcode(t, m, wallet.id, { usageLimit: 2 });
    const first = await createIntent(t, m, { amount: 1500, lookUpId: code, reference: 'scan-1' });
    assert.equal(first.attributes.initiator, 'Customer');
    assert.equal(first.attributes.paymentMethod, 'Wallet');
    assert.equal(first.attributes.walletId, wallet.id);
    assert.equal(first.attributes.userId, user.id);
    assert.equal(first.attributes.lookUpId, code);
    assert.equal(first.attributes.status, 'Promotable');
    assert.deepEqual(first.attributes.balance, {
      available: 4000,
      eligibleReward: 0,
      upperLimit: 4000 + BANK_FUNDING_LIMIT,
    });
    assert.equal((await createIntent(t, m, { amount: 1500, lookUpId: code })).attributes.walletId, wallet.id);
    // Two uses of two: the third scan is refused, and the barcode reads used up everywhere.
    const third = await postIntent(t, m, { amount: 1500, lookUpId: code });
    assertError(third, 400, 'WalletIdentifierExpired', { pointer: '/data/attributes/lookUpId' });
    assertError(await t.request('GET', `/api/v1/wallets/barcode/${code}`, { as: m }), 400, 'WalletIdentifierExpired');
    // The default barcode is good for one intent.
    const once = await barcode(t, m, wallet.id);
    await createIntent(t, m, { amount: 100, lookUpId: once });
    assertError(await postIntent(t, m, { amount: 100, lookUpId: once }), 400, 'WalletIdentifierExpired', {
      pointer: '/data/attributes/lookUpId',
    });
  });

  test('concurrent scans of one barcode create at most usageLimit intents', async () => {
    const cm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, cm, 1000);
    const code = await barcode(t, cm, wallet.id, { usageLimit: 2 });
    const results = await Promise.all(
      Array.from({ length: 5 }, () => postIntent(t, cm, { amount: 100, lookUpId: code })),
    );
    assert.deepEqual(
      results.map((r) => r.status).sort(),
      [201, 201, 400, 400, 400],
      results.map((r) => r.raw).join('\n'),
    );
    for (const r of results.filter((x) => x.status === 400))
      assert.equal(errorsOf(r)[0]!.code, 'WalletIdentifierExpired');
    assert.equal((await listIntents(t, cm)).body.meta.total, 2);
  });

  test('looking a barcode up does not use it; an expired barcode is 400 WalletIdentifierExpired and creates nothing', async () => {
    const em = await t.createMerchant();
    const { wallet } = await fundedWallet(t, em, 1000);
    const code = await barcode(t, em, wallet.id, { ttlSeconds: 60 });
    for (let i = 0; i < 3; i++)
      assert.equal((await t.request('GET', `/api/v1/wallets/barcode/${code}`, { as: em })).status, 200);
    t.clock.advance(59_000);
    const fresh = await barcode(t, em, wallet.id, { ttlSeconds: 60 });
    t.clock.advance(1_000);
    const res = await postIntent(t, em, { amount: 100, lookUpId: code });
    assertError(res, 400, 'WalletIdentifierExpired', { pointer: '/data/attributes/lookUpId' });
    assert.equal((await listIntents(t, em)).body.meta.total, 0);
    // A barcode made later is still good.
    assert.equal((await createIntent(t, em, { amount: 100, lookUpId: fresh })).attributes.walletId, wallet.id);
  });

  test("another merchant's barcode or gift, and unknown lookUpIds, are 400 LookUpIdNotFound; the other merchant's barcode keeps its use", async () => {
    const theirs = await fundedWallet(t, other, 1000);
    const theirCode = await barcode(t, other, theirs.wallet.id);
    const theirGift = await gift(t, other, 500);
    for (const lookUpId of [theirCode, theirGift, '1234567890123456', '1234567890123456789', 'abc']) {
      const res = await postIntent(t, m, { amount: 100, lookUpId });
      assertError(res, 400, 'LookUpIdNotFound', { pointer: '/data/attributes/lookUpId' });
    }
    const own = await createIntent(t, other, { amount: 100, lookUpId: theirCode });
    assert.equal(own.attributes.walletId, theirs.wallet.id);
    assertError(await postIntent(t, m, { amount: 100, lookUpId: 'not valid!' }), 400, 'ValidationError', {
      pointer: '/data/attributes/lookUpId',
    });
  });

  test("lookUpId of a gift: initiator Customer, paymentMethod Gift, no wallet or user, balance = the gift's remaining amount", async () => {
    const code = await gift(t, m, 1000);
    const i = await createIntent(t, m, { amount: 1200, lookUpId: code, reference: 'gift-1' });
    assert.equal(i.attributes.initiator, 'Customer');
    assert.equal(i.attributes.paymentMethod, 'Gift');
    assert.equal(i.attributes.walletId, null);
    assert.equal(i.attributes.userId, null);
    assert.equal(i.attributes.lookUpId, code);
    assert.equal(i.attributes.status, 'Promotable');
    assert.equal(i.attributes.error, null);
    assert.deepEqual(i.attributes.balance, { available: 1000, eligibleReward: 0, upperLimit: 1000 });
    // Spend 400 of the gift on its card: a new intent shows what is left.
    const payment = await authorize(t, m, i.id, 400);
    const spent = await t.request('POST', `/api/v1/simulation/${payment.id}/card/auth-capture`, { as: m });
    assert.equal(spent.status, 200, spent.raw);
    assert.equal(await giftLeft(t, m, code), 600);
    const again = await createIntent(t, m, { amount: 1200, lookUpId: code });
    assert.deepEqual(again.attributes.balance, { available: 600, eligibleReward: 0, upperLimit: 600 });
    await assertLedgerSound(t);
  });

  test('a wallet intent for a user whose KYC is not Approved is created Invalid with error InvalidKycStatus (by walletId or barcode)', async () => {
    for (const stage of [
      'NotStarted',
      'Disclosed',
      'Pending',
      'ManualReview',
      'AwaitingDocuments',
      'Denied',
    ] as const) {
      const { user, wallet } = await unapprovedWallet(t, m, stage);
      const byId = await postIntent(t, m, { amount: 500, walletId: wallet.id });
      assert.equal(byId.status, 201, `${stage}: ${byId.raw}`);
      assert.equal(byId.body.data.attributes.status, 'Invalid', stage);
      assert.equal(byId.body.data.attributes.error, 'InvalidKycStatus', stage);
      assert.equal(byId.body.data.attributes.userId, user.id);
      assert.equal(await statusOf(t, m, byId.body.data.id), 'Invalid');
      const scanned = await createIntent(t, m, { amount: 500, lookUpId: await barcode(t, m, wallet.id) });
      assert.equal(scanned.attributes.status, 'Invalid', stage);
      assert.equal(scanned.attributes.error, 'InvalidKycStatus', stage);
      // An Invalid intent cannot be authorized.
      const auth = await authorizeReq(t, m, byId.body.data.id, 500);
      assert.equal(auth.status, 402, auth.raw);
    }
  });

  test('a wallet intent for a Closed wallet is created Invalid with error WalletClosed', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    await closeWallet(t, wallet.id);
    const i = await createIntent(t, m, { amount: 500, walletId: wallet.id });
    assert.equal(i.attributes.status, 'Invalid');
    assert.equal(i.attributes.error, 'WalletClosed');
    assert.equal(await statusOf(t, m, i.id), 'Invalid');
  });

  test('gift intents skip KYC: a merchant whose users are all unapproved gets a Promotable gift intent', async () => {
    const gm = await t.createMerchant();
    const { wallet } = await unapprovedWallet(t, gm, 'Denied');
    assert.equal((await createIntent(t, gm, { amount: 100, walletId: wallet.id })).attributes.status, 'Invalid');
    const g = await createIntent(t, gm, { amount: 300, lookUpId: await gift(t, gm, 300) });
    assert.equal(g.attributes.status, 'Promotable');
    assert.equal(g.attributes.error, null);
  });

  test('bad bodies are 400 ValidationError with exact pointers, and create nothing', async () => {
    const bm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, bm, 1000);
    const good = { amount: 1000, walletId: wallet.id };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...good, amount: 0 }, '/data/attributes/amount'],
      [{ ...good, amount: -100 }, '/data/attributes/amount'],
      [{ ...good, amount: 10.5 }, '/data/attributes/amount'],
      [{ ...good, amount: '1000' }, '/data/attributes/amount'],
      [{ ...good, amount: null }, '/data/attributes/amount'],
      [{ ...good, currency: 'USD' }, '/data/attributes/currency'],
      [{ ...good, email: 'not-an-email' }, '/data/attributes/email'],
      [{ ...good, phoneNumber: '4155550123' }, '/data/attributes/phoneNumber'],
      [{ ...good, phoneNumber: 4155550123 }, '/data/attributes/phoneNumber'],
      [{ ...good, billingAddress: { ...ADDRESS, country: 'usa' } }, '/data/attributes/billingAddress/country'],
      [{ ...good, billingAddress: { ...ADDRESS, country: 'us' } }, '/data/attributes/billingAddress/country'],
      [{ ...good, billingAddress: { ...ADDRESS, zip: '62701' } }, '/data/attributes/billingAddress/zip'],
      [{ ...good, reference: '' }, '/data/attributes/reference'],
      [{ ...good, fullName: 7 }, '/data/attributes/fullName'],
      [{ ...good, walletId: 'abc' }, '/data/attributes/walletId'],
    ];
    for (const [attributes, pointer] of cases) {
      const res = await postIntent(t, bm, attributes);
      assert.equal(res.status, 400, `${JSON.stringify(attributes)}: ${res.raw}`);
      const errs = errorsOf(res);
      assert.ok(
        errs.some((e) => e.code === 'ValidationError' && e.source?.pointer === pointer),
        `${JSON.stringify(attributes)} → ${pointer}: ${res.raw}`,
      );
    }
    // A missing amount and a missing city are named too.
    const { amount: _a, ...noAmount } = good;
    assertError(await postIntent(t, bm, noAmount), 400, 'ValidationError', { pointer: '/data/attributes/amount' });
    const { city: _c, ...noCity } = ADDRESS;
    assertError(await postIntent(t, bm, { ...good, billingAddress: noCity }), 400, 'ValidationError', {
      pointer: '/data/attributes/billingAddress/city',
    });
    // The request type is CreatePaymentIntent; unknown top-level members are refused.
    const wrongType = await t.request('POST', '/api/v1/payment-intents', {
      as: bm,
      body: intentBody(good, 'PaymentIntent'),
    });
    assertError(wrongType, 400, 'ValidationError', { pointer: '/data/type' });
    // (JSON:API's top-level jsonapi, meta and links are accepted and ignored: src/http/jsonapi-request.test.ts.)
    const withIncluded = await t.request('POST', '/api/v1/payment-intents', {
      as: bm,
      body: { ...intentBody(good), included: [] },
    });
    assertError(withIncluded, 400, 'ValidationError', { pointer: '/included' });
    // Every identified problem is reported.
    const several = await postIntent(t, bm, { ...good, amount: 0, email: 'nope' });
    assert.deepEqual(
      errorsOf(several)
        .map((e) => e.source?.pointer)
        .sort(),
      ['/data/attributes/amount', '/data/attributes/email'],
    );
    assert.equal((await listIntents(t, bm)).body.meta.total, 0, 'nothing created');
    // The smallest amount is 1 cent.
    assert.equal((await createIntent(t, bm, good)).attributes.amount, 1000);
    assert.equal((await createIntent(t, bm, { ...good, amount: 1 })).attributes.amount, 1);
  });
});

describe('payment intents: the balance block', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('available = deposit money plus the rewards usable on the amount; eligibleReward never more than the amount', async () => {
    const { wallet } = await fundedWallet(t, m, 10_000);
    await issueReward(t, m, wallet.id, 1500);
    const big = await createIntent(t, m, { amount: 5000, walletId: wallet.id });
    assert.deepEqual(big.attributes.balance, {
      available: 11_500,
      eligibleReward: 1500,
      upperLimit: 11_500 + BANK_FUNDING_LIMIT,
    });
    const small = await createIntent(t, m, { amount: 1000, walletId: wallet.id });
    assert.deepEqual(small.attributes.balance, {
      available: 11_000,
      eligibleReward: 1000,
      upperLimit: 11_000 + BANK_FUNDING_LIMIT,
    });
    // Same numbers as the wallet balance for that purchase amount.
    const b = await balanceOf(t, m, wallet.id, '?purchaseAmount=1000');
    assert.equal(b.available.total, small.attributes.balance.available);
    assert.equal(b.available.reward.total, small.attributes.balance.eligibleReward);
  });

  test('accrued (deposit) rewards count as well, after merchant rewards', async () => {
    const am = await t.createMerchant({ depositRewardBps: 100 });
    const { wallet } = await fundedWallet(t, am, 10_000); // 1% accrues: 100
    await issueReward(t, am, wallet.id, 50);
    const i = await createIntent(t, am, { amount: 5000, walletId: wallet.id });
    assert.deepEqual(i.attributes.balance, {
      available: 10_150,
      eligibleReward: 150,
      upperLimit: 10_150 + BANK_FUNDING_LIMIT,
    });
    const tiny = await createIntent(t, am, { amount: 120, walletId: wallet.id });
    assert.deepEqual(tiny.attributes.balance, {
      available: 10_120,
      eligibleReward: 120,
      upperLimit: 10_120 + BANK_FUNDING_LIMIT,
    });
  });

  test('rewardMinimumPurchase: below it no reward is usable, from it on they are', async () => {
    const rm = await t.createMerchant({ rewardMinimumPurchase: 2000 });
    const { wallet } = await fundedWallet(t, rm, 3000);
    await issueReward(t, rm, wallet.id, 500);
    const below = await createIntent(t, rm, { amount: 1999, walletId: wallet.id });
    assert.deepEqual(below.attributes.balance, {
      available: 3000,
      eligibleReward: 0,
      upperLimit: 3000 + BANK_FUNDING_LIMIT,
    });
    const at = await createIntent(t, rm, { amount: 2000, walletId: wallet.id });
    assert.deepEqual(at.attributes.balance, {
      available: 3500,
      eligibleReward: 500,
      upperLimit: 3500 + BANK_FUNDING_LIMIT,
    });
  });

  test("upperLimit adds the merchant's bankFundingLimit only while the user has a connected linked account", async () => {
    const lm = await t.createMerchant({ bankFundingLimit: 25_000 });
    const user = await approvedUser(t, lm);
    const wallet = await createWallet(t, lm, user.id);
    // Nothing at all: no money, no account.
    assert.deepEqual((await createIntent(t, lm, { amount: 1000, walletId: wallet.id })).attributes.balance, {
      available: 0,
      eligibleReward: 0,
      upperLimit: 0,
    });
    const account = await linkAccount(t, lm, user.id);
    assert.deepEqual((await createIntent(t, lm, { amount: 1000, walletId: wallet.id })).attributes.balance, {
      available: 0,
      eligibleReward: 0,
      upperLimit: 25_000,
    });
    assert.equal((await deposit(t, lm, wallet.id, 4000, account.id)).status, 201);
    await clearPending(t, lm, wallet.id);
    assert.deepEqual((await createIntent(t, lm, { amount: 1000, walletId: wallet.id })).attributes.balance, {
      available: 4000,
      eligibleReward: 0,
      upperLimit: 29_000,
    });
    // Disconnected: the bank no longer counts.
    assert.equal(
      (await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${account.id}`, { as: lm })).status,
      204,
    );
    assert.deepEqual((await createIntent(t, lm, { amount: 1000, walletId: wallet.id })).attributes.balance, {
      available: 4000,
      eligibleReward: 0,
      upperLimit: 4000,
    });
    await linkAccount(t, lm, user.id);
    assert.deepEqual((await createIntent(t, lm, { amount: 1000, walletId: wallet.id })).attributes.balance, {
      available: 4000,
      eligibleReward: 0,
      upperLimit: 29_000,
    });
  });

  test('the block is taken at creation; list include=balance recomputes it now (wallet and gift)', async () => {
    const bm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, bm, 2000);
    const w = await createIntent(t, bm, { amount: 3000, walletId: wallet.id });
    const code = await gift(t, bm, 900);
    const g = await createIntent(t, bm, { amount: 500, lookUpId: code });
    await issueReward(t, bm, wallet.id, 700);
    const p = await authorize(t, bm, (await createIntent(t, bm, { amount: 300, lookUpId: code })).id, 300);
    assert.equal((await t.request('POST', `/api/v1/simulation/${p.id}/card/auth-capture`, { as: bm })).status, 200);
    // Read plainly: as created.
    assert.deepEqual((await getIntent(t, bm, w.id)).data.attributes.balance, {
      available: 2000,
      eligibleReward: 0,
      upperLimit: 2000 + BANK_FUNDING_LIMIT,
    });
    const plain = (await listIntents(t, bm)).body.data;
    assert.deepEqual(plain.find((i: { id: string }) => i.id === g.id).attributes.balance, {
      available: 900,
      eligibleReward: 0,
      upperLimit: 900,
    });
    // Recomputed.
    const fresh = await listIntents(t, bm, 'include=balance');
    const byId = new Map(fresh.body.data.map((i: { id: string; attributes: any }) => [i.id, i.attributes.balance]));
    assert.deepEqual(byId.get(w.id), { available: 2700, eligibleReward: 700, upperLimit: 2700 + BANK_FUNDING_LIMIT });
    assert.deepEqual(byId.get(g.id), { available: 600, eligibleReward: 0, upperLimit: 600 });
  });
});

describe('payment intents: list and get', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('filter[initiator], filter[paymentMethod] and filter[status], alone and together; bad values are 400', async () => {
    const lm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, lm, 10_000);
    const promoted = await createIntent(t, lm, { amount: 1000, walletId: wallet.id });
    await authorize(t, lm, promoted.id, 1000);
    const scanned = await createIntent(t, lm, { amount: 200, lookUpId: await barcode(t, lm, wallet.id) });
    const gifted = await createIntent(t, lm, { amount: 300, lookUpId: await gift(t, lm, 300) });
    const invalid = await createIntent(t, lm, {
      amount: 400,
      walletId: (await unapprovedWallet(t, lm, 'NotStarted')).wallet.id,
    });
    const canceled = await createIntent(t, lm, { amount: 500, walletId: wallet.id });
    assert.equal((await cancel(t, lm, canceled.id)).status, 200);
    const all = await listIntents(t, lm);
    assert.equal(all.body.meta.total, 5);
    const expect: [string, string[]][] = [
      ['filter[initiator]=Merchant', [promoted.id, invalid.id, canceled.id]],
      ['filter[initiator]=Customer', [scanned.id, gifted.id]],
      ['filter[paymentMethod]=Gift', [gifted.id]],
      ['filter[paymentMethod]=Wallet', [promoted.id, scanned.id, invalid.id, canceled.id]],
      ['filter[status]=Promotable', [scanned.id, gifted.id]],
      ['filter[status]=PromotedToPayment', [promoted.id]],
      ['filter[status]=Invalid', [invalid.id]],
      ['filter[status]=Canceled', [canceled.id]],
      ['filter[status]=Expired', []],
      ['filter[status]=RequiresAction', []],
      ['filter[initiator]=Customer&filter[paymentMethod]=Wallet', [scanned.id]],
      ['filter[initiator]=Merchant&filter[status]=Promotable', []],
      ['filter[paymentMethod]=Wallet&filter[status]=Promotable', [scanned.id]],
    ];
    for (const [q, ids] of expect) {
      const res = await listIntents(t, lm, q);
      assert.deepEqual(sorted(res.body.data.map((i: { id: string }) => i.id)), sorted(ids), q);
      assert.equal(res.body.meta.total, ids.length, q);
    }
    for (const q of [
      'filter[status]=Done',
      'filter[initiator]=Bank',
      'filter[paymentMethod]=Card',
      'filter[walletId]=x',
    ]) {
      const res = await t.request('GET', `/api/v1/payment-intents?${q}`, { as: lm });
      assertError(res, 400, 'BadRequest', { parameter: q.split('=')[0] });
    }
  });

  test("the list is the merchant's own", async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const mine = await createIntent(t, m, { amount: 100, walletId: wallet.id });
    const theirs = await idsOf(t, other, 'page[limit]=50');
    assert.ok(!theirs.includes(mine.id));
    const fresh = await t.createMerchant();
    const empty = await listIntents(t, fresh);
    assert.deepEqual(empty.body.data, []);
    assert.deepEqual(empty.body.meta, { total: 0, limit: 10, offset: 0 });
  });

  test('sort: default -createdAt; createdAt, updatedAt, amount, expiresAt, status, several keys, - for descending; unknown fields are 400', async () => {
    const sm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, sm, 1000);
    const a = await createIntent(t, sm, { amount: 300, walletId: wallet.id });
    t.clock.advance(1000);
    const b = await createIntent(t, sm, { amount: 100, walletId: wallet.id });
    t.clock.advance(1000);
    const c = await createIntent(t, sm, { amount: 200, walletId: wallet.id });
    t.clock.advance(1000);
    assert.equal((await cancel(t, sm, a.id)).status, 200); // a: Canceled, updated last
    const expect: [string, string[]][] = [
      ['', [c.id, b.id, a.id]],
      ['sort=-createdAt', [c.id, b.id, a.id]],
      ['sort=createdAt', [a.id, b.id, c.id]],
      ['sort=amount', [b.id, c.id, a.id]],
      ['sort=-amount', [a.id, c.id, b.id]],
      ['sort=expiresAt', [a.id, b.id, c.id]],
      ['sort=-expiresAt', [c.id, b.id, a.id]],
      ['sort=-updatedAt', [a.id, c.id, b.id]],
      ['sort=updatedAt', [b.id, c.id, a.id]],
      ['sort=status,amount', [a.id, b.id, c.id]],
      ['sort=-status,-amount', [c.id, b.id, a.id]],
      ['sort=status,-createdAt', [a.id, c.id, b.id]],
    ];
    for (const [q, ids] of expect) assert.deepEqual(await idsOf(t, sm, q), ids, q || '(default)');
    for (const q of ['sort=name', 'sort=-reference', 'sort=amount,bogus', 'sort=%2B']) {
      const res = await t.request('GET', `/api/v1/payment-intents?${q}`, { as: sm });
      assertError(res, 400, 'BadRequest', { parameter: 'sort' });
    }
  });

  test('sort=status orders by the status as read: an intent past expiresAt sorts as Expired, like filter[status] matches it', async () => {
    const sm = await t.createMerchant({ paymentIntentTtlSeconds: 60 });
    const { wallet } = await fundedWallet(t, sm, 1000);
    const expired = await createIntent(t, sm, { amount: 100, walletId: wallet.id });
    t.clock.advance(30_000);
    const canceled = await createIntent(t, sm, { amount: 200, walletId: wallet.id });
    assert.equal((await cancel(t, sm, canceled.id)).status, 200);
    const promotable = await createIntent(t, sm, { amount: 300, walletId: wallet.id });
    t.clock.advance(30_001); // the first is past expiresAt; the sweeper has not run
    const listed = (await listIntents(t, sm, 'sort=status')).body.data.map(
      (i: { id: string; attributes: { status: string } }) => [i.id, i.attributes.status],
    );
    assert.deepEqual(listed, [
      [canceled.id, 'Canceled'],
      [expired.id, 'Expired'],
      [promotable.id, 'Promotable'],
    ]);
    const desc = (await listIntents(t, sm, 'sort=-status')).body.data.map(
      (i: { attributes: { status: string } }) => i.attributes.status,
    );
    assert.deepEqual(desc, ['Promotable', 'Expired', 'Canceled']);
  });

  test('paging: page[limit] and page[offset], meta and links; bad values are 400, limits above 50 capped', async () => {
    const pm = await t.createMerchant();
    const { wallet } = await fundedWallet(t, pm, 1000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.unshift((await createIntent(t, pm, { amount: 100 + i, walletId: wallet.id })).id);
      t.clock.advance(1000);
    }
    const first = await listIntents(t, pm, 'page[limit]=2');
    assert.deepEqual(
      first.body.data.map((i: { id: string }) => i.id),
      ids.slice(0, 2),
    );
    assert.deepEqual(first.body.meta, { total: 3, limit: 2, offset: 0 });
    assert.equal(first.body.links.next, 'http://api.test/api/v1/payment-intents?page[limit]=2&page[offset]=2');
    assert.equal(first.body.links.prev, null);
    const second = await listIntents(t, pm, 'page[limit]=2&page[offset]=2');
    assert.deepEqual(
      second.body.data.map((i: { id: string }) => i.id),
      ids.slice(2),
    );
    assert.deepEqual(second.body.meta, { total: 3, limit: 2, offset: 2 });
    assert.equal(second.body.links.next, null);
    assert.equal(second.body.links.prev, 'http://api.test/api/v1/payment-intents?page[limit]=2&page[offset]=0');
    const beyond = await listIntents(t, pm, 'page[offset]=10');
    assert.deepEqual(beyond.body.data, []);
    assert.equal(beyond.body.meta.total, 3);
    assert.equal((await listIntents(t, pm, 'page[limit]=500')).body.meta.limit, 50);
    for (const q of ['page[limit]=0', 'page[limit]=x', 'page[offset]=-1']) {
      const res = await t.request('GET', `/api/v1/payment-intents?${q}`, { as: pm });
      assertError(res, 400, 'BadRequest', { parameter: q.split('=')[0] });
    }
  });

  test("include=client adds the merchant, include=payments the listed intents' payments; unknown includes are 400", async () => {
    const im = await t.createMerchant();
    const name = (await t.adminRequest('GET', `/admin/v1/clients/${im.clientId}`)).body.data.attributes.name;
    const { wallet } = await fundedWallet(t, im, 5000);
    const paid = await createIntent(t, im, { amount: 1000, walletId: wallet.id });
    const payment = await authorize(t, im, paid.id, 800);
    const unpaid = await createIntent(t, im, { amount: 200, walletId: wallet.id });
    const client = { type: 'Client', id: im.clientId, attributes: { name } };

    const plain = await listIntents(t, im);
    assert.equal(plain.body.included, undefined);
    const byId = (res: Response) => new Map(res.body.data.map((i: { id: string }) => [i.id, i]));
    // The payments relationship is always there.
    assert.deepEqual((byId(plain).get(paid.id) as any).relationships.payments.data, [
      { type: 'Payment', id: payment.id },
    ]);
    assert.deepEqual((byId(plain).get(unpaid.id) as any).relationships.payments.data, []);

    assert.deepEqual((await listIntents(t, im, 'include=client')).body.included, [client]);
    const withPayments = await listIntents(t, im, 'include=payments');
    assert.equal(withPayments.body.included.length, 1);
    assert.equal(withPayments.body.included[0].type, 'Payment');
    assert.equal(withPayments.body.included[0].id, payment.id);
    assert.equal(withPayments.body.included[0].attributes.amount, 800);
    assert.equal(withPayments.body.included[0].attributes.status, 'Created');
    assert.equal(withPayments.body.included[0].relationships.paymentIntent.data.id, paid.id);
    // Only the listed intents' payments.
    assert.deepEqual((await listIntents(t, im, 'include=payments&filter[status]=Promotable')).body.included, []);
    const both = await listIntents(t, im, 'include=client,payments');
    assert.deepEqual(
      both.body.included.map((r: { type: string; id: string }) => `${r.type}:${r.id}`).sort(),
      [`Client:${im.clientId}`, `Payment:${payment.id}`].sort(),
    );
    for (const q of ['include=wallet', 'include=client,user', 'include=paymentIntent']) {
      assertError(await t.request('GET', `/api/v1/payment-intents?${q}`, { as: im }), 400, 'BadRequest', {
        parameter: 'include',
      });
    }
  });

  test("get: its payments always in included (Accrue's GetPaymentIntentResponse), include=client adds the client; include=balance is not offered there; another merchant's intent is 404", async () => {
    const gm = await t.createMerchant();
    const name = (await t.adminRequest('GET', `/admin/v1/clients/${gm.clientId}`)).body.data.attributes.name;
    const { wallet } = await fundedWallet(t, gm, 5000);
    const i = await createIntent(t, gm, { amount: 1000, walletId: wallet.id });
    const payment = await authorize(t, gm, i.id, 1000);

    const plain = await getIntent(t, gm, i.id);
    assert.deepEqual(
      plain.included.map((r: { type: string; id: string }) => `${r.type}:${r.id}`),
      [`Payment:${payment.id}`],
      'the payments without include',
    );
    assert.equal(plain.data.attributes.status, 'PromotedToPayment');
    assert.deepEqual(plain.data.relationships.payments.data, [{ type: 'Payment', id: payment.id }]);
    const withClient = (await getIntent(t, gm, i.id, '?include=client')).included;
    assert.deepEqual(
      withClient.find((r: { type: string }) => r.type === 'Client'),
      { type: 'Client', id: gm.clientId, attributes: { name } },
    );
    assert.deepEqual(withClient.map((r: { type: string }) => r.type).sort(), ['Client', 'Payment']);
    const withPayments = await getIntent(t, gm, i.id, '?include=payments');
    assert.equal(withPayments.included.length, 1);
    assert.equal(withPayments.included[0].type, 'Payment');
    assert.equal(withPayments.included[0].id, payment.id);
    assert.deepEqual(withPayments.included[0].attributes, (await paymentOf(t, gm, payment.id)).attributes);
    const both = await getIntent(t, gm, i.id, '?include=payments,client');
    assert.deepEqual(both.included.map((r: { type: string }) => r.type).sort(), ['Client', 'Payment']);
    // Get without payments: included is an empty list, with or without the include.
    const fresh = await createIntent(t, gm, { amount: 10, walletId: wallet.id });
    assert.deepEqual((await getIntent(t, gm, fresh.id, '?include=payments')).included, []);
    assert.deepEqual((await getIntent(t, gm, fresh.id)).included, []);

    for (const q of ['?include=balance', '?include=wallet']) {
      assertError(await t.request('GET', `/api/v1/payment-intents/${i.id}${q}`, { as: gm }), 400, 'BadRequest', {
        parameter: 'include',
      });
    }
    assertError(
      await t.request('GET', `/api/v1/payment-intents/${i.id}?filter[status]=Promotable`, { as: gm }),
      400,
      'BadRequest',
    );
    for (const id of [UNKNOWN_ID]) {
      assertError(await t.request('GET', `/api/v1/payment-intents/${id}`, { as: gm }), 404, 'PaymentIntentNotFound');
    }
    assertError(await t.request('GET', `/api/v1/payment-intents/${i.id}`, { as: other }), 404, 'PaymentIntentNotFound');
    assertError(
      await t.request('GET', `/api/v1/payment-intents/${i.id}?include=client,payments`, { as: other }),
      404,
      'PaymentIntentNotFound',
    );
    assertError(await t.request('GET', '/api/v1/payment-intents/not-a-uuid', { as: gm }), 400, 'BadRequest');
    assert.equal((await t.request('GET', `/api/v1/payment-intents/${i.id}`)).status, 401);
  });
});

describe('payment intents: cancel', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('Promotable → 200 Canceled (and it stays so); canceling again is 400 IllegalOperation; a Canceled intent cannot be authorized', async () => {
    const { wallet } = await fundedWallet(t, m, 3000);
    const i = await createIntent(t, m, { amount: 1000, walletId: wallet.id });
    t.clock.advance(5000);
    const res = await cancel(t, m, i.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.id, i.id);
    assert.equal(res.body.data.type, 'PaymentIntent');
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.equal(res.body.data.attributes.updatedAt, t.clock.now().toISOString());
    assert.equal(res.body.data.attributes.createdAt, i.attributes.createdAt);
    assert.deepEqual((await getIntent(t, m, i.id)).data, res.body.data);
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.equal((await authorizeReq(t, m, i.id, 1000)).status, 402);
    assert.equal(await statusOf(t, m, i.id), 'Canceled');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 0);
    // Canceled never becomes Expired.
    t.clock.advance(901_000);
    await sweep(t);
    assert.equal(await statusOf(t, m, i.id), 'Canceled');
  });

  test('a gift intent (Promotable) can be canceled', async () => {
    const g = await createIntent(t, m, { amount: 100, lookUpId: await gift(t, m, 100) });
    const res = await cancel(t, m, g.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
  });

  test('Invalid → 200 Canceled', async () => {
    const { wallet } = await unapprovedWallet(t, m, 'Denied');
    const i = await createIntent(t, m, { amount: 1000, walletId: wallet.id });
    assert.equal(i.attributes.status, 'Invalid');
    const res = await cancel(t, m, i.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.equal(await statusOf(t, m, i.id), 'Canceled');
  });

  test('RequiresAction (authorize beyond the wallet with no connected account) → 200 Canceled; nothing stays reserved', async () => {
    const user = await approvedUser(t, m);
    const wallet = await createWallet(t, m, user.id);
    await issueReward(t, m, wallet.id, 500);
    const i = await createIntent(t, m, { amount: 2000, walletId: wallet.id });
    assert.deepEqual(i.attributes.balance, { available: 500, eligibleReward: 500, upperLimit: 500 });
    const auth = await authorizeReq(t, m, i.id, 2000);
    assert.equal(auth.status, 402, auth.raw);
    // Rendered by the authorize path itself, yet with the request's id like every error.
    assert.equal(errorsOf(auth)[0]!.id, auth.headers['x-request-id']);
    const read = (await getIntent(t, m, i.id, '?include=payments')).data;
    assert.equal(read.attributes.status, 'RequiresAction');
    assert.equal(read.attributes.error, 'LinkedAccountMissing');
    assert.deepEqual(read.relationships.payments.data, []);
    const res = await cancel(t, m, i.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.reward.merchant, 500);
    assert.equal(b.reserved.total, 0);
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    await assertLedgerSound(t);
  });

  test('PromotedToPayment with its payment Created → 200 Canceled; the payment is Canceled and every reserved cent is available again', async () => {
    const { wallet } = await fundedWallet(t, m, 10_000);
    await issueReward(t, m, wallet.id, 1000);
    const before = await balanceOf(t, m, wallet.id);
    // Wallet money and a linked-account part: 1000 reward + 10000 deposit + 4000 from the bank.
    const i = await createIntent(t, m, { amount: 15_000, walletId: wallet.id });
    const payment = await authorize(t, m, i.id, 15_000);
    const held = await balanceOf(t, m, wallet.id);
    assert.equal(held.available.total, 0);
    assert.equal(held.reserved.total, 11_000);
    t.clock.advance(1000);
    const res = await cancel(t, m, i.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.deepEqual(res.body.data.relationships.payments.data, [{ type: 'Payment', id: payment.id }]);
    const p = await paymentOf(t, m, payment.id);
    assert.equal(p.attributes.status, 'Canceled');
    assert.deepEqual(await balanceOf(t, m, wallet.id), before);
    const after = await balanceOf(t, m, wallet.id);
    assert.equal(after.available.deposit, 10_000);
    assert.equal(after.available.reward.merchant, 1000);
    assert.equal(after.reserved.total, 0);
    // The canceled payment cannot be captured; the intent cannot be canceled again.
    const capture = await t.request('POST', `/api/v1/payments/${payment.id}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 100 } } },
    });
    assertError(capture, 402, 'IllegalOperation');
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.deepEqual(await balanceOf(t, m, wallet.id), before);
    await assertLedgerSound(t);
  });

  test("PromotedToPayment of a gift with money held on the gift's card → 200 Canceled; the hold goes back to the gift", async () => {
    const code = await gift(t, m, 1000);
    const i = await createIntent(t, m, { amount: 1000, lookUpId: code });
    const payment = await authorize(t, m, i.id, 700);
    const held = await t.request('POST', `/api/v1/simulation/${payment.id}/card/auth`, { as: m });
    assert.equal(held.status, 200, held.raw);
    assert.equal(await giftLeft(t, m, code), 300);
    const res = await cancel(t, m, i.id);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.status, 'Canceled');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Canceled');
    assert.equal(await giftLeft(t, m, code), 1000);
    await assertLedgerSound(t);
  });

  test('PromotedToPayment with its payment Processing, then Sent: 400 IllegalOperation, nothing changes', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const i = await createIntent(t, m, { amount: 2000, walletId: wallet.id });
    const payment = await authorize(t, m, i.id, 2000);
    const cap = await t.request('POST', `/api/v1/payments/${payment.id}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 2000 } } },
    });
    assert.equal(cap.status, 200, cap.raw);
    assert.equal(cap.body.data.attributes.status, 'Processing');
    const captured = await balanceOf(t, m, wallet.id);
    assert.equal(captured.available.deposit, 3000);
    assert.equal(captured.reserved.total, 0);

    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.equal(await statusOf(t, m, i.id), 'PromotedToPayment');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Processing');
    assert.deepEqual(await balanceOf(t, m, wallet.id), captured);

    t.clock.advance(1000);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Sent');
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.equal(await statusOf(t, m, i.id), 'PromotedToPayment');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Sent');
    assert.deepEqual(await balanceOf(t, m, wallet.id), captured);
    await assertLedgerSound(t);
  });

  test('PromotedToPayment captured at authorization (captureMode automatic), or whose bank pull failed: 400 IllegalOperation', async () => {
    const am = await t.createMerchant({ captureMode: 'automatic' });
    const { wallet } = await fundedWallet(t, am, 3000);
    const i = await createIntent(t, am, { amount: 1000, walletId: wallet.id });
    const res = await authorizeReq(t, am, i.id, 1000);
    assert.equal(res.status, 201, res.raw);
    const paymentId = res.body.included[0].id;
    assert.equal((await paymentOf(t, am, paymentId)).attributes.status, 'Processing');
    const captured = await balanceOf(t, am, wallet.id);
    assertError(await cancel(t, am, i.id), 400, 'IllegalOperation');
    assert.equal(await statusOf(t, am, i.id), 'PromotedToPayment');
    assert.deepEqual(await balanceOf(t, am, wallet.id), captured);
    // The bank pull fails: the payment is Failed; the intent still cannot be canceled.
    const failed = await t.request('POST', `/api/v1/simulation/payments/${paymentId}/fail-bank-pull`, { as: am });
    assert.equal(failed.status, 200, failed.raw);
    assert.equal(failed.body.data.attributes.status, 'Failed');
    const afterFail = await balanceOf(t, am, wallet.id);
    assert.equal(afterFail.available.deposit, 3000);
    assertError(await cancel(t, am, i.id), 400, 'IllegalOperation');
    assert.deepEqual(await balanceOf(t, am, wallet.id), afterFail);
    await assertLedgerSound(t);
  });

  test('concurrent cancels of an authorized intent: one 200, the others 400; the reservation is released once', async () => {
    const { wallet } = await fundedWallet(t, m, 4000);
    const i = await createIntent(t, m, { amount: 2500, walletId: wallet.id });
    const payment = await authorize(t, m, i.id, 2500);
    const results = await Promise.all(Array.from({ length: 4 }, () => cancel(t, m, i.id)));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 400, 400, 400], results.map((r) => r.raw).join('\n'));
    for (const r of results.filter((x) => x.status === 400)) assert.equal(errorsOf(r)[0]!.code, 'IllegalOperation');
    assert.equal(await statusOf(t, m, i.id), 'Canceled');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Canceled');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 4000);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.total.total, 4000);
    await assertLedgerSound(t);
  });

  test('an intent cancel racing a capture, or a payment cancel: exactly one wins, the money follows it, never a 500', async () => {
    const capture = (paymentId: string) =>
      t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
        as: m,
        body: { data: { type: 'CapturePayment', attributes: { amount: 600 } } },
      });
    const cancelPayment = (paymentId: string) => t.request('POST', `/api/v1/payments/${paymentId}/cancel`, { as: m });
    // Several rounds, so that on PostgreSQL both orders of arrival happen.
    for (let round = 0; round < 8; round++) {
      const { wallet } = await fundedWallet(t, m, 1000);
      const i = await createIntent(t, m, { amount: 600, walletId: wallet.id });
      const payment = await authorize(t, m, i.id, 600);
      const other = round % 2 === 0 ? capture : cancelPayment;
      const [byIntent, byPayment] = await Promise.all([cancel(t, m, i.id), other(payment.id)]);
      // A refused capture is 402 (Accrue's failure status for capture); a refused cancel 400.
      const refused = byPayment.status !== 200 && other === capture ? 402 : 400;
      assert.deepEqual(
        [byIntent.status, byPayment.status].sort(),
        [200, refused].sort(),
        `${byIntent.raw}\n${byPayment.raw}`,
      );
      const loser = byIntent.status === 200 ? byPayment : byIntent;
      assert.equal(errorsOf(loser)[0]!.code, 'IllegalOperation', loser.raw);
      const b = await balanceOf(t, m, wallet.id);
      const paid = (await paymentOf(t, m, payment.id)).attributes.status;
      if (other === capture && byPayment.status === 200) {
        assert.equal(paid, 'Processing');
        assert.equal(await statusOf(t, m, i.id), 'PromotedToPayment');
        assert.equal(b.available.deposit, 400);
      } else {
        assert.equal(paid, 'Canceled');
        assert.equal(await statusOf(t, m, i.id), 'Canceled');
        assert.equal(b.available.deposit, 1000);
      }
      assert.equal(b.reserved.total, 0);
    }
    await assertLedgerSound(t);
  });

  test("another merchant's intent, or an unknown one, is 404 PaymentIntentNotFound and is left alone", async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const i = await createIntent(t, m, { amount: 100, walletId: wallet.id });
    assertError(await cancel(t, other, i.id), 404, 'PaymentIntentNotFound');
    assertError(await cancel(t, m, UNKNOWN_ID), 404, 'PaymentIntentNotFound');
    assertError(await cancel(t, m, 'nope'), 400, 'BadRequest');
    assert.equal(await statusOf(t, m, i.id), 'Promotable');
  });
});

describe('payment intents: expiry', () => {
  let t: TestApp;
  let m: Merchant;
  const TTL_MS = 60_000;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({ paymentIntentTtlSeconds: 60 });
  });
  after(() => t.close());

  test('past expiresAt a Promotable intent reads Expired (get, list, filter) before the sweeper; the sweeper records it', async () => {
    const xm = await t.createMerchant({ paymentIntentTtlSeconds: 60 });
    const { wallet } = await fundedWallet(t, xm, 1000);
    const i = await createIntent(t, xm, { amount: 100, walletId: wallet.id });
    t.clock.advance(TTL_MS - 1);
    assert.equal(await statusOf(t, xm, i.id), 'Promotable');
    assert.deepEqual(await idsOf(t, xm, 'filter[status]=Promotable'), [i.id]);
    assert.deepEqual(await idsOf(t, xm, 'filter[status]=Expired'), []);
    const later = await createIntent(t, xm, { amount: 200, walletId: wallet.id });

    t.clock.advance(2);
    const read = (await getIntent(t, xm, i.id)).data;
    assert.equal(read.attributes.status, 'Expired');
    assert.equal(read.attributes.updatedAt, i.attributes.updatedAt, 'only read so: nothing recorded yet');
    assert.deepEqual(await idsOf(t, xm, 'filter[status]=Expired'), [i.id]);
    assert.deepEqual(await idsOf(t, xm, 'filter[status]=Promotable'), [later.id]);
    const listed = (await listIntents(t, xm)).body.data.find((x: { id: string }) => x.id === i.id);
    assert.equal(listed.attributes.status, 'Expired');

    t.clock.advance(1000);
    assert.ok((await sweep(t)) >= 1);
    const recorded = (await getIntent(t, xm, i.id)).data;
    assert.equal(recorded.attributes.status, 'Expired');
    assert.equal(recorded.attributes.updatedAt, t.clock.now().toISOString(), 'the sweeper recorded it');
    assert.deepEqual(await idsOf(t, xm, 'filter[status]=Expired'), [i.id]);
    assert.equal(await statusOf(t, xm, later.id), 'Promotable');
    // Recorded once: another sweep does not touch it again.
    t.clock.advance(1000);
    await sweep(t);
    assert.equal((await getIntent(t, xm, i.id)).data.attributes.updatedAt, recorded.attributes.updatedAt);
  });

  test('a RequiresAction intent expires too', async () => {
    const user = await approvedUser(t, m);
    const wallet = await createWallet(t, m, user.id);
    const i = await createIntent(t, m, { amount: 1000, walletId: wallet.id });
    assert.equal((await authorizeReq(t, m, i.id, 1000)).status, 402);
    assert.equal(await statusOf(t, m, i.id), 'RequiresAction');
    t.clock.advance(TTL_MS + 1);
    assert.equal(await statusOf(t, m, i.id), 'Expired');
    assert.ok(!(await idsOf(t, m, 'filter[status]=RequiresAction&page[limit]=50')).includes(i.id));
    assert.ok((await idsOf(t, m, 'filter[status]=Expired&page[limit]=50')).includes(i.id));
    await sweep(t);
    assert.equal(await statusOf(t, m, i.id), 'Expired');
    assertError(await authorizeReq(t, m, i.id, 1000), 402, 'PaymentIntentExpired');
  });

  test("the sweeper finds what is due through payment_intents_expiring_idx, in a prepared statement's generic plan (no scan of every intent)", async () => {
    const plan = await genericPlan(t.ctx.db, lockDueExpiries(t.ctx.db, t.clock.now(), 200).toSQL());
    assert.match(plan, /payment_intents_expiring_idx/, plan);
    assert.doesNotMatch(plan, /Seq Scan/, plan);
  });

  test('filter[status]=Expired and =Promotable count the due intents by index, the statuses literals of the generic plan (so payment_intents_expiring_idx can serve it)', async () => {
    for (const status of ['Expired', 'Promotable']) {
      const plan = await genericPlan(
        t.ctx.db,
        new PgDialect().sqlToQuery(sql`select ${intentTotal(m.clientId, { status }, t.clock.now())}`),
      );
      // Which index the planner picks depends on the table's statistics; a literal status is what
      // makes the partial index one it can pick at all.
      assert.match(plan, /status = 'Promotable'::text/, plan);
      if (status === 'Expired') assert.match(plan, /status = 'RequiresAction'::text/, plan);
      assert.doesNotMatch(plan, /Seq Scan/, plan);
    }
  });

  test('an authorized (PromotedToPayment) intent does not expire', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const i = await createIntent(t, m, { amount: 500, walletId: wallet.id });
    const payment = await authorize(t, m, i.id, 500);
    t.clock.advance(TTL_MS + 1);
    assert.equal(await statusOf(t, m, i.id), 'PromotedToPayment');
    await sweep(t);
    assert.equal(await statusOf(t, m, i.id), 'PromotedToPayment');
    assert.equal((await paymentOf(t, m, payment.id)).attributes.status, 'Created');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 500);
  });

  test('an expired intent cannot be authorized (402 PaymentIntentExpired), before and after the sweeper; nothing is reserved', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const i = await createIntent(t, m, { amount: 1000, walletId: wallet.id });
    const g = await createIntent(t, m, { amount: 100, lookUpId: await gift(t, m, 100) });
    t.clock.advance(TTL_MS + 1);
    for (const id of [i.id, g.id]) assertError(await authorizeReq(t, m, id, 100), 402, 'PaymentIntentExpired');
    await sweep(t);
    for (const id of [i.id, g.id]) assertError(await authorizeReq(t, m, id, 100), 402, 'PaymentIntentExpired');
    assert.deepEqual((await getIntent(t, m, i.id, '?include=payments')).included, []);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.deposit, 5000);
    assert.equal(b.reserved.total, 0);
    await assertLedgerSound(t);
  });

  test('an Expired intent cannot be canceled (400 IllegalOperation), before and after the sweeper', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const i = await createIntent(t, m, { amount: 100, walletId: wallet.id });
    t.clock.advance(TTL_MS + 1);
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.equal(await statusOf(t, m, i.id), 'Expired');
    await sweep(t);
    assertError(await cancel(t, m, i.id), 400, 'IllegalOperation');
    assert.equal(await statusOf(t, m, i.id), 'Expired');
  });
});

describe('payment intents: events', () => {
  test('PaymentIntentCreated on create; PaymentIntentUpdated on cancel, authorize, RequiresAction and expiry; included[0] is the intent', async () => {
    const t = await createTestApp({ env: LOCAL_RECEIVERS });
    const rx = await startReceiver();
    try {
      const m = await t.createMerchant({ paymentIntentTtlSeconds: 60 });
      const hook = await t.request('POST', '/api/v1/webhooks', {
        as: m,
        body: webhookBody({ url: rx.url, topics: ['PaymentIntentCreated', 'PaymentIntentUpdated'] }),
      });
      assert.equal(hook.status, 201, hook.raw);
      const { user, wallet } = await fundedWallet(t, m, 5000);
      const noAccount = await approvedUser(t, m);
      const bare = await createWallet(t, m, noAccount.id);
      await t.ctx.webhooks.runOnce(); // nothing of this yet

      const canceledRes = await postIntent(t, m, { amount: 1000, walletId: wallet.id, reference: 'evt-1' });
      const canceled = canceledRes.body.data;
      const giftIntent = await createIntent(t, m, { amount: 100, lookUpId: await gift(t, m, 100) });
      const promoted = await createIntent(t, m, { amount: 2000, walletId: wallet.id });
      const needsAction = await createIntent(t, m, { amount: 700, walletId: bare.id });
      t.clock.advance(1000);
      const cancelRes = await cancel(t, m, canceled.id);
      assert.equal(cancelRes.status, 200);
      const payment = await authorize(t, m, promoted.id, 2000);
      assert.equal((await authorizeReq(t, m, needsAction.id, 700)).status, 402);
      t.clock.advance(60_000);
      await sweep(t);
      await sweep(t);
      const expiredAt = t.clock.now().toISOString();
      await t.ctx.webhooks.runOnce();

      const events = rx.received.map((r) => JSON.parse(r.body));
      const of = (topic: string, id: string) =>
        events.filter((e) => e.data.attributes.topic === topic && e.included[0].id === id);
      // 4 created; updated: 1 cancel, 1 authorize, 1 requires action, 2 expiries (gift, requires action).
      assert.equal(
        events.length,
        9,
        JSON.stringify(events.map((e) => [e.data.attributes.topic, e.included[0].attributes.status])),
      );
      for (const e of events) {
        assert.equal(e.data.type, 'WebhookEvent');
        assert.equal(e.data.attributes.clientId, m.clientId);
        assert.equal(e.included.length, 1);
        assert.equal(e.included[0].type, 'PaymentIntent');
        assert.deepEqual(e.data.relationships.event.data, { type: 'PaymentIntent', id: e.included[0].id });
      }

      const [created] = of('PaymentIntentCreated', canceled.id);
      assert.deepEqual(created.included[0], canceled, 'the resource as created');
      assert.equal(created.data.attributes.userId, user.id);
      assert.equal(created.data.attributes.walletId, wallet.id);
      const [giftCreated] = of('PaymentIntentCreated', giftIntent.id);
      assert.deepEqual(giftCreated.included[0], giftIntent);
      assert.equal(giftCreated.data.attributes.userId, undefined);
      assert.equal(giftCreated.data.attributes.walletId, undefined);
      assert.equal(of('PaymentIntentCreated', promoted.id).length, 1);
      assert.equal(of('PaymentIntentCreated', needsAction.id).length, 1);

      const canceledEvents = of('PaymentIntentUpdated', canceled.id);
      assert.equal(canceledEvents.length, 1);
      assert.deepEqual(canceledEvents[0].included[0], cancelRes.body.data);

      const promotedEvents = of('PaymentIntentUpdated', promoted.id);
      assert.equal(promotedEvents.length, 1, 'an authorized intent does not expire');
      assert.equal(promotedEvents[0].included[0].attributes.status, 'PromotedToPayment');
      assert.deepEqual(promotedEvents[0].included[0].relationships.payments.data, [
        { type: 'Payment', id: payment.id },
      ]);

      const actionEvents = of('PaymentIntentUpdated', needsAction.id).map((e) => e.included[0].attributes);
      assert.deepEqual(
        actionEvents.map((a) => [a.status, a.error]).sort(),
        [
          ['Expired', 'LinkedAccountMissing'],
          ['RequiresAction', 'LinkedAccountMissing'],
        ].sort(),
      );

      const giftEvents = of('PaymentIntentUpdated', giftIntent.id);
      assert.equal(giftEvents.length, 1, 'expired once, however often the sweeper runs');
      assert.equal(giftEvents[0].included[0].attributes.status, 'Expired');
      assert.equal(giftEvents[0].included[0].attributes.updatedAt, expiredAt);
      assert.equal(giftEvents[0].data.attributes.createdAt, expiredAt);
    } finally {
      await t.close();
      await rx.close();
    }
  });
});
