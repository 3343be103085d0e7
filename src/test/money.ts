// Helpers for tests that move money: users through KYC, accounts, wallets, deposits, payment
// intents, and the ledger's invariant check.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import { verifyLedger } from '../ledger/invariants.ts';
import { kycApplication } from './fixtures.ts';
import { createUser, type Merchant, type TestApp } from './harness.ts';

/** A user whose KYC is Approved (the sandbox provider's answer, with the clock moved). */
export async function approvedUser(t: TestApp, m: Merchant, email = 'approved@example.com') {
  const u = await createUser(t, m);
  await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
  const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: kycApplication(email) });
  assert.equal(res.status, 200, res.raw);
  t.clock.advance(500);
  // Concurrent callers may share a job run that began before this application was due.
  for (let i = 0; i < 10; i++) {
    await t.ctx.jobs.runOnce('kyc-decisions');
    const kyc = await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m });
    if (kyc.body.data.attributes.status !== 'Pending') break;
  }
  return u;
}

export async function linkAccount(t: TestApp, m: Merchant, userId: string, attributes: Record<string, unknown> = {}) {
  const res = await t.request('POST', `/api/v1/simulation/users/${userId}/linked-accounts`, {
    as: m,
    body: { data: { type: 'LinkedAccount', attributes } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data as { id: string; attributes: Record<string, any> };
}

export async function createWallet(t: TestApp, m: Merchant, userId: string) {
  const res = await t.request('POST', '/api/v1/wallets', {
    as: m,
    body: { data: { type: 'Wallet', attributes: { userId } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data as { id: string; attributes: Record<string, any> };
}

export const depositBody = (amount: number, linkedAccountId: string, extra: Record<string, unknown> = {}) => ({
  data: {
    type: 'OneTimeDeposit',
    attributes: { amount, linkedAccountId, idempotencyKey: randomUUID(), ...extra } as Record<string, unknown>,
  },
});

export function deposit(
  t: TestApp,
  m: Merchant,
  walletId: string,
  amount: number,
  linkedAccountId: string,
  extra: Record<string, unknown> = {},
) {
  return t.request('POST', `/api/v1/wallets/${walletId}/transactions`, {
    as: m,
    body: depositBody(amount, linkedAccountId, extra),
  });
}

export async function clearPending(t: TestApp, m: Merchant, walletId: string) {
  const res = await t.request('POST', `/api/v1/simulation/wallets/${walletId}/clear-pending/bank`, { as: m });
  assert.equal(res.status, 204, res.raw);
}

/** An approved user with a connected account and a wallet holding `amount` cleared cents. */
export async function fundedWallet(t: TestApp, m: Merchant, amount = 10_000) {
  const user = await approvedUser(t, m);
  const account = await linkAccount(t, m, user.id);
  const wallet = await createWallet(t, m, user.id);
  if (amount > 0) {
    const res = await deposit(t, m, wallet.id, amount, account.id);
    assert.equal(res.status, 201, res.raw);
    await clearPending(t, m, wallet.id);
  }
  return { user, account, wallet };
}

export async function balanceOf(t: TestApp, m: Merchant, walletId: string, query = '') {
  const res = await t.request('GET', `/api/v1/wallets/${walletId}/balance${query}`, { as: m });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.attributes.balance;
}

/** Fails the test with every violated ledger invariant. */
export async function assertLedgerSound(t: TestApp): Promise<void> {
  const violations = await verifyLedger(t.ctx.db);
  assert.deepEqual(violations, [], violations.map((v) => `${v.rule}: ${v.detail}`).join('\n'));
}

/** A Promotable payment intent of `amount` cents for the wallet; its id. */
export async function intentFor(t: TestApp, m: Merchant, walletId: string, amount: number): Promise<string> {
  const res = await t.request('POST', '/api/v1/payment-intents', {
    as: m,
    body: { data: { type: 'CreatePaymentIntent', attributes: { amount, walletId } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}

/** An authorized (Created) payment of `amount` cents from the wallet, through a new intent; its id. */
export async function authorizedPayment(t: TestApp, m: Merchant, walletId: string, amount: number): Promise<string> {
  const intentId = await intentFor(t, m, walletId, amount);
  const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
    as: m,
    body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount } } },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.included[0].id;
}

/** A captured (Processing) payment of `amount` cents from the wallet; its id. */
export async function capturedPayment(t: TestApp, m: Merchant, walletId: string, amount: number): Promise<string> {
  const id = await authorizedPayment(t, m, walletId, amount);
  const cap = await t.request('POST', `/api/v1/payments/${id}/capture`, {
    as: m,
    body: { data: { type: 'CapturePayment', attributes: { amount } } },
  });
  assert.equal(cap.status, 200, cap.raw);
  return id;
}

/** The transaction that last wrote each payment (its xmin): rows written by one transaction share it. */
export async function paymentXmins(t: TestApp, ids: string[]): Promise<{ id: string; xmin: string }[]> {
  return rowsOf<{ id: string; xmin: string }>(
    await t.ctx.db.execute(sql`select id, xmin::text as xmin from payments where id in ${ids}`),
  );
}
