// Wallets (decisions §6): create, read with include, list, balance, barcodes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, createUser, errorsOf, phone, uniqueEmail, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, createWallet, fundedWallet } from '../../test/money.ts';

const ZERO = { deposit: 0, reward: { accrue: 0, merchant: 0, total: 0 }, total: 0 };

describe('wallets', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('create is 201, Active, with the user relationship; no KYC needed', async () => {
    const u = await createUser(t, m);
    const res = await t.request('POST', '/api/v1/wallets', { as: m, body: { data: { type: 'Wallet', attributes: { userId: u.id } } } });
    assert.equal(res.status, 201);
    const w = res.body.data;
    assert.equal(w.type, 'Wallet');
    assert.equal(res.headers.location, `http://api.test/api/v1/wallets/${w.id}`);
    assert.deepEqual(w.attributes, { status: 'Active', closedAt: null, updatedAt: t.clock.now().toISOString(), createdAt: t.clock.now().toISOString() });
    assert.deepEqual(w.relationships.user.data, { type: 'User', id: u.id });
  });

  test('one wallet per user per merchant: 409 WalletAlreadyExists', async () => {
    const u = await createUser(t, m);
    await createWallet(t, m, u.id);
    const again = await t.request('POST', '/api/v1/wallets', { as: m, body: { data: { type: 'Wallet', attributes: { userId: u.id } } } });
    assert.equal(again.status, 409);
    assert.equal(errorsOf(again)[0]!.code, 'WalletAlreadyExists');
    const racing = await Promise.all(Array.from({ length: 5 }, async () => {
      const v = await createUser(t, m);
      return Promise.all(Array.from({ length: 4 }, () => t.request('POST', '/api/v1/wallets', { as: m, body: { data: { type: 'Wallet', attributes: { userId: v.id } } } })));
    }));
    for (const group of racing) {
      assert.deepEqual(group.map((r) => r.status).sort(), [201, 409, 409, 409], 'concurrent creates make one wallet');
    }
    await assertLedgerSound(t);
  });

  test("an unknown user, or another merchant's, is 400 UserNotFound", async () => {
    const theirs = await createUser(t, other);
    for (const userId of ['0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', theirs.id]) {
      const res = await t.request('POST', '/api/v1/wallets', { as: m, body: { data: { type: 'Wallet', attributes: { userId } } } });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.code, 'UserNotFound');
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/userId');
    }
    for (const attributes of [{}, { userId: 'x' }, { userId: 7 }, { userId: theirs.id, status: 'Closed' }]) {
      const res = await t.request('POST', '/api/v1/wallets', { as: m, body: { data: { type: 'Wallet', attributes } } });
      assert.equal(res.status, 400, JSON.stringify(attributes));
      assert.equal(errorsOf(res)[0]!.code, 'ValidationError');
    }
  });

  test('get, with include=user; an unknown include is 400', async () => {
    const u = await createUser(t, m, { firstName: 'Wally' });
    const w = await createWallet(t, m, u.id);
    const plain = await t.request('GET', `/api/v1/wallets/${w.id}`, { as: m });
    assert.equal(plain.status, 200);
    assert.equal(plain.body.included, undefined);
    const withUser = await t.request('GET', `/api/v1/wallets/${w.id}?include=user`, { as: m });
    assert.equal(withUser.body.included.length, 1);
    assert.equal(withUser.body.included[0].type, 'User');
    assert.equal(withUser.body.included[0].id, u.id);
    assert.equal(withUser.body.included[0].attributes.profile.firstName, 'Wally');
    const bad = await t.request('GET', `/api/v1/wallets/${w.id}?include=payments`, { as: m });
    assert.equal(bad.status, 400);
    assert.equal(errorsOf(bad)[0]!.source?.parameter, 'include');
  });

  test('list filters by the wallet user\'s phone, e-mail and reference; pages', async () => {
    const lm = await t.createMerchant();
    const p = phone();
    const e = uniqueEmail();
    const a = await createUser(t, lm, { phoneNumber: p });
    const b = await createUser(t, lm, { email: e });
    const c = await createUser(t, lm);
    await t.request('PATCH', `/api/v1/users/${c.id}/attached-profile`, { as: lm, body: { data: { type: 'AttachedProfile', attributes: { referenceId: 'wallet-ref' } } } });
    const wa = await createWallet(t, lm, a.id);
    const wb = await createWallet(t, lm, b.id);
    const wc = await createWallet(t, lm, c.id);
    const all = await t.request('GET', '/api/v1/wallets/', { as: lm });
    assert.equal(all.body.meta.total, 3);
    const by = async (q: string) => (await t.request('GET', `/api/v1/wallets?${q}`, { as: lm })).body.data.map((w: { id: string }) => w.id);
    assert.deepEqual(await by(`filter[phoneNumber]=${encodeURIComponent(p)}`), [wa.id]);
    assert.deepEqual(await by(`filter[email]=${encodeURIComponent(e)}`), [wb.id]);
    assert.deepEqual(await by('filter[referenceId]=wallet-ref'), [wc.id]);
    assert.deepEqual(await by('page[limit]=1&page[offset]=1'), [wb.id]);
    assert.equal((await t.request('GET', '/api/v1/wallets?filter[referenceId]=wallet-ref', { as: other })).body.meta.total, 0);
  });

  test('a new wallet has every balance member, all zero; withdrawable on request', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    assert.deepEqual(await balanceOf(t, m, w.id), { available: ZERO, pending: ZERO, reserved: { total: 0 }, total: ZERO });
    assert.deepEqual((await balanceOf(t, m, w.id, '?includeWithdrawableAmount=true')).withdrawable, { total: 0 });
    assert.equal((await balanceOf(t, m, w.id, '?includeWithdrawableAmount=false')).withdrawable, undefined);
  });

  test('GET /users/{userId}/wallet-balance is the same body; InvalidUser without a wallet', async () => {
    const { user, wallet } = await fundedWallet(t, m, 2500);
    const a = await t.request('GET', `/api/v1/wallets/${wallet.id}/balance?include=user`, { as: m });
    const b = await t.request('GET', `/api/v1/users/${user.id}/wallet-balance?include=user`, { as: m });
    assert.equal(b.status, 200);
    assert.deepEqual(b.body, a.body);
    assert.equal(a.body.data.attributes.balance.available.deposit, 2500);
    const lonely = await createUser(t, m);
    const none = await t.request('GET', `/api/v1/users/${lonely.id}/wallet-balance`, { as: m });
    assert.equal(none.status, 400);
    assert.equal(errorsOf(none)[0]!.code, 'InvalidUser');
    const unknown = await t.request('GET', '/api/v1/users/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/wallet-balance', { as: m });
    assert.equal(unknown.status, 404);
    assert.equal((await t.request('GET', `/api/v1/users/${user.id}/wallet-balance`, { as: other })).status, 404);
  });

  test('balance userReference must be the wallet\'s user', async () => {
    const u = await createUser(t, m);
    await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, { as: m, body: { data: { type: 'AttachedProfile', attributes: { referenceId: `bal-${u.id}` } } } });
    const w = await createWallet(t, m, u.id);
    for (const ref of [u.id, `bal-${u.id}`]) {
      assert.equal((await t.request('GET', `/api/v1/wallets/${w.id}/balance?userReference=${ref}`, { as: m })).status, 200, ref);
    }
    const stranger = await createUser(t, m);
    for (const ref of [stranger.id, 'nobody']) {
      const res = await t.request('GET', `/api/v1/wallets/${w.id}/balance?userReference=${ref}`, { as: m });
      assert.equal(res.status, 400, ref);
      assert.equal(errorsOf(res)[0]!.code, 'InvalidIdentifier');
    }
  });

  test('bad balance queries are 400', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    for (const q of ['purchaseAmount=-1', 'purchaseAmount=1.5', 'purchaseAmount=ten', 'includeWithdrawableAmount=maybe', 'include=wallet', 'currency=usd']) {
      const res = await t.request('GET', `/api/v1/wallets/${w.id}/balance?${q}`, { as: m });
      assert.equal(res.status, 400, q);
      assert.equal(errorsOf(res)[0]!.code, 'BadRequest', q);
    }
  });

  test("another merchant's wallet is 404 on every wallet route", async () => {
    const { wallet, account } = await fundedWallet(t, m, 1000);
    const routes: [string, string, unknown?][] = [
      ['GET', `/api/v1/wallets/${wallet.id}`],
      ['GET', `/api/v1/wallets/${wallet.id}/balance`],
      ['GET', `/api/v1/wallets/${wallet.id}/transactions`],
      ['POST', `/api/v1/wallets/${wallet.id}/transactions`, { data: { type: 'OneTimeDeposit', attributes: { amount: 500, linkedAccountId: account.id, idempotencyKey: 'x-merchant' } } }],
      ['POST', `/api/v1/wallets/${wallet.id}/withdraw`, { data: { type: 'Withdraw', attributes: { amount: 100 } } }],
      ['POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`],
      ['POST', `/api/v1/simulation/wallets/${wallet.id}/clear-pending/bank`],
      ['POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`],
    ];
    for (const [method, url, body] of routes) {
      const res = await t.request(method, url, { as: other, body });
      assert.equal(res.status, 404, `${method} ${url}: ${res.raw}`);
      assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound', url);
    }
    const reward = await t.request('POST', '/api/v1/rewards', { as: other, body: { data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 100, idempotencyKey: 'r' } } } });
    assert.equal(reward.status, 400);
    assert.equal(errorsOf(reward)[0]!.code, 'WalletNotFound');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 1000, 'untouched');
  });
});

