// How bank transfers end, with a bank that reports status (providers/bank-transfers.ts): the
// bank-transfer-status job asks the provider about each transfer Coffer waits on and applies a
// final answer to its subject through the subject's own domain function (a deposit clears or
// fails, a payment settles or fails, a failed withdrawal push returns its money, a counterparty's
// payout completes or is returned), in the same transaction that marks the transfer finished,
// so an answer is applied once.
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Executor } from '../../db/open.ts';
import { nextCheckAt } from '../../jobs/backoff.ts';
import type { BankTransferProvider, TransferOutcome } from '../../providers/bank-transfers.ts';
import { finishPayoutPush } from '../counterparties/payouts.ts';
import { finishPaymentPull } from '../payments/domain.ts';
import type { RenderContext } from '../payments/render.ts';
import { finishDepositPull } from '../transactions/domain.ts';
import { finishWithdrawalPush } from '../withdrawals/domain.ts';
import type { TransferPurpose } from './record.ts';
import * as q from './sql.ts';

/** The most transfers one run asks about (at once). */
export const STATUS_BATCH = 50;
/** How long a claimed transfer belongs to the process asking about it. */
const STATUS_LEASE_MS = 60_000;

type Finish = (
  tx: Executor,
  t: q.BankTransferRow,
  o: { settled: boolean; reason?: string; rc: RenderContext; now: Date },
) => Promise<void>;

const FINISH: Record<TransferPurpose, Finish> = {
  deposit: (tx, t, o) =>
    finishDepositPull(tx, {
      transactionId: t.subjectId,
      settled: o.settled,
      reason: o.reason,
      baseUrl: o.rc.baseUrl,
      now: o.now,
    }),
  payment: (tx, t, o) =>
    finishPaymentPull(tx, { paymentId: t.subjectId, settled: o.settled, reason: o.reason, rc: o.rc, now: o.now }),
  withdrawal: (tx, t, o) =>
    finishWithdrawalPush(tx, {
      reference: t.reference,
      withdrawalId: t.subjectId,
      amount: t.amount,
      settled: o.settled,
      now: o.now,
    }),
  payout: (tx, t, o) =>
    finishPayoutPush(tx, { payoutId: t.subjectId, settled: o.settled, reason: o.reason, now: o.now }),
};

/**
 * Job: one round of status checks. Due transfers are claimed with a lease and the provider asked
 * about each outside any transaction; a pending one is asked again later (less often the longer
 * it takes), a final one applied; one the provider did not answer for is asked again when its
 * lease runs out. Returns how many ended.
 */
export async function checkDueTransfers(
  db: Db,
  opts: { provider: BankTransferProvider; rc: RenderContext; now: () => Date; log?: FastifyBaseLogger },
): Promise<number> {
  const now = opts.now();
  const claimed = await q.claimDueTransfers(db, now, new Date(now.getTime() + STATUS_LEASE_MS), STATUS_BATCH);
  let ended = 0;
  await Promise.all(
    claimed.map(async (t) => {
      let outcome: TransferOutcome;
      try {
        outcome = await opts.provider.status(t.reference);
      } catch (err) {
        opts.log?.warn(
          { err, reference: t.reference },
          'the bank did not report on a transfer; it is asked again later',
        );
        return;
      }
      const at = opts.now();
      if (outcome.status === 'pending') return q.scheduleCheck(db, t.reference, nextCheckAt(at, t.createdAt));
      await db.transaction(async (tx) => {
        const row = await q.lockPendingTransfer(tx, t.reference);
        if (!row) return;
        const settled = outcome.status === 'settled';
        await FINISH[row.purpose as TransferPurpose](tx, row, {
          settled,
          reason: outcome.failureReason,
          rc: opts.rc,
          now: at,
        });
        await q.finishTransfer(tx, row.reference, {
          status: settled ? 'Settled' : 'Failed',
          failureReason: settled ? null : (outcome.failureReason ?? null),
          now: at,
        });
        ended++;
      });
    }),
  );
  return ended;
}
