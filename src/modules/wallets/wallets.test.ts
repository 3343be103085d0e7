// Wallets (docs/adr/0003-double-entry-ledger.md): create, read with include, list, balance, barcodes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createTestApp,
  createUser,
  errorsOf,
  phone,
  uniqueEmail,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, createWallet, fundedWallet } from '../../test/money.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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
    const res = await t.request('POST', '/api/v1/wallets', {
      as: m,
      body: { data: { type: 'Wallet', attributes: { userId: u.id } } },
    });
    assert.equal(res.status, 201);
    const w = res.body.data;
    assert.equal(w.type, 'Wallet');
    assert.equal(res.headers.location, `http://api.test/api/v1/wallets/${w.id}`);
    assert.deepEqual(w.attributes, {
      status: 'Active',
      closedAt: null,
      updatedAt: t.clock.now().toISOString(),
      createdAt: t.clock.now().toISOString(),
    });
    assert.deepEqual(w.relationships.user.data, { type: 'User', id: u.id });
  });

  test('one wallet per user per merchant: 400 WalletAlreadyExists naming the wallet', async () => {
    const u = await createUser(t, m);
    const first = await createWallet(t, m, u.id);
    const again = await t.request('POST', '/api/v1/wallets', {
      as: m,
      body: { data: { type: 'Wallet', attributes: { userId: u.id } } },
    });
    assert.equal(again.status, 400);
    const err = errorsOf(again)[0]!;
    assert.equal(err.code, 'WalletAlreadyExists');
    assert.equal(err.meta.existingId, first.id);
    const about = err.links!.about!;
    assert.ok(about.endsWith(`/api/v1/wallets/${first.id}`), about);
    const followed = await t.request('GET', new URL(about).pathname, { as: m });
    assert.equal(followed.status, 200);
    assert.equal(followed.body.data.id, first.id);
    const racing = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const v = await createUser(t, m);
        return Promise.all(
          Array.from({ length: 4 }, () =>
            t.request('POST', '/api/v1/wallets', {
              as: m,
              body: { data: { type: 'Wallet', attributes: { userId: v.id } } },
            }),
          ),
        );
      }),
    );
    for (const group of racing) {
      assert.deepEqual(group.map((r) => r.status).sort(), [201, 400, 400, 400], 'concurrent creates make one wallet');
    }
    await assertLedgerSound(t);
  });

  test("an unknown user, or another merchant's, is 400 UserNotFound", async () => {
    const theirs = await createUser(t, other);
    for (const userId of ['0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', theirs.id]) {
      const res = await t.request('POST', '/api/v1/wallets', {
        as: m,
        body: { data: { type: 'Wallet', attributes: { userId } } },
      });
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

  test('get, with include=user; without it `included` is empty (Accrue requires the member); an unknown include is 400', async () => {
    const u = await createUser(t, m, { firstName: 'Wally' });
    const w = await createWallet(t, m, u.id);
    const plain = await t.request('GET', `/api/v1/wallets/${w.id}`, { as: m });
    assert.equal(plain.status, 200);
    assert.deepEqual(plain.body.included, []);
    assert.deepEqual(plain.body.data.relationships.user.data, { type: 'User', id: u.id });
    const withUser = await t.request('GET', `/api/v1/wallets/${w.id}?include=user`, { as: m });
    assert.equal(withUser.body.included.length, 1);
    assert.equal(withUser.body.included[0].type, 'User');
    assert.equal(withUser.body.included[0].id, u.id);
    assert.equal(withUser.body.included[0].attributes.profile.firstName, 'Wally');
    const bad = await t.request('GET', `/api/v1/wallets/${w.id}?include=payments`, { as: m });
    assert.equal(bad.status, 400);
    assert.equal(errorsOf(bad)[0]!.source?.parameter, 'include');
  });

  test("list filters by the wallet user's phone, e-mail and reference; pages", async () => {
    const lm = await t.createMerchant();
    const p = phone();
    const e = uniqueEmail();
    const a = await createUser(t, lm, { phoneNumber: p });
    const b = await createUser(t, lm, { email: e });
    const c = await createUser(t, lm);
    await t.request('PATCH', `/api/v1/users/${c.id}/attached-profile`, {
      as: lm,
      body: { data: { type: 'AttachedProfile', attributes: { referenceId: 'wallet-ref' } } },
    });
    const wa = await createWallet(t, lm, a.id);
    const wb = await createWallet(t, lm, b.id);
    const wc = await createWallet(t, lm, c.id);
    const all = await t.request('GET', '/api/v1/wallets/', { as: lm });
    assert.equal(all.body.meta.total, 3);
    const by = async (q: string) =>
      (await t.request('GET', `/api/v1/wallets?${q}`, { as: lm })).body.data.map((w: { id: string }) => w.id);
    assert.deepEqual(await by(`filter[phoneNumber]=${encodeURIComponent(p)}`), [wa.id]);
    assert.deepEqual(await by(`filter[email]=${encodeURIComponent(e)}`), [wb.id]);
    assert.deepEqual(await by('filter[referenceId]=wallet-ref'), [wc.id]);
    assert.deepEqual(await by('page[limit]=1&page[offset]=1'), [wb.id]);
    assert.equal(
      (await t.request('GET', '/api/v1/wallets?filter[referenceId]=wallet-ref', { as: other })).body.meta.total,
      0,
    );
  });

  test('a new wallet has every balance member, all zero; withdrawable on request', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    assert.deepEqual(await balanceOf(t, m, w.id), {
      available: ZERO,
      pending: ZERO,
      reserved: { total: 0 },
      total: ZERO,
    });
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
    const unknown = await t.request('GET', '/api/v1/users/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/wallet-balance', {
      as: m,
    });
    assert.equal(unknown.status, 404);
    assert.equal((await t.request('GET', `/api/v1/users/${user.id}/wallet-balance`, { as: other })).status, 404);
  });

  test("balance userReference must be the wallet's user", async () => {
    const u = await createUser(t, m);
    await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
      as: m,
      body: { data: { type: 'AttachedProfile', attributes: { referenceId: `bal-${u.id}` } } },
    });
    const w = await createWallet(t, m, u.id);
    for (const ref of [u.id, `bal-${u.id}`]) {
      assert.equal(
        (await t.request('GET', `/api/v1/wallets/${w.id}/balance?userReference=${ref}`, { as: m })).status,
        200,
        ref,
      );
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
    for (const q of [
      'purchaseAmount=-1',
      'purchaseAmount=1.5',
      'purchaseAmount=ten',
      'includeWithdrawableAmount=maybe',
      'include=wallet',
      'currency=usd',
    ]) {
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
      [
        'POST',
        `/api/v1/wallets/${wallet.id}/transactions`,
        {
          data: {
            type: 'OneTimeDeposit',
            attributes: { amount: 500, linkedAccountId: account.id, idempotencyKey: 'x-merchant' },
          },
        },
      ],
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
    const reward = await t.request('POST', '/api/v1/rewards', {
      as: other,
      body: { data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 100, idempotencyKey: 'r' } } },
    });
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
    assert.match(res.body.data.id, UUID, "the barcode's own id");
    const now = t.clock.now().toISOString();
    assert.deepEqual(b, {
      lookUpId: b.lookUpId,
      walletId: w.id,
      expiresAt: new Date(t.clock.now().getTime() + 600_000).toISOString(),
      usageLimit: 1,
      usageCount: 0,
      referenceId: null,
      createdAt: now,
      updatedAt: now,
    });
    const found = await t.request('GET', `/api/v1/wallets/barcode/${b.lookUpId}?include=user`, { as: m });
    assert.equal(found.status, 200);
    assert.equal(found.body.data.id, w.id);
    assert.equal(found.body.included[0].id, u.id);
    assert.deepEqual(found.body.data.relationships.user.data, { type: 'User', id: u.id });
    const plain = await t.request('GET', `/api/v1/wallets/barcode/${b.lookUpId}`, { as: m });
    assert.deepEqual(plain.body.included, [], 'included is always there');
  });

  test('an expired barcode is 400 WalletIdentifierExpired', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const b = (
      await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, {
        as: m,
        body: { data: { type: 'WalletBarcode', attributes: { ttlSeconds: 60, usageLimit: 3 } } },
      })
    ).body.data.attributes;
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
    const gift = (
      await t.request('POST', '/api/v1/simulation/gifts', {
        as: m,
        body: { data: { type: 'Gift', attributes: { amount: 500 } } },
      })
    ).body.data;
    for (const [as, id] of [
      [other, b.lookUpId],
      [m, '1234567890123456'],
      [m, gift.id],
    ] as const) {
      const res = await t.request('GET', `/api/v1/wallets/barcode/${id}`, { as });
      assert.equal(res.status, 404, id);
      assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
    }
    assert.equal((await t.request('GET', '/api/v1/wallets/barcode/not%20valid!', { as: m })).status, 400);
  });

  const generate = (walletId: string, attributes: Record<string, unknown>, as = m) =>
    t.request('POST', `/api/v1/simulation/wallets/${walletId}/barcodes`, {
      as,
      body: { data: { type: 'GenerateWalletBarcode', attributes } },
    });
  const listOf = async (walletId: string, query = '') => {
    const res = await t.request('GET', `/api/v1/simulation/wallets/${walletId}/barcodes${query}`, { as: m });
    assert.equal(res.status, 200, res.raw);
    return res.body;
  };
  const scan = (lookUpId: string) =>
    t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, lookUpId } } },
    });

  test('barcode bodies are validated, and a refused one writes nothing', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const inAMinute = new Date(t.clock.now().getTime() + 60_000).toISOString();
    const bad: [string, Record<string, unknown>, string][] = [
      ['WalletBarcode', { ttlSeconds: 0 }, '/data/attributes/ttlSeconds'],
      ['WalletBarcode', { ttlSeconds: 86_401 }, '/data/attributes/ttlSeconds'],
      ['WalletBarcode', { usageLimit: 0 }, '/data/attributes/usageLimit'],
      ['WalletBarcode', { usageLimit: 'once' }, '/data/attributes/usageLimit'],
      ['WalletBarcode', { color: 'red' }, '/data/attributes/color'],
      ['GenerateWalletBarcode', { expiresAt: t.clock.now().toISOString() }, '/data/attributes/expiresAt'],
      [
        'GenerateWalletBarcode',
        { expiresAt: new Date(t.clock.now().getTime() + 86_400_001).toISOString() },
        '/data/attributes/expiresAt',
      ],
      ['GenerateWalletBarcode', { expiresAt: 'tomorrow' }, '/data/attributes/expiresAt'],
      ['GenerateWalletBarcode', { expiresAt: inAMinute, ttlSeconds: 60 }, '/data/attributes/ttlSeconds'],
      ['GenerateWalletBarcode', { reuseActive: 'yes' }, '/data/attributes/reuseActive'],
      ['Barcode', {}, '/data/type'],
    ];
    for (const [type, attributes, pointer] of bad) {
      const res = await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, {
        as: m,
        body: { data: { type, attributes } },
      });
      assert.equal(res.status, 400, JSON.stringify(attributes));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer, JSON.stringify(attributes));
    }
    assert.equal((await listOf(w.id, '?includeExpired=true')).meta.total, 0, 'nothing written');
  });

  test("GenerateWalletBarcode (Accrue's type): expiresAt honoured, no use limit unless given, referenceId from the user, updatedAt moves on use", async () => {
    const { wallet, user } = await fundedWallet(t, m, 1_000);
    assert.ok(
      (
        await t.request('PATCH', `/api/v1/users/${user.id}/attached-profile`, {
          as: m,
          body: { data: { type: 'AttachedProfile', attributes: { stableReferenceId: `s-${user.id}` } } },
        })
      ).status < 300,
    );
    const expiresAt = new Date(t.clock.now().getTime() + 3_600_000).toISOString();
    const res = await generate(wallet.id, { expiresAt });
    assert.equal(res.status, 201, res.raw);
    const b = res.body.data.attributes;
    assert.equal(b.expiresAt, expiresAt);
    assert.equal(b.usageLimit, null);
    assert.equal(b.referenceId, `s-${user.id}`);
    t.clock.advance(1_000);
    for (let i = 0; i < 3; i++) assert.equal((await scan(b.lookUpId)).status, 201, 'no use limit');
    const [listed] = (await listOf(wallet.id)).data;
    assert.equal(listed.id, res.body.data.id);
    assert.equal(listed.attributes.usageCount, 3);
    assert.equal(listed.attributes.updatedAt, t.clock.now().toISOString());
    assert.equal(listed.attributes.createdAt, b.createdAt);
    const limited = (await generate(wallet.id, { usageLimit: 2 })).body.data.attributes;
    assert.equal(limited.usageLimit, 2);
    assert.equal(limited.expiresAt, new Date(t.clock.now().getTime() + 600_000).toISOString(), 'default lifetime');
  });

  test('reuseActive answers with the newest usable barcode, and makes one when none is', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const first = (await generate(w.id, { reuseActive: true })).body.data;
    const again = await generate(w.id, { reuseActive: true, usageLimit: 5 });
    assert.equal(again.status, 201);
    assert.equal(again.body.data.id, first.id, 'the active one');
    assert.equal(again.body.data.attributes.usageLimit, null, 'as it was made');
    const fresh = await generate(w.id, {});
    assert.notEqual(fresh.body.data.id, first.id, 'without reuseActive, a new one');
    assert.equal((await generate(w.id, { reuseActive: true })).body.data.id, fresh.body.data.id, 'the newest');
    t.clock.advance(600_000);
    const after = await generate(w.id, { reuseActive: true });
    assert.ok(![first.id, fresh.body.data.id].includes(after.body.data.id), 'all expired: a new one');
    const racing = await Promise.all(Array.from({ length: 4 }, () => generate(w.id, { reuseActive: true })));
    assert.equal(new Set(racing.map((r) => r.body.data.id)).size, 1, 'racing requests share one');
    assert.equal(racing[0]!.body.data.id, after.body.data.id);
  });

  test('GET /simulation/wallets/{id}/barcodes: newest first, paged; expired ones only with includeExpired', async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const old = (await generate(w.id, { expiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() })).body
      .data;
    t.clock.advance(1_000);
    const mid = (await generate(w.id, {})).body.data;
    t.clock.advance(1_000);
    const young = (await generate(w.id, {})).body.data;
    const all = await listOf(w.id);
    assert.deepEqual(
      all.data.map((b: { id: string }) => b.id),
      [young.id, mid.id, old.id],
    );
    assert.deepEqual(all.meta, { total: 3, limit: 10, offset: 0 });
    const page = await listOf(w.id, '?page[limit]=1&page[offset]=1');
    assert.deepEqual(
      page.data.map((b: { id: string }) => b.id),
      [mid.id],
    );
    assert.match(page.links.next, /page\[offset\]=2/);
    t.clock.advance(60_000);
    assert.deepEqual(
      (await listOf(w.id)).data.map((b: { id: string }) => b.id),
      [young.id, mid.id],
    );
    assert.deepEqual(
      (await listOf(w.id, '?includeExpired=false')).data.map((b: { id: string }) => b.id),
      [young.id, mid.id],
    );
    assert.equal((await listOf(w.id, '?includeExpired=true')).meta.total, 3);
    for (const [as, id] of [
      [other, w.id],
      [m, crypto.randomUUID()],
    ] as const) {
      const res = await t.request('GET', `/api/v1/simulation/wallets/${id}/barcodes`, { as });
      assert.equal(res.status, 404);
      assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
    }
    assert.equal(
      (await t.request('GET', `/api/v1/simulation/wallets/${w.id}/barcodes?includeExpired=sometimes`, { as: m }))
        .status,
      400,
    );
  });

  test("GET /simulation/barcodes/{lookUpId}: id is the wallet's; expired or used up is 400 InvalidTransaction; another merchant's is 404 like an unknown one", async () => {
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const b = (await generate(w.id, { usageLimit: 1 })).body.data;
    const res = await t.request('GET', `/api/v1/simulation/barcodes/${b.attributes.lookUpId}`, { as: m });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.id, w.id);
    assert.deepEqual(res.body.data.attributes, b.attributes);
    const details = [];
    for (const [as, id] of [
      [other, b.attributes.lookUpId],
      [m, '1234567890123456'],
    ] as const) {
      const missing = await t.request('GET', `/api/v1/simulation/barcodes/${id}`, { as });
      assert.equal(missing.status, 404);
      assert.equal(errorsOf(missing)[0]!.code, 'BarcodeNotFound');
      details.push(errorsOf(missing)[0]!.detail);
    }
    assert.equal(details[0], details[1]);
    assert.equal((await scan(b.attributes.lookUpId)).status, 201);
    const used = await t.request('GET', `/api/v1/simulation/barcodes/${b.attributes.lookUpId}`, { as: m });
    assert.equal(used.status, 400);
    assert.equal(errorsOf(used)[0]!.code, 'InvalidTransaction');
    assert.match(errorsOf(used)[0]!.detail, /maximum uses/);
    const timed = (await generate(w.id, {})).body.data.attributes.lookUpId;
    t.clock.advance(600_000);
    const expired = await t.request('GET', `/api/v1/simulation/barcodes/${timed}`, { as: m });
    assert.equal(expired.status, 400);
    assert.equal(errorsOf(expired)[0]!.code, 'InvalidTransaction');
    assert.match(errorsOf(expired)[0]!.detail, /expired/);
    assert.equal((await t.request('GET', '/api/v1/simulation/barcodes/not%20valid!', { as: m })).status, 400);
  });
});

describe('sandbox-only wallet routes in live', () => {
  test('the barcode, backup-card and clearing simulations do not exist in live (404)', async () => {
    const live = await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' } });
    try {
      const lm = await live.createMerchant();
      const u = await createUser(live, lm);
      const w = await createWallet(live, lm, u.id);
      const routes: [string, string][] = [
        ['GET', `/api/v1/simulation/wallets/${w.id}/barcodes`],
        ['POST', `/api/v1/simulation/wallets/${w.id}/barcodes`],
        ['GET', '/api/v1/simulation/barcodes/1234567890123456'],
        ['POST', `/api/v1/simulation/wallets/${w.id}/backup-linked-account`],
        ['POST', `/api/v1/simulation/wallets/${w.id}/clear-pending/card`],
        ['POST', `/api/v1/simulation/wallets/${w.id}/clear-pending/bank`],
      ];
      for (const [method, url] of routes) {
        const res = await live.request(method, url, { as: lm });
        assert.equal(res.status, 404, `${method} ${url}`);
        assert.equal(errorsOf(res)[0]!.code, 'NotFound', url);
      }
    } finally {
      await live.close();
    }
  });
});