describe('wallet barcodes', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('the sandbox makes a 16-digit barcode valid 10 minutes, usable once; lookup finds the wallet', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const res = await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, { as: m });
    assert.equal(res.status, 201);
    const b = res.body.data.attributes;
    assert.match(b.lookUpId, /^\d{16}$/);
    assert.equal(res.body.data.id, b.lookUpId);
    assert.equal(b.expiresAt, new Date(t.clock.now().getTime() + 600_000).toISOString());
    assert.equal(b.usageLimit, 1);
    assert.equal(b.usageCount, 0);
    const found = await t.request('GET', `/api/v1/wallets/barcode/${b.lookUpId}?include=user`, { as: m });
    assert.equal(found.status, 200);
    assert.equal(found.body.data.id, w.id);
    assert.equal(found.body.included[0].id, u.id);
  });

  test('an expired barcode is 400 WalletIdentifierExpired', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const b = (await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, { as: m, body: { data: { type: 'WalletBarcode', attributes: { ttlSeconds: 60, usageLimit: 3 } } } })).body.data.attributes;
    assert.equal(b.usageLimit, 3);
    t.clock.advance(59_999);
    assert.equal((await t.request('GET', `/api/v1/wallets/barcode/${b.lookUpId}`, { as: m })).status, 200);
    t.clock.advance(1);
    const res = await t.request('GET', `/api/v1/wallets/barcode/${b.lookUpId}`, { as: m });
    assert.equal(res.status, 400);
    assert.equal(errorsOf(res)[0]!.code, 'WalletIdentifierExpired');
  });

  test("barcodes are scoped: another merchant's, unknown ones and gift ids are 404", async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const b = (await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, { as: m })).body.data.attributes;
    const gift = (await t.request('POST', '/api/v1/simulation/gifts', { as: m, body: { data: { type: 'Gift', attributes: { amount: 500 } } } })).body.data;
    for (const [as, id] of [[other, b.lookUpId], [m, '1234567890123456'], [m, gift.id]] as const) {
      const res = await t.request('GET', `/api/v1/wallets/barcode/${id}`, { as });
      assert.equal(res.status, 404, id);
      assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
    }
    assert.equal((await t.request('GET', '/api/v1/wallets/barcode/not%20valid!', { as: m })).status, 400);
  });

  test('barcode bodies are validated', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    for (const attributes of [{ ttlSeconds: 0 }, { ttlSeconds: 86_401 }, { usageLimit: 0 }, { usageLimit: 'once' }, { color: 'red' }]) {
      const res = await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, { as: m, body: { data: { type: 'WalletBarcode', attributes } } });
      assert.equal(res.status, 400, JSON.stringify(attributes));
    }
  });
});
