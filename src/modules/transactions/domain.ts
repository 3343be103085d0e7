// One-time deposits (docs/money.md#one-time-deposits): pull money from the user's linked account into the wallet,
// less disbursements to counterparties and, when no fee counterparty pays it, the ACH fee.
//
//   initiate  external.bank −amount │ wallet deposit.pending +credit │ counterparty pending +dᵢ
//             fee: fee counterparty available −fee (or deducted from the credit) │ platform.fees +fee
//   clear     pending → available (wallet and counterparties); accrue reward: platform.rewards → wallet
//   fail      everything back to external.bank; the fee returned to whoever paid it
import type { FastifyBaseLogger } from 'fastify';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import {
  accountIds,
  clientAccountIds,
  type ClientCode,
  type CounterpartyCode,
  type WalletCode,
} from '../../ledger/accounts.ts';
import { postEntry, type EntryInput, type Posting } from '../../ledger/post.ts';
import type { BankTransferProvider } from '../../providers/bank-transfers.ts';
import { recordSentTransfers, startPulls } from '../bank-transfers/record.ts';
import { resolveSettings, type ClientSettings } from '../clients/settings.ts';
import { findClient } from '../clients/sql.ts';
import { findCounterparties } from '../counterparties/sql.ts';
import { recordEvent } from '../events/record.ts';
import { getWallet } from '../wallets/domain.ts';
import { transactionResource } from './render.ts';
import * as q from './sql.ts';

export interface DepositInput {
  clientId: string;
  settings: ClientSettings;
  walletId: string;
  amount: number;
  linkedAccountId: string;
  disbursement?: { amount: number; counterpartyId: string }[];
  risk?: { deviceSessionId?: string };
  /** The merchant's own accounts, read before the transaction (see clientAccountIds). */
  clientAccounts: Record<ClientCode, string>;
  now: Date;
}

const ptr = (p: string) => ({ pointer: `/data/attributes/${p}` });

/**
 * A Pending deposit and its ledger entry, checked against what the group check read (see
 * deposit-groups.ts, which writes them): throws the deposit's error, or returns its rows.
 */
export async function planDeposit(
  tx: Executor,
  i: DepositInput,
  context: Partial<q.DepositContext> | undefined,
): Promise<{ txn: q.TransactionRow; entry: EntryInput }> {
  const s = i.settings;
  if (i.amount > s.maxOneTimeDeposit) {
    throw apiError(
      'ExceedsMaxOneTimeDepositAmount',
      `The most a one-time deposit can be is ${s.maxOneTimeDeposit} cents.`,
      ptr('amount'),
    );
  }
  const disbursement = i.disbursement ?? [];
  const ids = disbursement.map((d) => d.counterpartyId);
  if (new Set(ids).size !== ids.length)
    throw apiError('ValidationError', 'Each counterparty may appear once in `disbursement`.', ptr('disbursement'));
  const disbursed = disbursement.reduce((sum, d) => sum + d.amount, 0);
  if (disbursed > i.amount)
    throw apiError('ValidationError', '`disbursement` adds up to more than `amount`.', ptr('disbursement'));

  // Read with the idempotency check (see checkDepositGroup): no wallet, no columns.
  if (!context?.walletId) throw apiError('WalletNotFound', `No wallet ${i.walletId}.`);
  const c = context as q.DepositContext;
  if (c.walletStatus !== 'Active') throw apiError('WalletClosed');
  if (c.kycStatus !== 'Approved')
    throw apiError('InvalidKycStatus', `The user's KYC status is ${c.kycStatus}; deposits need Approved.`);
  if (c.linkedStatus === null)
    throw apiError('LinkedAccountNotFound', "The linked account is not one of the wallet user's.", {
      status: 400,
      ...ptr('linkedAccountId'),
    });
  if (c.linkedStatus !== 'Connected') throw apiError('LinkedAccountDisconnected', undefined, ptr('linkedAccountId'));
  const found = new Set((await findCounterparties(tx, i.clientId, ids)).map((cp) => cp.id));
  const missing = disbursement.findIndex((d) => !found.has(d.counterpartyId));
  if (missing >= 0)
    throw apiError('CounterpartyNotFound', `No counterparty ${ids[missing]}.`, {
      status: 400,
      ...ptr(`disbursement/${missing}/counterpartyId`),
    });

  // The ACH fee: paid by the fee counterparty when the merchant has one, else deducted.
  const fee = s.achFee;
  const feeCounterpartyId = fee > 0 ? s.feeCounterpartyId : null;
  const feeDeducted = fee > 0 && !feeCounterpartyId ? fee : 0;
  const walletAmount = i.amount - disbursed - feeDeducted;
  if (walletAmount < 0)
    throw apiError('ValidationError', '`amount` does not cover the disbursements and the ACH fee.', ptr('amount'));

  const txn: q.TransactionRow = {
    id: uuidv7(),
    clientId: i.clientId,
    walletId: c.walletId,
    userId: c.userId,
    linkedAccountId: i.linkedAccountId,
    type: 'NonRecurring',
    status: 'Pending',
    amount: i.amount,
    walletAmount,
    feeAmount: fee,
    feeType: 'ACHFee',
    feeDeducted,
    feeCounterpartyId,
    disbursement: disbursement.map((d) => ({
      counterpartyId: d.counterpartyId,
      amount: d.amount,
      fee: 0,
      remit: false,
    })),
    rewardAmount: 0,
    risk: i.risk ?? null,
    providerRef: null,
    failureReason: null,
    createdAt: i.now,
    clearedAt: null,
    failedAt: null,
    updatedAt: i.now,
  };

  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: c.walletId });
  const postings: Posting[] = [
    { accountId: i.clientAccounts['external.bank'], amount: -i.amount },
    { accountId: w['deposit.pending'], amount: walletAmount },
  ];
  for (const d of disbursement) {
    const cp = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: d.counterpartyId });
    postings.push({ accountId: cp['counterparty.pending'], amount: d.amount });
  }
  if (fee > 0) {
    // Revenue either way; paid by the fee counterparty, or (deducted) out of the user's credit.
    postings.push({ accountId: i.clientAccounts['platform.fees'], amount: fee });
    if (feeCounterpartyId) {
      const cp = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: feeCounterpartyId });
      postings.push({ accountId: cp['counterparty.available'], amount: -fee });
    }
  }
  // Only credits here (the fee counterparty may go negative): safe to write in a group.
  return {
    txn,
    entry: {
      clientId: i.clientId,
      kind: 'deposit.initiate',
      refType: 'transaction',
      refId: txn.id,
      postings,
      now: i.now,
    },
  };
}

