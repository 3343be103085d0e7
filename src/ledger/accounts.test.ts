// The per-process caches of ledger account ids are bounded (accounts.ts): an account an
// evicted entry forgot is read again, so a movement never depends on what is still cached.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet, intentFor } from '../test/money.ts';
import { forgetCachedAccounts, trackingOf } from './accounts.ts';

describe('ledger account caches', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('movements after every cached account id was forgotten: an authorize, a capture and a withdrawal still move the right balances', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const intent = await intentFor(t, m, wallet.id, 1200);
    forgetCachedAccounts();
    const auth = await t.request('POST', `/api/v1/payment-intents/${intent}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1200, idempotencyKey: randomUUID() } } },
    });
    assert.equal(auth.status, 201, auth.raw);
    const paymentId = auth.body.included[0].id as string;
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 1200);
    forgetCachedAccounts();
    const cap = await t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 1000 } } },
    });
    assert.equal(cap.status, 200, cap.raw);
    forgetCachedAccounts();
    const out = await t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
      as: m,
      body: { data: { type: 'Withdraw', attributes: { amount: 500 } } },
    });
    assert.equal(out.status, 201, out.raw);
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0, 'the uncaptured rest was released');
    assert.equal(b.total.total, 5000 - 1000 - 500);
    await assertLedgerSound(t);
  });

  test('an id that is no ledger account is refused before anything is written', async () => {
    const id = randomUUID();
    await assert.rejects(trackingOf(t.ctx.db, [id]), new RegExp(`${id} is not a ledger account`));
  });
});
