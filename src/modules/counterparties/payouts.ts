// Money in and out of a counterparty's balance.
//
//   payout     counterparty.available −amount │ external.bank +amount     (Pending, CounterpartyPayoutCreated)
//              the bank push is sent by a job after commit                (Sent, CounterpartyPayoutSent)
//              the bank reconciles it                                      (Completed, CounterpartyPayoutCompleted)
//              or returns it: external.bank −amount │ available +amount   (Returned, CounterpartyPayoutReturned)
//   incoming   external.bank −amount │ counterparty.available +amount     (CounterpartyIncomingPayment)
//
// Counterparty balances may go negative (fees are charged to them), so the ledger's CHECK does
// not guard them: a payout locks the available account, reads its balance under the lock and
// refuses more than it holds, so payouts racing for one balance queue on the row and never
// take it below zero.
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { accountIds, type ClientCode, type CounterpartyCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import type { BankTransferProvider } from '../../providers/bank-transfers.ts';
import { recordEvent } from '../events/record.ts';
import { getCounterparty, lockAvailable } from './domain.ts';
import { incomingPaymentEventResource, payoutEventResource, type PayoutTopic } from './render.ts';
import * as q from './sql.ts';

const dateOf = (d: Date) => d.toISOString().slice(0, 10);

function payoutEvent(tx: Executor, p: q.PayoutRow, topic: PayoutTopic, now: Date) {
  return recordEvent(tx, { clientId: p.clientId, topic, resource: payoutEventResource(p, topic), now });
}

export async function createPayout(
  tx: Executor,
  i: { clientId: string; counterpartyId: string; amount: number; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<q.PayoutRow> {
  const available = (await lockAvailable(tx, i.clientId, [i.counterpartyId])).get(i.counterpartyId)!;
  if (available.balance < i.amount) {
    throw apiError('InsufficientBalance', `Insufficient balance for payout: the counterparty has ${available.balance} cents available.`, {
      pointer: '/data/attributes/amount',
    });
  }
  const id = uuidv7();
  await postEntry(tx, {
    clientId: i.clientId,
    kind: 'counterparty.payout',
    refType: 'counterparty_payout',
    refId: id,
    postings: [
      { accountId: available.id, amount: -i.amount },
      { accountId: i.clientAccounts['external.bank'], amount: i.amount },
    ],
    now: i.now,
  });
  const payout = await q.insertPayout(tx, {
    id,
    clientId: i.clientId,
    counterpartyId: i.counterpartyId,
    amount: i.amount,
    status: 'Pending',
    description: null,
    effectiveDate: dateOf(i.now),
    createdAt: i.now,
    updatedAt: i.now,
  });
  await payoutEvent(tx, payout, 'CounterpartyPayoutCreated', i.now);
  return payout;
}

export async function listPayouts(db: Executor, opts: { clientId: string; counterpartyId: string; filters: q.PayoutFilters; page: Page }) {
  await getCounterparty(db, opts);
  return q.listPayoutRows(db, opts.clientId, opts.counterpartyId, opts.filters, opts.page);
}

/** The most payouts one run of the payouts job sends. */
export const PAYOUT_BATCH = 100;

/**
 * Job: one ACH push per Pending payout, outside any transaction, with the payout's id as the
 * provider's idempotency key; then Pending → Sent and CounterpartyPayoutSent in one
 * transaction. A crash between the two sends the same push again (the same transfer at the
 * bank); two processes sending the same payout record it once (the move is from Pending only).
 */
export async function sendPendingPayouts(db: Db, opts: { provider: BankTransferProvider; now: () => Date }): Promise<number> {
  const due = await q.unsentPayouts(db, PAYOUT_BATCH);
  let sent = 0;
  for (const p of due) {
    let providerRef: string;
    try {
      // The port addresses a push by an external account id; a counterparty's bank account is
      // named by the counterparty (what a live provider needs: docs/money.md).
      ({ providerRef } = await opts.provider.initiatePush({ reference: p.id, amount: p.amount, linkedAccountExternalId: `counterparty:${p.counterpartyId}` }));
    } catch {
      continue; // The provider is unreachable: the next run tries again with the same reference.
    }
    await db.transaction(async (tx) => {
      const now = opts.now();
      const moved = await q.transitionPayout(tx, p.id, 'Pending', { status: 'Sent', providerRef, sentAt: now, updatedAt: now });
      if (moved) await payoutEvent(tx, moved, 'CounterpartyPayoutSent', now);
    });
    sent++;
  }
  return sent;
}

async function sentPayout(tx: Executor, o: { clientId: string; counterpartyId: string; payoutId: string }): Promise<q.PayoutRow> {
  await getCounterparty(tx, o);
  const p = await q.findPayout(tx, o.clientId, o.counterpartyId, o.payoutId, { forUpdate: true });
  if (!p) throw apiError('PayoutNotFound', `Counterparty ${o.counterpartyId} has no payout ${o.payoutId}.`);
  if (p.status !== 'Sent') {
    throw apiError('IllegalOperation', `The payout is ${p.status}; only a Sent payout can complete or be returned${p.status === 'Pending' ? ' (the payouts job sends it within a second)' : ''}.`);
  }
  return p;
}

/** The bank reconciled the push: Sent → Completed (the money left at creation). */
export async function completePayout(db: Db, o: { clientId: string; counterpartyId: string; payoutId: string; now: Date }): Promise<q.PayoutRow> {
  return db.transaction(async (tx) => {
    const p = await sentPayout(tx, o);
    const done = (await q.transitionPayout(tx, p.id, 'Sent', { status: 'Completed', completedAt: o.now, updatedAt: o.now }))!;
    await payoutEvent(tx, done, 'CounterpartyPayoutCompleted', o.now);
    return done;
  });
}

/** The receiving bank returned the push: Sent → Returned, the amount back on the available balance. */
export async function returnPayout(
  db: Db,
  o: { clientId: string; counterpartyId: string; payoutId: string; returnCode?: string; returnReason?: string; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<q.PayoutRow> {
  return db.transaction(async (tx) => {
    const p = await sentPayout(tx, o);
    const c = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: p.counterpartyId });
    await postEntry(tx, {
      clientId: p.clientId,
      kind: 'counterparty.payout.return',
      refType: 'counterparty_payout',
      refId: p.id,
      postings: [
        { accountId: o.clientAccounts['external.bank'], amount: -p.amount },
        { accountId: c['counterparty.available'], amount: p.amount },
      ],
      now: o.now,
    });
    const returned = (await q.transitionPayout(tx, p.id, 'Sent', {
      status: 'Returned',
      returnCode: o.returnCode ?? 'R01',
      returnReason: o.returnReason ?? 'Insufficient funds',
      returnedAt: o.now,
      updatedAt: o.now,
    }))!;
    await payoutEvent(tx, returned, 'CounterpartyPayoutReturned', o.now);
    return returned;
  });
}

/**
 * A payment arrived on the counterparty's deposit account: credited to its available balance,
 * with CounterpartyIncomingPayment, once per `externalId` (a payment reported twice is
 * recorded once). The sandbox's simulation calls it; a live banking feed would too.
 */
export async function recordIncomingPayment(
  db: Db,
  o: { clientId: string; counterpartyId: string; amount: number; method: string; externalId: string; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<q.IncomingPaymentRow | undefined> {
  return db.transaction(async (tx) => {
    const available = (await lockAvailable(tx, o.clientId, [o.counterpartyId])).get(o.counterpartyId)!;
    const payment = await q.insertIncomingPayment(tx, {
      id: uuidv7(),
      clientId: o.clientId,
      counterpartyId: o.counterpartyId,
      amount: o.amount,
      method: o.method,
      asOfDate: dateOf(o.now),
      externalId: o.externalId,
      createdAt: o.now,
    });
    if (!payment) return undefined;
    await postEntry(tx, {
      clientId: o.clientId,
      kind: 'counterparty.incoming',
      refType: 'counterparty_incoming_payment',
      refId: payment.id,
      postings: [
        { accountId: o.clientAccounts['external.bank'], amount: -o.amount },
        { accountId: available.id, amount: o.amount },
      ],
      now: o.now,
    });
    await recordEvent(tx, { clientId: o.clientId, topic: 'CounterpartyIncomingPayment', resource: incomingPaymentEventResource(payment), now: o.now });
    return payment;
  });
}