/** The most pulls one run of the bank-pulls job sends. */
export const PULL_BATCH = 200;

/**
 * Job: asks the ACH provider to pull the money for deposits it has not acknowledged yet,
 * outside any transaction, and records its references. Runs every few hundred milliseconds,
 * so a request never waits on the bank; the transaction id is the provider's idempotency key,
 * so a pull sent twice (two processes, or a crash before the reference was recorded) is still
 * one transfer.
 */
export async function sendPendingPulls(
  db: Db,
  opts: { provider: BankTransferProvider; now: () => Date; log?: FastifyBaseLogger },
): Promise<number> {
  const due = await q.unsentPulls(db, PULL_BATCH);
  const sent = await startPulls(
    opts.provider,
    due.map((p) => ({
      reference: p.id,
      clientId: p.clientId,
      purpose: 'deposit',
      subjectId: p.id,
      amount: p.amount,
      externalId: p.externalId,
    })),
    { log: opts.log, what: 'deposit pulls' },
  );
  await recordSentTransfers(db, {
    track: opts.provider.reportsStatus,
    transfers: sent,
    now: opts.now(),
    record: (ex) =>
      q.recordProviderRefs(
        ex,
        sent.map((t) => ({ id: t.subjectId, providerRef: t.providerRef })),
      ),
  });
  return sent.length;
}

/**
 * The bank reported how a deposit's pull ended: the deposit clears or fails, as through the
 * sandbox's simulations. A deposit no longer Pending (cleared or failed meanwhile) is left alone.
 */
export async function finishDepositPull(
  tx: Executor,
  o: { transactionId: string; settled: boolean; reason?: string; baseUrl: string; now: Date },
): Promise<void> {
  const t = await q.lockTransactionById(tx, o.transactionId);
  if (t?.status !== 'Pending') return;
  const client = await findClient(tx, t.clientId);
  const so: SettleOptions = {
    clientId: t.clientId,
    walletId: t.walletId,
    settings: resolveSettings(client!.settings),
    baseUrl: o.baseUrl,
    now: o.now,
  };
  const ext = await clientAccountIds(tx, t.clientId);
  if (o.settled) await clear(tx, t, so, ext);
  else await fail(tx, t, o.reason ?? DEFAULT_FAILURE, so, ext);
}

export async function listTransactions(
  db: Executor,
  opts: { clientId: string; walletId: string; type?: string; page: Page },
) {
  // Only NonRecurring transactions exist; any other type is an empty list (spec).
  if (opts.type !== undefined && opts.type !== 'NonRecurring') {
    await getWallet(db, opts);
    return { rows: [], total: 0 };
  }
  // The page first, in one round trip: its rows are read by the merchant's id and the wallet's,
  // so a row shows the wallet is the merchant's; only an empty page looks the wallet up (404).
  const page = await q.listTransactionRows(db, opts.clientId, opts.walletId, opts.page);
  if (page.rows.length === 0) await getWallet(db, opts);
  return page;
}

export async function getTransaction(
  db: Executor,
  opts: { clientId: string; walletId: string; transactionId: string },
) {
  const wallet = await getWallet(db, opts);
  const t = await q.findTransaction(db, opts.clientId, wallet.id, opts.transactionId);
  if (!t) throw apiError('TransactionNotFound', `Wallet ${wallet.id} has no transaction ${opts.transactionId}.`);
  return t;
}

interface SettleOptions {
  clientId: string;
  walletId: string;
  settings: ClientSettings;
  baseUrl: string;
  now: Date;
}

