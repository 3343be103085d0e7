// Linked accounts: sandbox linking of bank accounts and demo cards, listing, removal (spec rule 1,
// docs/identity.md#linked-accounts-in-detail).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SandboxBankLinking } from '../../providers/bank-linking.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { approvedUser, createWallet, intentFor } from '../../test/money.ts';

const link = (t: TestApp, as: Merchant, userId: string, attributes?: Record<string, unknown>) =>
  t.request('POST', `/api/v1/simulation/users/${userId}/linked-accounts`, {
    as,
    ...(attributes ? { body: { data: { type: 'LinkedAccount', attributes } } } : {}),
  });

describe('linked accounts', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const bank = new SandboxBankLinking();
  before(async () => {
    t = await createTestApp({ providers: { bankLinking: bank } });
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('the sandbox links a Connected Plaid account; the body is optional', async () => {
    const u = await createUser(t, m);
    const res = await link(t, m, u.id);
    assert.equal(res.status, 201);
    const a = res.body.data;
    assert.equal(a.type, 'LinkedAccount');
    assert.equal(a.attributes.provider, 'Plaid');
    assert.equal(a.attributes.status, 'Connected');
    assert.equal(a.attributes.accountType, 'checking');
    assert.match(a.attributes.accountMask, /^\d{4}$/);
    assert.equal(a.attributes.institutionName, 'Sandbox Bank');
    const custom = await link(t, m, u.id, {
      institutionName: 'First Platypus Bank',
      accountType: 'savings',
      accountMask: '4321',
    });
    assert.equal(custom.status, 201);
    assert.equal(custom.body.data.attributes.institutionName, 'First Platypus Bank');
    assert.equal(custom.body.data.attributes.accountType, 'savings');
    assert.equal(custom.body.data.attributes.accountMask, '4321');
    assert.equal(custom.body.data.attributes.accountName, 'First Platypus Bank Savings');
    const withSimulateType = await t.request('POST', `/api/v1/simulation/users/${u.id}/linked-accounts`, {
      as: m,
      body: { data: { type: 'SimulateLinkedAccount', attributes: {} } },
    });
    assert.equal(withSimulateType.status, 201);
  });

  test('bad simulation bodies are 400', async () => {
    const u = await createUser(t, m);
    for (const [attrs, pointer] of [
      [{ accountMask: '12' }, '/data/attributes/accountMask'],
      [{ accountType: 'brokerage' }, '/data/attributes/accountType'],
      [{ institutionName: '' }, '/data/attributes/institutionName'],
      [{ routingNumber: '1' }, '/data/attributes/routingNumber'],
    ] as const) {
      const res = await link(t, m, u.id, attrs);
      assert.equal(res.status, 400, JSON.stringify(attrs));
      assert.deepEqual(
        errorsOf(res).map((e) => e.source?.pointer),
        [pointer],
      );
    }
  });

  test("list shows the user's accounts, newest first, with paging", async () => {
    const u = await createUser(t, m);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await link(t, m, u.id)).body.data.id);
      t.clock.advance(1000);
    }
    const res = await t.request('GET', `/api/v1/users/${u.id}/linked-accounts?page[limit]=2`, { as: m });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.meta, { total: 3, limit: 2, offset: 0 });
    assert.deepEqual(
      res.body.data.map((a: { id: string }) => a.id),
      [ids[2], ids[1]],
    );
    const other2 = await createUser(t, m);
    const empty = await t.request('GET', `/api/v1/users/${other2.id}/linked-accounts`, { as: m });
    assert.deepEqual(empty.body.data, []);
  });

  test('removal is 204, disconnects, deactivates with the provider, and is idempotent', async () => {
    const u = await createUser(t, m);
    const a = (await link(t, m, u.id)).body.data;
    const del = await t.request('DELETE', `/api/v1/users/${u.id}/linked-accounts/${a.id}`, { as: m });
    assert.equal(del.status, 204);
    assert.equal(del.raw, '');
    const list = await t.request('GET', `/api/v1/users/${u.id}/linked-accounts`, { as: m });
    assert.equal(list.body.data[0].attributes.status, 'Disconnected');
    assert.equal(bank.deactivated.size > 0, true);
    const again = await t.request('DELETE', `/api/v1/users/${u.id}/linked-accounts/${a.id}`, { as: m });
    assert.equal(again.status, 204);
    const still = await t.request('GET', `/api/v1/users/${u.id}/linked-accounts`, { as: m });
    assert.equal(still.body.data[0].attributes.status, 'Disconnected', 'irreversible');
  });

  test('a failed provider deactivation is retried by the job', async () => {
    let failing = true;
    const flaky = new SandboxBankLinking();
    const original = flaky.deactivateAccount.bind(flaky);
    flaky.deactivateAccount = async (o) => {
      if (failing) throw new Error('provider down');
      return original(o);
    };
    const ft = await createTestApp({ providers: { bankLinking: flaky } });
    try {
      const fm = await ft.createMerchant();
      const u = await createUser(ft, fm);
      const a = (await link(ft, fm, u.id)).body.data;
      const del = await ft.request('DELETE', `/api/v1/users/${u.id}/linked-accounts/${a.id}`, { as: fm });
      assert.equal(del.status, 204, 'the removal stands even when the provider is down');
      assert.equal(flaky.deactivated.size, 0);
      failing = false;
      await ft.ctx.jobs.runOnce('linked-account-deactivations');
      assert.equal(flaky.deactivated.size, 1);
    } finally {
      await ft.close();
    }
  });

  test('unknown accounts, and accounts of another user, are 404 LinkedAccountNotFound', async () => {
    const u = await createUser(t, m);
    const v = await createUser(t, m);
    const a = (await link(t, m, u.id)).body.data;
    for (const url of [
      `/api/v1/users/${u.id}/linked-accounts/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b`,
      `/api/v1/users/${v.id}/linked-accounts/${a.id}`,
    ]) {
      const res = await t.request('DELETE', url, { as: m });
      assert.equal(res.status, 404, url);
      assert.equal(errorsOf(res)[0]!.code, 'LinkedAccountNotFound');
    }
  });

  test("another merchant gets 404 for the user's accounts on every route", async () => {
    const u = await createUser(t, m);
    const a = (await link(t, m, u.id)).body.data;
    for (const [method, url] of [
      ['GET', `/api/v1/users/${u.id}/linked-accounts`],
      ['DELETE', `/api/v1/users/${u.id}/linked-accounts/${a.id}`],
      ['POST', `/api/v1/simulation/users/${u.id}/linked-accounts`],
    ] as const) {
      const res = await t.request(method, url, { as: other });
      assert.equal(res.status, 404, url);
      assert.equal(errorsOf(res)[0]!.code, 'UserNotFound');
    }
    const list = await t.request('GET', `/api/v1/users/${u.id}/linked-accounts`, { as: m });
    assert.equal(list.body.data[0].attributes.status, 'Connected', 'untouched by the other merchant');
  });

  describe('demo backup payment methods: POST /simulation/wallets/{walletId}/backup-linked-account', () => {
    const backup = (walletId: string, body?: unknown, as = m) =>
      t.request('POST', `/api/v1/simulation/wallets/${walletId}/backup-linked-account`, {
        as,
        ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}),
      });
    const accountsOf = async (userId: string) =>
      (await t.request('GET', `/api/v1/users/${userId}/linked-accounts`, { as: m })).body.data;

    test('201 DemoBackupPaymentMethod: a Connected Checkout card of the user; the same test card again is 200 with it', async () => {
      const u = await createUser(t, m);
      const w = await createWallet(t, m, u.id);
      const res = await backup(w.id);
      assert.equal(res.status, 201, res.raw);
      const d = res.body.data;
      assert.equal(d.type, 'DemoBackupPaymentMethod');
      const now = t.clock.now().toISOString();
      assert.deepEqual(d.attributes, {
        linkedAccountId: d.id,
        accountMask: '4242',
        institutionName: 'Visa',
        accountType: 'creditCard',
        status: 'Connected',
        updatedAt: now,
        createdAt: now,
      });
      const [listed] = await accountsOf(u.id);
      assert.equal(listed.id, d.id);
      assert.equal(listed.attributes.provider, 'Checkout');
      assert.equal(listed.attributes.accountType, 'creditCard');
      const again = await backup(w.id, { testCardType: 'visa-us-credit' });
      assert.equal(again.status, 200, again.raw);
      assert.equal(again.body.data.id, d.id);
      const debit = await backup(w.id, { testCardType: 'mastercard-de-debit' });
      assert.equal(debit.status, 201);
      assert.deepEqual(
        [debit.body.data.attributes.institutionName, debit.body.data.attributes.accountType],
        ['Mastercard', 'debit'],
      );
      assert.equal((await accountsOf(u.id)).length, 2);
      const racing = await Promise.all(
        Array.from({ length: 3 }, () => backup(w.id, { testCardType: 'visa-gb-debit' })),
      );
      assert.equal(new Set(racing.map((r) => r.body.data.id)).size, 1, 'one card, however many ask at once');
      assert.deepEqual(racing.map((r) => r.status).sort(), [200, 200, 201]);
    });

    test('it pays what the wallet does not cover: an empty wallet with only a demo card authorizes', async () => {
      const user = await approvedUser(t, m);
      const w = await createWallet(t, m, user.id);
      const intentId = await intentFor(t, m, w.id, 1_200);
      const before = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_200 } } },
      });
      assert.equal(before.status, 402, 'no backup yet');
      const card = (await backup(w.id)).body.data;
      const again = await intentFor(t, m, w.id, 1_200);
      const res = await t.request('POST', `/api/v1/payment-intents/${again}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_200 } } },
      });
      assert.equal(res.status, 201, res.raw);
      const linked = await t.request('GET', `/api/v1/widgets/payment-intent/${again}/linked-account`, { as: m });
      assert.equal(linked.body.data.relationships.linkedAccount.data.id, card.id, 'the card paid');
    });

    test("bad bodies are 400 and link nothing; another merchant's or an unknown wallet is 404", async () => {
      const u = await createUser(t, m);
      const w = await createWallet(t, m, u.id);
      for (const body of [
        { testCardType: 'amex-us-credit' },
        { testCardType: 4242 },
        { data: { type: 'DemoBackupPaymentMethod', attributes: {} } },
      ]) {
        const res = await backup(w.id, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(errorsOf(res)[0]!.code, 'ValidationError');
      }
      for (const [id, as] of [
        [w.id, other],
        [crypto.randomUUID(), m],
      ] as const) {
        const res = await backup(id, {}, as);
        assert.equal(res.status, 404);
        assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
      }
      assert.deepEqual(await accountsOf(u.id), [], 'nothing linked');
    });
  });

  test('the simulation endpoint does not exist in live (404)', async () => {
    const live = await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' } });
    try {
      const lm = await live.createMerchant();
      assert.match(lm.secret, /^sk_live_/);
      const u = await createUser(live, lm);
      const res = await link(live, lm, u.id);
      assert.equal(res.status, 404);
      assert.equal(errorsOf(res)[0]!.code, 'NotFound');
      assert.equal(errorsOf(res)[0]!.meta.environment, 'live');
    } finally {
      await live.close();
    }
  });
});
