// Money in and out of a counterparty's balance.
//
//   payout     counterparty.available −amount │ external.bank +amount     (Pending, CounterpartyPayoutCreated)
//              the bank push is sent by a job after commit                (Sent, CounterpartyPayoutSent)
//              the bank settles it (its report; the sandbox: a simulation) (Completed, CounterpartyPayoutCompleted)
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
import { accountIds, clientAccountIds, type ClientCode, type CounterpartyCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { Sealer } from '../../crypto/sealer.ts';
import type { BankAccountNumbers, BankTransferProvider } from '../../providers/bank-transfers.ts';
import { sendEach, trackTransfers } from '../bank-transfers/record.ts';
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
  i: {
    clientId: string;
    counterpartyId: string;
    amount: number;
    clientAccounts: Record<ClientCode, string>;
    now: Date;
  },
): Promise<q.PayoutRow> {
  const available = (await lockAvailable(tx, i.clientId, [i.counterpartyId])).get(i.counterpartyId)!;
  if (available.balance < i.amount) {
    throw apiError(
      'InsufficientBalance',
      `Insufficient balance for payout: the counterparty has ${available.balance} cents available.`,
      {
        pointer: '/data/attributes/amount',
      },
    );
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

export async function listPayouts(
  db: Executor,
  opts: { clientId: string; counterpartyId: string; filters: q.PayoutFilters; page: Page },
) {
  await getCounterparty(db, opts);
  return q.listPayoutRows(db, opts.clientId, opts.counterpartyId, opts.filters, opts.page);
}

/** The most payouts one run of the payouts job sends. */
export const PAYOUT_BATCH = 100;

/**
 * Job: one ACH push per Pending payout to its counterparty's account (by its numbers, opened
 * only to hand to the provider), outside any transaction, with the payout's id as the
 * provider's idempotency key; then Pending → Sent and CounterpartyPayoutSent in one transaction,
 * which also keeps the push for the bank-transfer-status job when the bank reports how
 * transfers end (every live one: the push's settlement completes the payout, its failure
 * returns it). A crash between the two sends the same push again (the same transfer at the
 * bank); two processes sending the same payout record it once (the move is from Pending only).
 */
export async function sendPendingPayouts(
  db: Db,
  opts: { provider: BankTransferProvider; sealer: Sealer; now: () => Date; log?: FastifyBaseLogger },
): Promise<number> {
  const due = await q.unsentPayouts(db, PAYOUT_BATCH);
  const pushed = await sendEach(
    due,
    async ({ payout: p, account }) => {
      const bankAccount: BankAccountNumbers = {
        routingNumber: account.routingNumber,
        accountNumber: opts.sealer
          .open(account.accountNumberSealed, 'bank-account', `counterparties:${p.counterpartyId}`)
          .toString('utf8'),
        accountType: account.accountType === 'savings' ? 'savings' : 'checking',
        holderName: account.holderName,
      };
      const { providerRef } = await opts.provider.initiatePush({ reference: p.id, amount: p.amount, bankAccount });
      return { p, providerRef };
    },
    { log: opts.log, what: 'counterparty payouts' },
  );
  for (const { p, providerRef } of pushed) {
    await db.transaction(async (tx) => {
      const now = opts.now();
      const moved = await q.transitionPayout(tx, p.id, 'Pending', {
        status: 'Sent',
        providerRef,
        sentAt: now,
        updatedAt: now,
      });
      if (!moved) return;
      await payoutEvent(tx, moved, 'CounterpartyPayoutSent', now);
      if (opts.provider.reportsStatus) {
        await trackTransfers(
          tx,
          [
            {
              reference: p.id,
              clientId: p.clientId,
              purpose: 'payout',
              subjectId: p.id,
              direction: 'push',
              amount: p.amount,
              providerRef,
            },
          ],
          now,
        );
      }
    });
  }
  return pushed.length;
}

async function sentPayout(
  tx: Executor,
  o: { clientId: string; counterpartyId: string; payoutId: string },
): Promise<q.PayoutRow> {
  await getCounterparty(tx, o);
  const p = await q.findPayout(tx, o.clientId, o.counterpartyId, o.payoutId, { forUpdate: true });
  if (!p) throw apiError('PayoutNotFound', `Counterparty ${o.counterpartyId} has no payout ${o.payoutId}.`);
  if (p.status !== 'Sent') {
    throw apiError(
      'IllegalOperation',
      `The payout is ${p.status}; only a Sent payout can complete or be returned${p.status === 'Pending' ? ' (the payouts job sends it within a second)' : ''}.`,
    );
  }
  return p;
}

/** Sent → Completed, with its event (the money left at creation). */
async function markCompleted(tx: Executor, p: q.PayoutRow, now: Date): Promise<q.PayoutRow> {
  const done = (await q.transitionPayout(tx, p.id, 'Sent', { status: 'Completed', completedAt: now, updatedAt: now }))!;
  await payoutEvent(tx, done, 'CounterpartyPayoutCompleted', now);
  return done;
}

/** Sent → Returned: the amount back on the counterparty's available balance, with its event. */
async function markReturned(
  tx: Executor,
  p: q.PayoutRow,
  o: { returnCode: string | null; returnReason: string | null; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<q.PayoutRow> {
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
    returnCode: o.returnCode,
    returnReason: o.returnReason,
    returnedAt: o.now,
    updatedAt: o.now,
  }))!;
  await payoutEvent(tx, returned, 'CounterpartyPayoutReturned', o.now);
  return returned;
}

/** The bank reconciled the push (the sandbox's simulation): Sent → Completed. */
export async function completePayout(
  db: Db,
  o: { clientId: string; counterpartyId: string; payoutId: string; now: Date },
): Promise<q.PayoutRow> {
  return db.transaction(async (tx) => markCompleted(tx, await sentPayout(tx, o), o.now));
}

/** The receiving bank returned the push (the sandbox's simulation): Sent → Returned. */
export async function returnPayout(
  db: Db,
  o: {
    clientId: string;
    counterpartyId: string;
    payoutId: string;
    returnCode?: string;
    returnReason?: string;
    clientAccounts: Record<ClientCode, string>;
    now: Date;
  },
): Promise<q.PayoutRow> {
  return db.transaction(async (tx) =>
    markReturned(tx, await sentPayout(tx, o), {
      returnCode: o.returnCode ?? 'R01',
      returnReason: o.returnReason ?? 'Insufficient funds',
      clientAccounts: o.clientAccounts,
      now: o.now,
    }),
  );
}

/**
 * The bank's report on a payout's push (the bank-transfer-status job, in its transaction):
 * settled completes the payout, failed returns it with the ACH return code the report starts
 * with ("R01: insufficient funds"). A payout no longer Sent is left as it is.
 */
export async function finishPayoutPush(
  tx: Executor,
  o: { payoutId: string; settled: boolean; reason?: string; now: Date },
): Promise<void> {
  const p = await q.lockPayout(tx, o.payoutId);
  if (p?.status !== 'Sent') return;
  if (o.settled) {
    await markCompleted(tx, p, o.now);
    return;
  }
  const m = /^(R\d{2})\b[:\s-]*(.*)$/.exec(o.reason ?? '');
  await markReturned(tx, p, {
    returnCode: m ? m[1]! : null,
    returnReason: (m ? m[2] : o.reason) || null,
    clientAccounts: await clientAccountIds(tx, p.clientId),
    now: o.now,
  });
}

/**
 * A payment arrived on the counterparty's deposit account: credited to its available balance,
 * with CounterpartyIncomingPayment, once per `externalId` (a payment reported twice is
 * recorded once). The sandbox's simulation calls it; a live banking feed would too.
 */
export async function recordIncomingPayment(
  db: Db,
  o: {
    clientId: string;
    counterpartyId: string;
    amount: number;
    method: string;
    externalId: string;
    clientAccounts: Record<ClientCode, string>;
    now: Date;
  },
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
    await recordEvent(tx, {
      clientId: o.clientId,
      topic: 'CounterpartyIncomingPayment',
      resource: incomingPaymentEventResource(payment),
      now: o.now,
    });
    return payment;
  });
}
