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
export async function recordSentTransfers(
  db: Db,
  o: { track: boolean; transfers: TrackedTransfer[]; now: Date; record: (ex: Executor) => Promise<void> },
): Promise<void> {
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
 * Sends each item to the bank at once, outside any transaction (a round waits for the slowest
 * answer, not the sum of them); returns the answers for the items the bank took, in order. The
 * others are logged once and sent again by a later round, with the same references.
 */
export async function sendEach<T, R>(
  items: T[],
  send: (item: T) => Promise<R>,
  o: { log?: FastifyBaseLogger; what: string },
): Promise<R[]> {
  const failed: unknown[] = [];
  const answers = await Promise.all(
    items.map(async (item) => {
      try {
        return { sent: await send(item) };
      } catch (err) {
        failed.push(err);
        return undefined;
      }
    }),
  );
  if (failed.length > 0)
    o.log?.warn(
      { err: failed[0], failed: failed.length },
      `the bank did not take ${failed.length} ${o.what}; they are sent again next round`,
    );
  return answers.filter((a) => a !== undefined).map((a) => a.sent);
}

/** Starts a pull for each item at once (sendEach); returns those the bank took. */
export function startPulls(
  provider: BankTransferProvider,
  items: (Omit<TrackedTransfer, 'direction' | 'providerRef'> & { externalId: string })[],
  o: { log?: FastifyBaseLogger; what: string },
): Promise<TrackedTransfer[]> {
  return sendEach(
    items,
    // Each field by name, not a rest and a spread: V8 made a map for every transfer so copied.
    async (t): Promise<TrackedTransfer> => {
      const { providerRef } = await provider.initiatePull({
        reference: t.reference,
        amount: t.amount,
        linkedAccountExternalId: t.externalId,
      });
      return {
        reference: t.reference,
        clientId: t.clientId,
        purpose: t.purpose,
        subjectId: t.subjectId,
        direction: 'pull',
        amount: t.amount,
        providerRef,
      };
    },
    o,
  );
}
