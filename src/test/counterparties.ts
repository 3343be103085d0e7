// Helpers for tests of counterparties and their money.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Merchant, TestApp } from './harness.ts';

export const ROUTING = '021000021';

export function createCounterparty(
  t: TestApp,
  as: Merchant,
  attributes: Record<string, unknown> = {},
  type = 'CreateCounterparty',
) {
  return t.request('POST', '/api/v1/counterparties', {
    as,
    body: {
      data: {
        type,
        attributes: {
          label: 'Acme Payroll',
          accountNumber: '000123456789',
          routingNumber: ROUTING,
          accountType: 'Checking',
          ...attributes,
        },
      },
    },
  });
}

/** A new counterparty holding `available` cents (an incoming payment, as the sandbox simulates it); its id. */
export async function fundedCounterparty(t: TestApp, as: Merchant, available = 0, label = 'Payee'): Promise<string> {
  const res = await createCounterparty(t, as, { label });
  assert.equal(res.status, 201, res.raw);
  const id = res.body.data.id as string;
  if (available > 0) await simulateDeposit(t, as, id, available);
  return id;
}

export async function simulateDeposit(t: TestApp, as: Merchant, counterpartyId: string, amount: number) {
  const res = await t.request('POST', `/api/v1/simulation/counterparties/${counterpartyId}/deposits`, {
    as,
    body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount } } },
  });
  assert.equal(res.status, 204, res.raw);
}

export async function counterpartyBalance(
  t: TestApp,
  as: Merchant,
  id: string,
): Promise<{ pending: number; available: number }> {
  const res = await t.request('GET', `/api/v1/counterparties/${id}`, { as });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.attributes.balance;
}

export const payoutBody = (amount: number, idempotencyKey: string = randomUUID()) => ({
  data: { type: 'CreateCounterpartyPayout', attributes: { amount, idempotencyKey } },
});

export function createPayout(
  t: TestApp,
  as: Merchant,
  counterpartyId: string,
  amount: number,
  idempotencyKey?: string,
) {
  return t.request('POST', `/api/v1/counterparties/${counterpartyId}/payouts`, {
    as,
    body: payoutBody(amount, idempotencyKey),
  });
}

/** The resources (included[0]) of the merchant's `topic` events, newest first. */
export async function eventsOf(t: TestApp, as: Merchant, topic: string): Promise<Record<string, any>[]> {
  const res = await t.request('GET', `/api/v1/webhook-events?filter[topic]=${topic}&page[limit]=50`, { as });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.map(
    (e: { attributes: { payload: { included: Record<string, any>[] } } }) => e.attributes.payload.included[0],
  );
}
