// Recording the transfers a bank accepted. The sending jobs (deposit pulls, withdrawal pushes,
// payment pulls, counterparty payouts) call this once the provider has answered; with a bank that reports status,
// each transfer is also kept for the status job to ask about, in the same transaction as the
// subject's own record, so a transfer is never accepted and then forgotten.
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Executor } from '../../db/open.ts';
import { MIN_CHECK_DELAY_MS } from '../../jobs/backoff.ts';
import type { BankTransferProvider } from '../../providers/bank-transfers.ts';
import * as q from './sql.ts';

export type TransferPurpose = 'deposit' | 'withdrawal' | 'payment' | 'payout';

export interface TrackedTransfer {
  /** Coffer's reference: the provider's idempotency key. */
  reference: string;
  clientId: string;
  purpose: TransferPurpose;
  /** The transaction, withdrawal, payment or counterparty payout. */
  subjectId: string;
  direction: 'pull' | 'push';
  amount: number;
  providerRef: string;
}

/**
 * `record` writes the subject's own record of the transfers (its provider reference, say);
 * `track` (the provider reports status) keeps them to ask about too, in one transaction.
 */
export async function recordSentTransfers(db: Db, o: { track: boolean; transfers: TrackedTransfer[]; now: Date; record: (ex: Executor) => Promise<void> }): Promise<void> {
  if (o.transfers.length === 0) return;
  if (!o.track) return o.record(db);
  await db.transaction(async (tx) => {
    await trackTransfers(tx, o.transfers, o.now);
    await o.record(tx);
  });
}

/** Keeps transfers for the status job to ask about, within the caller's transaction. */
export function trackTransfers(tx: Executor, transfers: TrackedTransfer[], now: Date): Promise<void> {
  return q.insertTransfers(tx, transfers, now, new Date(now.getTime() + MIN_CHECK_DELAY_MS));
}

/**
 * Starts a pull for each item at once, outside any transaction; returns those the bank took. The
 * others are sent again by a later round, with the same references.
 */
export async function startPulls(
  provider: BankTransferProvider,
  items: (Omit<TrackedTransfer, 'direction' | 'providerRef'> & { externalId: string })[],
  o: { log?: FastifyBaseLogger; what: string },
): Promise<TrackedTransfer[]> {
  const sent: TrackedTransfer[] = [];
  const failed: unknown[] = [];
  await Promise.all(
    items.map(async ({ externalId, ...t }) => {
      try {
        const { providerRef } = await provider.initiatePull({ reference: t.reference, amount: t.amount, linkedAccountExternalId: externalId });
        sent.push({ ...t, direction: 'pull', providerRef });
      } catch (err) {
        failed.push(err);
      }
    }),
  );
  logUnsent(o.log, o.what, failed);
  return sent;
}

/** One line per round for the transfers the bank did not take (each is sent again next round). */
export function logUnsent(log: FastifyBaseLogger | undefined, what: string, failed: unknown[]): void {
  if (failed.length > 0) log?.warn({ err: failed[0], failed: failed.length }, `the bank did not take ${failed.length} ${what}; they are sent again next round`);
}