/** The bank transfer cleared: pending → available, the accrue reward credited, TransactionCleared. */
async function clear(
  tx: Executor,
  t: q.TransactionRow,
  o: SettleOptions,
  ext: Record<ClientCode, string>,
): Promise<q.TransactionRow> {
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: t.walletId });
  const reward = Math.floor((t.walletAmount * o.settings.depositRewardBps) / 10_000);
  const postings: Posting[] = [
    { accountId: w['deposit.pending'], amount: -t.walletAmount },
    { accountId: w['deposit.available'], amount: t.walletAmount },
    { accountId: ext['platform.rewards'], amount: -reward },
    { accountId: w['reward.accrue.available'], amount: reward },
  ];
  for (const d of t.disbursement) {
    const c = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: d.counterpartyId });
    postings.push(
      { accountId: c['counterparty.pending'], amount: -d.amount },
      { accountId: c['counterparty.available'], amount: d.amount },
    );
  }
  await postEntry(tx, {
    clientId: t.clientId,
    kind: 'deposit.clear',
    refType: 'transaction',
    refId: t.id,
    postings,
    now: o.now,
  });
  const cleared = await q.updateTransactionRow(tx, t.id, {
    status: 'Cleared',
    clearedAt: o.now,
    rewardAmount: reward,
    updatedAt: o.now,
  });
  await q.addClearedDeposit(tx, t);
  await recordEvent(tx, {
    clientId: t.clientId,
    topic: 'TransactionCleared',
    userId: t.userId,
    walletId: t.walletId,
    resource: transactionResource(cleared, o.baseUrl),
    now: o.now,
  });
  return cleared;
}

/** The bank transfer failed: every cent goes back where it came from, TransactionFailed. */
async function fail(
  tx: Executor,
  t: q.TransactionRow,
  reason: string,
  o: SettleOptions,
  ext: Record<ClientCode, string>,
): Promise<q.TransactionRow> {
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: t.walletId });
  const postings: Posting[] = [
    { accountId: w['deposit.pending'], amount: -t.walletAmount },
    { accountId: ext['external.bank'], amount: t.amount },
    { accountId: ext['platform.fees'], amount: -t.feeAmount },
  ];
  for (const d of t.disbursement) {
    const c = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: d.counterpartyId });
    postings.push({ accountId: c['counterparty.pending'], amount: -d.amount });
  }
  if (t.feeCounterpartyId && t.feeAmount > 0) {
    const c = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: t.feeCounterpartyId });
    postings.push({ accountId: c['counterparty.available'], amount: t.feeAmount });
  }
  await postEntry(tx, {
    clientId: t.clientId,
    kind: 'deposit.fail',
    refType: 'transaction',
    refId: t.id,
    postings,
    now: o.now,
  });
  const failed = await q.updateTransactionRow(tx, t.id, {
    status: 'Failed',
    failedAt: o.now,
    failureReason: reason,
    updatedAt: o.now,
  });
  await recordEvent(tx, {
    clientId: t.clientId,
    topic: 'TransactionFailed',
    userId: t.userId,
    walletId: t.walletId,
    resource: transactionResource(failed, o.baseUrl),
    now: o.now,
  });
  return failed;
}

const DEFAULT_FAILURE = 'The bank returned the transfer (R01: insufficient funds).';

/**
 * Sandbox: the wallet's pending deposits of one kind clear: `bank` those pulled from bank
 * accounts, `card` those charged to a card (a demo backup payment method). Returns how many.
 */
export async function clearPendingDeposits(db: Db, o: SettleOptions & { funding: 'bank' | 'card' }): Promise<number> {
  const ext = await clientAccountIds(db, o.clientId);
  return db.transaction(async (tx) => {
    await getWallet(tx, o);
    const pending = await q.lockPendingTransactions(tx, o.clientId, o.walletId, o.funding);
    for (const t of pending) await clear(tx, t, o, ext);
    return pending.length;
  });
}

/** Sandbox: one pending deposit fails (the given one, else the oldest pending). */
export async function failDeposit(
  db: Db,
  o: SettleOptions & { transactionId?: string; reason?: string },
): Promise<q.TransactionRow> {
  const ext = await clientAccountIds(db, o.clientId);
  return db.transaction(async (tx) => {
    await getWallet(tx, o);
    let t: q.TransactionRow | undefined;
    if (o.transactionId) {
      t = await q.findTransaction(tx, o.clientId, o.walletId, o.transactionId, { forUpdate: true });
      if (!t)
        throw apiError('TransactionNotFound', `Wallet ${o.walletId} has no transaction ${o.transactionId}.`, {
          status: 400,
          pointer: '/data/attributes/transactionId',
        });
      if (t.status !== 'Pending')
        throw apiError('IllegalOperation', `The transaction is ${t.status}; only a Pending one can fail.`);
    } else {
      t = (await q.lockPendingTransactions(tx, o.clientId, o.walletId))[0];
      if (!t) throw apiError('IllegalOperation', 'The wallet has no pending transaction.');
    }
    return fail(tx, t, o.reason ?? DEFAULT_FAILURE, o, ext);
  });
}
