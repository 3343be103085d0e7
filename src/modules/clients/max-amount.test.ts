// The merchant's maxPaymentAmount setting: payment intents, their authorization, direct
// payments, increased authorizations and withdrawals above it are 400 AmountTooLarge.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { authorizedPayment, fundedWallet, intentFor } from '../../test/money.ts';

const intentBody = (amount: number, walletId: string) => ({
  data: { type: 'CreatePaymentIntent', attributes: { amount, walletId } },
});

function assertTooLarge(res: { status: number; raw: string; body: any }, limit: number, pointer: string) {
  assert.equal(res.status, 400, res.raw);
  const [e] = errorsOf(res as never);
  assert.equal(e!.code, 'AmountTooLarge');
  assert.equal(e!.source?.pointer, pointer);
  assert.match(e!.detail, new RegExp(`maxPaymentAmount of ${limit} cents`));
  assert.match(e!.detail, /PATCH \/admin\/v1\/clients\/\{clientId\}/, 'the detail says how to raise it');
}

describe('maxPaymentAmount', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('defaults to 100000000 cents ($1,000,000): a $1,000,000,000 intent is refused', async () => {
    const m = await t.createMerchant();
    const read = await t.adminRequest('GET', `/admin/v1/clients/${m.clientId}`);
    assert.equal(read.body.data.attributes.settings.maxPaymentAmount, 100_000_000);
    const { wallet } = await fundedWallet(t, m, 1000);
    assertTooLarge(
      await t.request('POST', '/api/v1/payment-intents', { as: m, body: intentBody(100_000_000_000, wallet.id) }),
      100_000_000,
      '/data/attributes/amount',
    );
    assertTooLarge(
      await t.request('POST', '/api/v1/payment-intents', { as: m, body: intentBody(100_000_001, wallet.id) }),
      100_000_000,
      '/data/attributes/amount',
    );
    const atLimit = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: intentBody(100_000_000, wallet.id),
    });
    assert.equal(atLimit.status, 201, atLimit.raw);
  });

  test('the setting must be at least 1 cent', async () => {
    const m = await t.createMerchant();
    const res = await t.adminRequest('PATCH', `/admin/v1/clients/${m.clientId}`, {
      body: { data: { type: 'Client', attributes: { settings: { maxPaymentAmount: 0 } } } },
    });
    assert.equal(res.status, 400, res.raw);
    assert.equal(errorsOf(res)[0]!.code, 'ValidationError');
  });

  describe('a merchant with maxPaymentAmount 5000', () => {
    let m: Merchant;
    let walletId: string;
    let accountId: string;
    before(async () => {
      m = await t.createMerchant({ maxPaymentAmount: 5000 });
      const funded = await fundedWallet(t, m, 20_000);
      walletId = funded.wallet.id;
      accountId = funded.account.id;
    });

    test('payment intents: 5001 is refused, 5000 is created', async () => {
      assertTooLarge(
        await t.request('POST', '/api/v1/payment-intents', { as: m, body: intentBody(5001, walletId) }),
        5000,
        '/data/attributes/amount',
      );
      await intentFor(t, m, walletId, 5000);
    });

    test('direct payments: 5001 is refused, 5000 is taken', async () => {
      const pay = (amount: number) =>
        t.request('POST', '/api/v1/payments', {
          as: m,
          body: { data: { type: 'CreatePayment', attributes: { walletId, amount } } },
        });
      assertTooLarge(await pay(5001), 5000, '/data/attributes/amount');
      const ok = await pay(5000);
      assert.equal(ok.status, 200, ok.raw);
    });

    test('withdrawals: 5001 is refused, 1000 is sent', async () => {
      const withdraw = (amount: number) =>
        t.request('POST', `/api/v1/wallets/${walletId}/withdraw`, {
          as: m,
          body: { data: { type: 'Withdraw', attributes: { amount } } },
        });
      assertTooLarge(await withdraw(5001), 5000, '/data/attributes/amount');
      const ok = await withdraw(1000);
      assert.equal(ok.status, 201, ok.raw);
      assert.equal(ok.body.data.attributes.split[0].linkedAccountId, accountId);
    });

    test('an increased authorization may not pass the limit', async () => {
      const paymentId = await authorizedPayment(t, m, walletId, 4000);
      const increase = (by: number) =>
        t.request('PATCH', `/api/v1/payments/${paymentId}/increase-authorization`, {
          as: m,
          body: { data: { type: 'IncreaseAuthorization', attributes: { increase: by } } },
        });
      assertTooLarge(await increase(1001), 5000, '/data/attributes/increase');
      const ok = await increase(1000);
      assert.equal(ok.status, 200, ok.raw);
      assert.equal(ok.body.data.attributes.amount, 5000);
    });

    test('authorizing an intent made before the limit was lowered is refused; raising it again lets it through', async () => {
      const intentId = await intentFor(t, m, walletId, 3000);
      const setLimit = async (maxPaymentAmount: number) => {
        const res = await t.adminRequest('PATCH', `/admin/v1/clients/${m.clientId}`, {
          body: { data: { type: 'Client', attributes: { settings: { maxPaymentAmount } } } },
        });
        assert.equal(res.status, 200, res.raw);
        assert.equal(res.body.data.attributes.settings.maxPaymentAmount, maxPaymentAmount);
      };
      const authorize = () =>
        t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
          as: m,
          body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 3000 } } },
        });
      await setLimit(2000);
      try {
        assertTooLarge(await authorize(), 2000, '/data/attributes/amount');
      } finally {
        await setLimit(5000);
      }
      const ok = await authorize();
      assert.equal(ok.status, 201, ok.raw);
    });
  });
});
