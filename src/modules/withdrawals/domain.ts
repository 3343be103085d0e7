// Closed-loop withdrawal (docs/money.md#withdrawals): deposit money goes back to the user's connected
// linked accounts, split in proportion to what each deposited. Never more than the
// withdrawable amount: the debit of the wallet's available deposit bucket is the guard (the
// ledger's CHECK fails the transaction when it would go negative, however many race).
import type { FastifyBaseLogger } from 'fastify';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { accountIds, clientAccountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { postEntry, refusedByLedger, type EntryInput } from '../../ledger/post.ts';
import { countMovement } from '../../observability/metrics.ts';
import type { BankTransferProvider } from '../../providers/bank-transfers.ts';
import { recordSentTransfers, sendEach, type TrackedTransfer } from '../bank-transfers/record.ts';
import { largestRemainder } from './split.ts';
import * as q from './sql.ts';

/**
 * A withdrawal decided from its context (checkWithdrawGroup): its row and its ledger entry, for
 * the caller to write (withdraw-groups.ts). The entry's debit of the wallet's available deposit
 * money can fail the ledger's no-negative check when it is written: withdrawRefused() says what
 * that means.
 */
export async function planWithdrawal(
  tx: Executor,
  i: {
    clientId: string;
    walletId: string;
    amount: number;
    clientAccounts: Record<ClientCode, string>;
    now: Date;
    context: Partial<q.WithdrawContext> | undefined;
  },
): Promise<{ row: q.WithdrawalRow; entry: EntryInput }> {
  const c = i.context;
  if (!c?.walletStatus) throw apiError('WalletNotFound', `No wallet ${i.walletId}.`);
  if (c.walletStatus !== 'Active') throw apiError('WalletClosed');
  if (c.kycStatus !== 'Approved')
    throw apiError('InvalidKycStatus', `The user's KYC status is ${c.kycStatus}; withdrawals need Approved.`);
  const connected = c.connected ?? [];
  if (connected.length === 0)
    throw apiError('LinkedAccountMissing', 'The user has no connected linked account to withdraw to.');
  const amounts = largestRemainder(
    i.amount,
    connected.map((a) => Number(a.deposited)),
  );
  const split = connected
    .map((a, k) => ({
      linkedAccountId: a.id,
      institutionName: a.institutionName,
      accountMask: a.accountMask,
      amount: amounts[k]!,
    }))
    .filter((s) => s.amount > 0);

  const id = uuidv7();
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: i.walletId });
  const entry: EntryInput = {
    clientId: i.clientId,
    kind: 'withdraw',
    refType: 'withdrawal',
    refId: id,
    postings: [
      { accountId: w['deposit.available'], amount: -i.amount },
      { accountId: i.clientAccounts['external.bank'], amount: i.amount },
    ],
    now: i.now,
  };
  return {
    row: {
      id,
      clientId: i.clientId,
      walletId: i.walletId,
      amount: i.amount,
      split,
      providerRef: null,
      createdAt: i.now,
    },
    entry,
  };
}

/** A withdrawal's write refused by the ledger's no-negative check: more than the withdrawable balance (400). */
export function withdrawRefused(err: unknown): unknown {
  if (!refusedByLedger(err)) return err;
  countMovement('withdraw', 'insufficient_funds');
  return apiError(
    'InsufficientWithdrawableBalance',
    "The amount is more than the wallet's withdrawable balance (available deposit money; rewards are never withdrawable).",
    {
      pointer: '/data/attributes/amount',
    },
  );
}

/** The most withdrawals one run of the bank-pushes job sends. */
export const PUSH_BATCH = 100;

/**
 * Job: one ACH push per split for withdrawals the provider has not acknowledged, outside any
 * transaction; `withdrawalId:linkedAccountId` is each push's idempotency key. Every push of a
 * round is sent at once (sendEach: one after another, a bank answering in 50 ms would have
 * capped pushes at 20 withdrawals a second), and the withdrawals whose pushes the bank all took
 * are recorded by one statement. A database error while recording fails the round (the job
 * runs it again), not a withdrawal as if the bank had refused it.
 */
export async function sendPendingPushes(
  db: Db,
  opts: { provider: BankTransferProvider; now: () => Date; log?: FastifyBaseLogger },
): Promise<number> {
  const due = await q.unsentWithdrawals(db, PUSH_BATCH);
  if (due.length === 0) return 0;
  const accounts = await q.linkedAccountExternalIds(db, [
    ...new Set(due.flatMap((w) => w.split.map((s) => s.linkedAccountId))),
  ]);
  const external = new Map(accounts.map((a) => [a.id, a.externalId]));
  const sent = await sendEach(
    due,
    async (w) => ({
      id: w.id,
      pushes: await Promise.all(
        w.split.map(async (s): Promise<TrackedTransfer> => {
          const push = {
            reference: `${w.id}:${s.linkedAccountId}`,
            amount: s.amount,
            linkedAccountExternalId: external.get(s.linkedAccountId)!,
          };
          const { providerRef } = await opts.provider.initiatePush(push);
          return {
            reference: push.reference,
            clientId: w.clientId,
            purpose: 'withdrawal',
            subjectId: w.id,
            direction: 'push',
            amount: s.amount,
            providerRef,
          };
        }),
      ),
    }),
    { log: opts.log, what: "withdrawals' pushes" },
  );
  await recordSentTransfers(db, {
    track: opts.provider.reportsStatus,
    transfers: sent.flatMap((w) => w.pushes),
    now: opts.now(),
    record: (ex) =>
      q.recordProviderRefs(
        ex,
        sent.map((w) => ({ id: w.id, providerRef: w.pushes.map((p) => p.providerRef).join(',') })),
      ),
  });
  return sent.length;
}

/**
 * The bank reported how one push of a withdrawal ended. A settled push needs nothing more (the
 * wallet was debited when the withdrawal was made); a failed one returns its amount to the
 * wallet's withdrawable deposit money, the bank having sent nothing.
 */
export async function finishWithdrawalPush(
  tx: Executor,
  o: { reference: string; withdrawalId: string; amount: number; settled: boolean; now: Date },
): Promise<void> {
  if (o.settled) return;
  const w = (await q.findWithdrawalById(tx, o.withdrawalId))!;
  const wallet = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: w.walletId });
  const ext = await clientAccountIds(tx, w.clientId);
  await postEntry(tx, {
    clientId: w.clientId,
    kind: 'withdraw.return',
    refType: 'withdrawal_push',
    refId: o.reference,
    postings: [
      { accountId: ext['external.bank'], amount: -o.amount },
      { accountId: wallet['deposit.available'], amount: o.amount },
    ],
    now: o.now,
  });
}
