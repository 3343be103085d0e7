// Counterparty rows → JSON:API resources (and the resources their events carry).
import { createHash } from 'node:crypto';
import type { Topic } from '../events/topics.ts';
import type { CounterpartyRow, IncomingPaymentRow, PayoutRow } from './sql.ts';
import { isoTime } from '../../timestamps.ts';

export interface CounterpartyBalance {
  pending: number;
  available: number;
}

type AccountType = 'Checking' | 'Savings';

/** Stored lower case (as Coffer first took it); shown in Accrue's spelling. */
const accountTypeOf = (stored: string): AccountType => (stored.toLowerCase() === 'savings' ? 'Savings' : 'Checking');

/** What a counterparty without a label is called. */
export const defaultLabel = (accountType: string, last4: string) =>
  `${accountTypeOf(accountType)} account ending ${last4}`;

/** The sandbox's routing number for the deposit accounts it provisions (a test number: it passes the ABA checksum). */
const SANDBOX_ROUTING_NUMBER = '110000000';

/**
 * The sandbox provisions every counterparty a deposit account: a 16-digit number derived from
 * its id (stable, nothing stored). A live deployment shows none until a banking provider
 * provisions real ones.
 */
function sandboxDepositAccount(counterpartyId: string) {
  const n =
    BigInt(`0x${createHash('sha256').update(`deposit-account:${counterpartyId}`).digest('hex').slice(0, 16)}`) %
    10n ** 16n;
  return {
    accountNumber: n.toString().padStart(16, '0'),
    routingNumber: SANDBOX_ROUTING_NUMBER,
    accountType: 'Checking' as const,
  };
}

export function counterpartyResource(
  c: CounterpartyRow,
  balance: CounterpartyBalance,
  o: { baseUrl: string; sandbox: boolean },
) {
  const accountType = accountTypeOf(c.accountType);
  const masked = `****${c.accountNumberLast4}`;
  return {
    id: c.id,
    type: 'Counterparty' as const,
    attributes: {
      label: c.label,
      accountNumber: masked,
      accountNumberLast4: c.accountNumberLast4,
      routingNumber: c.routingNumber,
      accountType,
      externalBankAccount: { accountNumber: masked, routingNumber: c.routingNumber, accountType },
      ...(o.sandbox ? { internalBankAccount: sandboxDepositAccount(c.id) } : {}),
      balance,
      createdAt: isoTime(c.createdAt),
      updatedAt: isoTime(c.updatedAt),
    },
    links: { self: `${o.baseUrl}/api/v1/counterparties/${c.id}` },
  };
}

export function payoutResource(p: PayoutRow) {
  return {
    id: p.id,
    type: 'CounterpartyPayout' as const,
    attributes: {
      amount: p.amount,
      status: p.status as 'Pending' | 'Sent' | 'Completed' | 'Returned',
      description: p.description,
      effectiveDate: p.effectiveDate,
      counterpartyId: p.counterpartyId,
      returnCode: p.returnCode,
      returnReason: p.returnReason,
      createdAt: isoTime(p.createdAt),
      updatedAt: isoTime(p.updatedAt),
    },
  };
}

export type PayoutTopic = Extract<Topic, `CounterpartyPayout${string}`>;

/** included[0] of a payout event: Accrue's WebhookCounterpartyPayout (type = the topic). */
export function payoutEventResource(p: PayoutRow, topic: PayoutTopic) {
  return {
    id: p.id,
    type: topic,
    attributes: {
      payoutId: p.id,
      counterpartyId: p.counterpartyId,
      merchantId: p.clientId,
      amount: p.amount,
      currency: 'USD',
      status: p.status,
      description: p.description,
      effectiveDate: p.effectiveDate,
      ...(topic === 'CounterpartyPayoutReturned' ? { returnCode: p.returnCode, returnReason: p.returnReason } : {}),
      createdAt: isoTime(p.createdAt),
      updatedAt: isoTime(p.updatedAt),
    },
  };
}

/** included[0] of CounterpartyIncomingPayment: Accrue's WebhookCounterpartyIncomingPayment. */
export function incomingPaymentEventResource(i: IncomingPaymentRow) {
  return {
    id: i.id,
    type: 'CounterpartyIncomingPayment' as const,
    attributes: {
      counterpartyId: i.counterpartyId,
      merchantId: i.clientId,
      amount: i.amount,
      currency: 'USD',
      direction: 'credit' as const,
      method: i.method,
      asOfDate: i.asOfDate,
      externalIncomingPaymentId: i.externalId,
      createdAt: isoTime(i.createdAt),
    },
  };
}
