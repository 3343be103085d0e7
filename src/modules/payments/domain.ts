// Payments (docs/payments.md#payments-in-detail): the state machine and what each transition does to the ledger.
//
//   (authorize) → Created ──capture (bank rails)──→ Processing ──settle──→ Sent ──refunds=captured──→ Returned
//                 Created ──card network capture──→ Sent                      Processing ──bank pull fails──→ Failed
//                 Created ──cancel / expiresAt──→ Canceled (funds released)
//   (authorize, declined) → Failed          (POST /payments) → Processing
//
// Anything else is IllegalOperation: 400, or 402 on capture, increase-authorization and complete,
// whose only failure status in Accrue's contract is 402 (the capture or authorization fails).
import type { FastifyBaseLogger } from 'fastify';
import { uuidv7 } from '../../ids.ts';
import { WriteBatch } from '../../db/batch.ts';
import type { Db, Executor } from '../../db/open.ts';
import type { Sourcing } from '../../db/schema.ts';
import { ApiError, apiError } from '../../http/errors.ts';
import type { Page, SortKey } from '../../http/paging.ts';
import { checkBodyId } from '../../http/patch-body.ts';
import {
  accountIds,
  balancesOf,
  clientAccountIds,
  WALLET_CODES,
  type ClientCode,
  type GiftCode,
  type WalletCode,
} from '../../ledger/accounts.ts';
import { InsufficientFundsError, lockAccounts, refusedByLedger } from '../../ledger/post.ts';
import { countMovement } from '../../observability/metrics.ts';
import { refuseOverMaxAmount, type ClientSettings } from '../clients/settings.ts';
import type { BankTransferProvider } from '../../providers/bank-transfers.ts';
import { recordSentTransfers, startPulls } from '../bank-transfers/record.ts';
import { recordEvent } from '../events/record.ts';
import type { Topic } from '../events/topics.ts';
import { intentResource } from '../payment-intents/render.ts';
import {
  intentFromJson,
  lockIntent,
  lockIntentSkipLocked,
  updateIntent,
  updateIntentPart,
  type IntentRow,
} from '../payment-intents/sql.ts';
import { findUser } from '../users/sql.ts';
import type { Buckets } from '../wallets/balance.ts';
import { findWallet } from '../wallets/sql.ts';
import {
  NO_SOURCING,
  addSourcing,
  captureGift,
  releaseGift,
  captureWallet,
  disburse,
  holdGift,
  movedWalletAccounts,
  payFromWallet,
  planRefund,
  planWalletSourcing,
  releaseWallet,
  reserveWallet,
  returnCaptured,
  splitCapture,
} from './money.ts';
import { paymentResource, refundResource, type RenderContext } from './render.ts';
import * as q from './sql.ts';
import { rememberPaymentWallet } from './wallet-hints.ts';

/** Uncaptured authorizations are released after seven days (docs/payments.md#payments-in-detail). */
export const AUTHORIZATION_LIFETIME_MS = 7 * 86_400_000;
/** The sandbox bank settles a captured payment this long after capture. */
export const SANDBOX_SETTLE_DELAY_MS = 1_000;

export async function emitPayment(
  tx: Executor,
  topic: Topic,
  p: q.PaymentRow,
  rc: RenderContext,
  now: Date,
  batch?: WriteBatch,
): Promise<void> {
  await recordEvent(
    tx,
    {
      clientId: p.clientId,
      topic,
      ...(p.userId ? { userId: p.userId } : {}),
      ...(p.walletId ? { walletId: p.walletId } : {}),
      resource: paymentResource(p, rc, { withProcessor: true }),
      now,
    },
    { batch },
  );
}

/** An intent event; `paymentIds` (the intent's payments, oldest first) saves reading them. */
export async function emitIntent(
  tx: Executor,
  topic: Topic,
  i: IntentRow,
  rc: RenderContext,
  now: Date,
  opts: { batch?: WriteBatch; paymentIds?: string[] } = {},
): Promise<void> {
  const paymentIds = opts.paymentIds ?? (await q.paymentsOfIntents(tx, [i.id])).map((p) => p.id);
  await recordEvent(
    tx,
    {
      clientId: i.clientId,
      topic,
      ...(i.userId ? { userId: i.userId } : {}),
      ...(i.walletId ? { walletId: i.walletId } : {}),
      resource: intentResource(i, paymentIds, rc.baseUrl, now),
      now,
    },
    { batch: opts.batch },
  );
}

async function walletBuckets(db: Executor, walletId: string): Promise<Buckets> {
  return ((await balancesOf(db, 'wallet', [walletId])).get(walletId) ?? {}) as Buckets;
}

export async function getPayment(
  db: Executor,
  opts: { clientId: string; paymentId: string; forUpdate?: boolean },
): Promise<q.PaymentRow> {
  const p = await q.findPayment(db, opts.clientId, opts.paymentId, { forUpdate: opts.forUpdate });
  if (!p) throw apiError('PaymentNotFound', `No payment ${opts.paymentId}.`);
  return p;
}

function illegal(p: q.PaymentRow, action: string, status = 400): never {
  throw apiError('IllegalOperation', `A ${p.status} payment cannot be ${action}.`, { status });
}

interface Ctx {
  clientId: string;
  rc: RenderContext;
  now: Date;
}

/**
 * Bank-rail capture (also automatic capture at authorization): up to the authorized amount,
 * taken in the spending order; the uncaptured rest is released. Created → Processing. With a
 * batch, its writes join the caller's.
 */
export async function captureBankPayment(
  tx: Executor,
  p: q.PaymentRow,
  amount: number,
  c: Ctx & { ext: Record<ClientCode, string>; batch?: WriteBatch; locked?: ReadonlySet<string> },
): Promise<q.PaymentRow> {
  if (p.status !== 'Created') illegal(p, 'captured', 402);
  if (p.rail !== 'bank')
    throw apiError(
      'IllegalOperation',
      'Card-rail and gift payments are captured through the card network, not this endpoint.',
      { status: 402 },
    );
  if (amount > p.amount)
    throw apiError('ValidationError', `\`amount\` is more than the ${p.amount} cents authorized.`, {
      pointer: '/data/attributes/amount',
    });
  const own = c.batch ?? new WriteBatch();
  const { captured, released } = splitCapture(p.sourcing, amount);
  await captureWallet(tx, {
    clientId: c.clientId,
    refType: 'payment',
    refId: p.id,
    now: c.now,
    walletId: p.walletId!,
    captured,
    released,
    to: 'settlement',
    ext: c.ext,
    batch: own,
    locked: c.locked,
  });
  const patch = {
    status: 'Processing',
    capturedAmount: amount,
    captured,
    capturedAt: c.now,
    settleAfter: new Date(c.now.getTime() + SANDBOX_SETTLE_DELAY_MS),
    updatedAt: c.now,
  };
  // An automatic capture updates the payment its authorization inserts in the same batch.
  await own.put(tx, q.updatePaymentPart(p.id, patch));
  const updated: q.PaymentRow = { ...p, ...patch };
  await emitPayment(tx, 'PaymentCaptured', updated, c.rc, c.now, own);
  if (!c.batch) await own.flush(tx);
  return updated;
}

/** POST /payments/{id}/capture (capture-groups.ts). */
export type CaptureInput = Ctx & { paymentId: string; amount: number };

/** A changed payment (captured, canceled, increased), with its intent and the intent's payments for the response. */
export interface ChangedPayment {
  payment: q.PaymentRow;
  intent: IntentRow | undefined;
  paymentIds: string[];
}

/** The response's view of a locked payment's intent (lockPaymentsWithIntents). */
export const capturedOf = (payment: q.PaymentRow, intent: Record<string, unknown> | null): ChangedPayment => ({
  payment,
  intent: intent ? intentFromJson(intent) : undefined,
  paymentIds: (intent?.payment_ids as string[] | undefined) ?? [],
});

/**
 * Created → Canceled: the reservation (or the card network's hold on a gift) is released. With a
 * batch, its writes join the caller's (which holds the wallet's or gift's accounts in `locked`).
 */
export async function cancelCreatedPayment(
  tx: Executor,
  p: q.PaymentRow,
  c: Ctx & { reason: string; batch?: WriteBatch; locked?: ReadonlySet<string> },
): Promise<q.PaymentRow> {
  if (p.status !== 'Created') illegal(p, 'canceled');
  const batch = c.batch ?? new WriteBatch();
  const ref = { clientId: c.clientId, refType: 'payment', refId: p.id, now: c.now, batch, locked: c.locked };
  if (p.walletId) await releaseWallet(tx, { ...ref, walletId: p.walletId, sourcing: p.sourcing });
  if (p.giftId && p.networkAuthorized > 0)
    await releaseGift(tx, { ...ref, giftId: p.giftId, amount: p.networkAuthorized });
  if (p.networkAuthorized > 0) await q.cancelCardAuthorizations(tx, p.id, c.now);
  const patch = { status: 'Canceled', canceledAt: c.now, failureReason: c.reason, updatedAt: c.now };
  await batch.put(tx, q.updatePaymentPart(p.id, patch));
  const updated: q.PaymentRow = { ...p, ...patch };
  await emitPayment(tx, 'PaymentUpdated', updated, c.rc, c.now, batch);
  if (!c.batch) await batch.flush(tx);
  return updated;
}

/** The tracked accounts a Created payment's cancel moves money between, in id order (the order every movement locks them in). */
export async function releasedAccounts(tx: Executor, p: q.PaymentRow): Promise<string[]> {
  const ids: string[] = [];
  if (p.walletId) {
    const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: p.walletId });
    ids.push(...movedWalletAccounts(w, NO_SOURCING, p.sourcing));
  }
  if (p.giftId && p.networkAuthorized > 0) {
    const g = await accountIds<GiftCode>(tx, { ownerType: 'gift', ownerId: p.giftId });
    ids.push(g['gift.available'], g['gift.reserved']);
  }
  return ids.sort();
}

/** A Created payment's cancel (POST /payments/{id}/cancel, cancel-groups.ts): the payment and its intent end. */
export type CancelInput = Ctx & { paymentId: string };

/**
 * Cancels a payment locked with its intent (read after the intent's lock), whose released
 * accounts the caller holds locked: the release, both updates and both events go to `batch`.
 */
export async function cancelLockedPayment(
  tx: Executor,
  locked: { payment: q.PaymentRow; intent: Record<string, unknown> | null },
  c: CancelInput & { batch: WriteBatch; held: ReadonlySet<string> },
): Promise<ChangedPayment> {
  const canceled = await cancelCreatedPayment(tx, locked.payment, {
    ...c,
    reason: 'Canceled by the merchant.',
    locked: c.held,
  });
  const { intent: before, paymentIds } = capturedOf(locked.payment, locked.intent);
  if (!before) return { payment: canceled, intent: undefined, paymentIds: [] };
  const patch = { status: 'Canceled', updatedAt: c.now };
  c.batch.add(updateIntentPart(before.id, patch));
  const intent: IntentRow = { ...before, ...patch };
  await emitIntent(tx, 'PaymentIntentUpdated', intent, c.rc, c.now, { batch: c.batch, paymentIds });
  return { payment: canceled, intent, paymentIds };
}

/**
 * Job: uncaptured authorizations past their expiry are canceled and their funds released.
 * Intent before payment, as everywhere; either one busy means another transition has it, and
 * the next run looks again.
 */
export async function expireAuthorizations(db: Db, opts: { rc: RenderContext; now: () => Date }): Promise<number> {
  return db.transaction(async (tx) => {
    const now = opts.now();
    let done = 0;
    for (const due of await q.expiredAuthorizations(tx, now, 100)) {
      if (due.intentId && !(await lockIntentSkipLocked(tx, due.intentId))) continue;
      const p = await q.lockPaymentSkipLocked(tx, due.id);
      if (p?.status !== 'Created' || p.expiresAt > now) continue;
      await cancelCreatedPayment(tx, p, {
        clientId: p.clientId,
        rc: opts.rc,
        now,
        reason: 'The authorization expired uncaptured.',
      });
      if (p.intentId) {
        const intent = await updateIntent(tx, p.intentId, { status: 'Canceled', updatedAt: now });
        await emitIntent(tx, 'PaymentIntentUpdated', intent, opts.rc, now);
      }
      done++;
    }
    return done;
  });
}

/**
 * Processing → Sent: the bank pull settled; disbursements reach the counterparties. A payment
 * fully refunded while still processing ends Returned and pays no disbursement: the purchase
 * was undone before any money arrived, so there is nothing to share out.
 */
async function settle(
  tx: Executor,
  p: q.PaymentRow,
  c: Ctx & { ext: Record<ClientCode, string>; batch?: WriteBatch },
): Promise<q.PaymentRow> {
  const own = c.batch ?? new WriteBatch();
  const fullyRefunded = p.refundedAmount > 0 && p.refundedAmount === p.capturedAmount;
  if (!fullyRefunded)
    await disburse(tx, {
      clientId: p.clientId,
      refType: 'payment',
      refId: p.id,
      now: c.now,
      disbursement: p.disbursement,
      ext: c.ext,
      batch: own,
    });
  const patch = { status: fullyRefunded ? 'Returned' : 'Sent', settledAt: c.now, updatedAt: c.now };
  await own.put(tx, q.updatePaymentPart(p.id, patch));
  const updated: q.PaymentRow = { ...p, ...patch };
  await emitPayment(tx, 'PaymentUpdated', updated, c.rc, c.now, own);
  if (!c.batch) await own.flush(tx);
  return updated;
}

/**
 * The most payments one settlement run settles while settlement keeps up; a run that settles
 * this many starts the next at once (JobRunner's batch). A run prepares its payments' updates
 * and events without giving the event loop back, and what it renders stays alive until its
 * write is answered, so every scavenge in between copies it: smaller runs keep less alive.
 */
export const SETTLE_BATCH = 40;
/**
 * A run that finds payments this long past their settlement time is behind: the next takes up
 * to SETTLE_BATCH_BEHIND, so a backlog is worked off in a few large statements instead of many
 * small ones.
 */
export const SETTLE_BEHIND_MS = 1_000;
export const SETTLE_BATCH_BEHIND = 200;

/**
 * Job: Processing payments settle once their settlement time comes (all of them with the
 * sandbox bank; with a bank that reports status, those with no bank part). One run is
 * one transaction of three statements whatever its size: the due payments locked, oldest first,
 * then every payment's disbursement, update and event in one merged write (WriteBatch.merged),
 * so settling a backlog behind busy captures costs the database little per payment. Each run
 * takes SETTLE_BATCH payments, or SETTLE_BATCH_BEHIND after a run found settlement behind.
 */
export function settlementJob(
  db: Db,
  opts: { rc: RenderContext; now: () => Date; withoutBankPart?: boolean },
): () => Promise<number> {
  let limit = SETTLE_BATCH;
  return async () => {
    const now = opts.now();
    const { settled, oldestDue } = await settleDuePayments(db, { ...opts, now, limit });
    limit = oldestDue && now.getTime() - oldestDue.getTime() >= SETTLE_BEHIND_MS ? SETTLE_BATCH_BEHIND : SETTLE_BATCH;
    return settled;
  };
}

/** One settlement run: up to `limit` due payments settled, and when the oldest of them was due. */
async function settleDuePayments(
  db: Db,
  opts: { rc: RenderContext; now: Date; limit: number; withoutBankPart?: boolean },
): Promise<{ settled: number; oldestDue: Date | null }> {
  return db.transaction(async (tx) => {
    const now = opts.now;
    const due = await q.lockDueSettlements(tx, now, opts.limit, { withoutBankPart: opts.withoutBankPart });
    const batches: WriteBatch[] = [];
    for (const p of due) {
      const batch = new WriteBatch();
      await settle(tx, p, {
        clientId: p.clientId,
        rc: opts.rc,
        now,
        ext: await clientAccountIds(tx, p.clientId),
        batch,
      });
      batches.push(batch);
    }
    await WriteBatch.merged(batches).flush(tx);
    return { settled: due.length, oldestDue: due[0]?.settleAfter ?? null };
  });
}

/** Sandbox: the bank settles this Processing payment now, without waiting for its time. */
export async function settlePaymentNow(db: Db, opts: Ctx & { paymentId: string }): Promise<q.PaymentRow> {
  const ext = await clientAccountIds(db, opts.clientId);
  return db.transaction(async (tx) => {
    const p = await getPayment(tx, { ...opts, forUpdate: true });
    if (p.status !== 'Processing') illegal(p, 'settled');
    return settle(tx, p, { ...opts, ext });
  });
}

/** Sandbox: the bank pull of a Processing payment failed; the captured money goes back. Processing → Failed. */
export async function failBankPull(db: Db, opts: Ctx & { paymentId: string; reason?: string }): Promise<q.PaymentRow> {
  const ext = await clientAccountIds(db, opts.clientId);
  return db.transaction(async (tx) => {
    const p = await getPayment(tx, { ...opts, forUpdate: true });
    if (p.status !== 'Processing') illegal(p, 'failed by the bank');
    return failProcessing(tx, p, { ...opts, ext });
  });
}

/** Processing → Failed: the bank pull failed and the captured money goes back. */
async function failProcessing(
  tx: Executor,
  p: q.PaymentRow,
  c: Ctx & { ext: Record<ClientCode, string>; reason?: string },
): Promise<q.PaymentRow> {
  // What refunds already returned is not returned again.
  const returned = planRefund(
    p.captured ?? NO_SOURCING,
    await alreadyReturned(tx, p.id),
    p.capturedAmount - p.refundedAmount,
  );
  // Nothing arrived from the bank: its part is simply not owed.
  await returnCaptured(tx, {
    clientId: p.clientId,
    refType: 'payment',
    refId: p.id,
    now: c.now,
    walletId: p.walletId,
    giftId: null,
    returned,
    from: 'settlement',
    ext: c.ext,
    kind: 'payment.fail',
  });
  const updated = await q.updatePayment(tx, p.id, {
    status: 'Failed',
    failureReason: c.reason ?? 'The bank returned the transfer (R01: insufficient funds).',
    updatedAt: c.now,
  });
  await emitPayment(tx, 'PaymentUpdated', updated, c.rc, c.now);
  return updated;
}

/** How long a claimed payment's pull belongs to the process sending it. */
const PULL_LEASE_MS = 60_000;
/** The most payments' pulls one run sends. */
export const PAYMENT_PULL_BATCH = 100;

/**
 * Job (a bank that reports status): when a captured payment's settlement comes due, its bank
 * part (what the linked account funds) is pulled, outside any transaction, with the payment's id
 * as the idempotency key; the payment then waits for the bank's report (finishPaymentPull)
 * instead of settling at a time of its own. A pull the bank did not take is sent again when its
 * lease runs out.
 */
export async function sendPaymentPulls(
  db: Db,
  opts: { provider: BankTransferProvider; now: () => Date; log?: FastifyBaseLogger },
): Promise<number> {
  const now = opts.now();
  const due = await q.claimDueBankPulls(db, now, new Date(now.getTime() + PULL_LEASE_MS), PAYMENT_PULL_BATCH);
  const sent = await startPulls(
    opts.provider,
    due.map((p) => ({
      reference: p.id,
      clientId: p.clientId,
      purpose: 'payment',
      subjectId: p.id,
      amount: p.amount,
      externalId: p.externalId,
    })),
    { log: opts.log, what: 'payment pulls' },
  );
  await recordSentTransfers(db, {
    track: true,
    transfers: sent,
    now,
    record: (tx) =>
      q.awaitBankReport(
        tx,
        sent.map((t) => t.reference),
      ),
  });
  return sent.length;
}

/** The bank reported how a payment's pull ended: Processing → Sent (settled) or Failed. A payment no longer Processing is left alone. */
export async function finishPaymentPull(
  tx: Executor,
  o: { paymentId: string; settled: boolean; reason?: string; rc: RenderContext; now: Date },
): Promise<void> {
  const p = await q.lockPaymentById(tx, o.paymentId);
  if (p?.status !== 'Processing') return;
  const c = { clientId: p.clientId, rc: o.rc, now: o.now, ext: await clientAccountIds(tx, p.clientId) };
  if (o.settled) await settle(tx, p, c);
  else await failProcessing(tx, p, { ...c, reason: o.reason });
}

/** What the payment's refunds have returned so far, by source. */
async function alreadyReturned(tx: Executor, paymentId: string): Promise<Sourcing> {
  return (await q.refundsOf(tx, [paymentId])).reduce((acc, r) => addSourcing(acc, r.returned), NO_SOURCING);
}

/** The tracked accounts a refund of the payment may credit (its wallet's available buckets, its gift). */
export async function creditedAccounts(tx: Executor, p: q.PaymentRow): Promise<string[]> {
  const ids: string[] = [];
  if (p.walletId) {
    const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: p.walletId });
    ids.push(w['deposit.available'], w['reward.accrue.available'], w['reward.merchant.available']);
  }
  if (p.giftId) ids.push((await accountIds<GiftCode>(tx, { ownerType: 'gift', ownerId: p.giftId }))['gift.available']);
  return ids;
}

/**
 * A refund (Processing or Sent) of a payment the caller has locked: money returns where it came
 * from, planned against what the payment's `earlier` refunds (read after the lock) returned.
 * When everything captured is refunded, a Sent payment becomes Returned. Its writes go to the
 * caller's batch, which holds the credited accounts locked: none of them can fail a
 * no-negative check, since a refund only credits wallets and gifts (refund-groups.ts).
 */
export async function refundPayment(
  tx: Executor,
  p: q.PaymentRow,
  opts: Ctx & {
    amount: number;
    ext: Record<ClientCode, string>;
    earlier: q.RefundRow[];
    batch: WriteBatch;
    locked: ReadonlySet<string>;
  },
): Promise<{ refund: q.RefundRow; payment: q.PaymentRow }> {
  if (p.status !== 'Processing' && p.status !== 'Sent') illegal(p, 'refunded');
  const refundable = p.capturedAmount - p.refundedAmount;
  if (opts.amount > refundable) {
    throw apiError('InvalidRefund', `\`amount\` is more than the ${refundable} cents left to refund.`, {
      pointer: '/data/attributes/amount',
    });
  }
  const returned = planRefund(
    p.captured ?? NO_SOURCING,
    opts.earlier.reduce((acc, r) => addSourcing(acc, r.returned), NO_SOURCING),
    opts.amount,
  );
  const refund: q.RefundRow = {
    id: uuidv7(),
    clientId: p.clientId,
    paymentId: p.id,
    amount: opts.amount,
    returned,
    createdAt: opts.now,
  };
  const batch = opts.batch;
  await returnCaptured(tx, {
    clientId: p.clientId,
    refType: 'refund',
    refId: refund.id,
    now: opts.now,
    walletId: p.walletId,
    giftId: p.giftId,
    returned,
    from: p.rail === 'bank' ? 'settlement' : 'card_network',
    ext: opts.ext,
    kind: 'payment.refund',
    batch,
    locked: opts.locked,
  });
  batch.add(q.insertRefundPart(refund));
  const refundedAmount = p.refundedAmount + opts.amount;
  const patch = {
    refundedAmount,
    ...(refundedAmount === p.capturedAmount && p.status === 'Sent' ? { status: 'Returned' } : {}),
    updatedAt: opts.now,
  };
  await batch.put(tx, q.updatePaymentPart(p.id, patch));
  const payment: q.PaymentRow = { ...p, ...patch };
  await recordEvent(
    tx,
    {
      clientId: p.clientId,
      topic: 'RefundCreated',
      ...(p.userId ? { userId: p.userId } : {}),
      ...(p.walletId ? { walletId: p.walletId } : {}),
      resource: refundResource(refund),
      now: opts.now,
    },
    { batch },
  );
  if (payment.status !== p.status) await emitPayment(tx, 'PaymentUpdated', payment, opts.rc, opts.now, batch);
  return { refund, payment };
}

// ----- direct payments (POST /payments) ----------------------------------------------------

export interface DirectPaymentInput {
  clientId: string;
  settings: ClientSettings;
  walletId: string;
  amount: number;
  linkedAccountId?: string;
  channel?: string;
  reference?: string;
  externalPayments?: { method: string; amount: number }[];
  disbursement?: { counterpartyId: string; amount: number; remit?: boolean }[];
  ext: Record<ClientCode, string>;
  rc: RenderContext;
  now: Date;
  /** What the payment decides on (checkDirectPaymentGroup). */
  context: q.DirectPaymentContext | undefined;
  /** Takes the payment's writes; directPaymentRefused() says what a refusal of them means. */
  batch: WriteBatch;
  /** The wallet's tracked accounts, when the caller holds their locks (direct-groups.ts). */
  locked?: ReadonlySet<string>;
}

const ptr = (p: string) => ({ pointer: `/data/attributes/${p}` });

/**
 * A payment taken at once from the wallet (spending order), the rest from the linked account;
 * `externalPayments` (cash and the like) are recorded, not moved. Starts Processing; settles to
 * Sent, when the disbursements reach their counterparties. Decided from its context, read with
 * the key's check; its entry, row and event go to the caller's batch.
 */
export async function createDirectPayment(tx: Executor, i: DirectPaymentInput): Promise<q.PaymentRow> {
  const external = (i.externalPayments ?? []).reduce((s, e) => s + e.amount, 0);
  if (external > i.amount)
    throw apiError('ValidationError', '`externalPayments` add up to more than `amount`.', ptr('externalPayments'));
  const disbursement = i.disbursement ?? [];
  const disbursed = disbursement.reduce((s, d) => s + d.amount, 0);
  if (disbursed > i.amount - external)
    throw apiError(
      'ValidationError',
      '`disbursement` adds up to more than Coffer takes (`amount` less `externalPayments`).',
      ptr('disbursement'),
    );
  const ids = disbursement.map((d) => d.counterpartyId);
  if (new Set(ids).size !== ids.length)
    throw apiError('ValidationError', 'Each counterparty may appear once in `disbursement`.', ptr('disbursement'));
  const c = i.context;
  const known = new Set(c?.counterpartyIds ?? []);
  const missing = disbursement.findIndex((d) => !known.has(d.counterpartyId));
  if (missing >= 0)
    throw apiError('CounterpartyNotFound', `No counterparty ${ids[missing]}.`, {
      status: 400,
      ...ptr(`disbursement/${missing}/counterpartyId`),
    });

  if (!c?.walletStatus)
    throw apiError('WalletNotFound', `No wallet ${i.walletId}.`, { status: 400, ...ptr('walletId') });
  if (c.walletStatus !== 'Active') throw apiError('WalletClosed', undefined, ptr('walletId'));
  if (c.kycStatus !== 'Approved')
    throw apiError('InvalidKycStatus', `The user's KYC status is ${c.kycStatus}; payments need Approved.`);

  const due = i.amount - external;
  const sourcing = planWalletSourcing((c.buckets ?? {}) as Buckets, due, {
    applyWalletBalance: true,
    rewardMinimumPurchase: i.settings.rewardMinimumPurchase,
    purchaseAmount: i.amount,
  });
  if (sourcing.linked > 0) {
    if (!i.linkedAccountId)
      throw apiError(
        'Failed',
        `The wallet covers ${due - sourcing.linked} of ${due} cents; send a linkedAccountId for the rest.`,
        ptr('linkedAccountId'),
      );
    if (!c.linkedStatus)
      throw apiError('LinkedAccountNotFound', "The linked account is not one of the wallet user's.", {
        status: 400,
        ...ptr('linkedAccountId'),
      });
    if (c.linkedStatus !== 'Connected') throw apiError('LinkedAccountDisconnected', undefined, ptr('linkedAccountId'));
    if (sourcing.linked > i.settings.bankFundingLimit) {
      throw apiError(
        'Failed',
        `The linked account may fund at most ${i.settings.bankFundingLimit} cents of a payment.`,
      );
    }
  }
  const id = uuidv7();
  await payFromWallet(tx, {
    clientId: i.clientId,
    refType: 'payment',
    refId: id,
    now: i.now,
    walletId: i.walletId,
    sourcing,
    ext: i.ext,
    batch: i.batch,
    locked: i.locked,
  });
  const payment: q.PaymentRow = {
    id,
    clientId: i.clientId,
    intentId: null,
    walletId: i.walletId,
    giftId: null,
    userId: c.walletUserId,
    rail: 'bank',
    status: 'Processing',
    amount: i.amount,
    capturedAmount: due,
    refundedAmount: 0,
    channel: i.channel ?? null,
    reference: i.reference ?? null,
    linkedAccountId: sourcing.linked > 0 ? i.linkedAccountId! : null,
    sourcing,
    captured: sourcing,
    externalPayments: i.externalPayments ?? [],
    disbursement: disbursement.map((d) => ({
      counterpartyId: d.counterpartyId,
      amount: d.amount,
      fee: 0,
      remit: d.remit ?? false,
    })),
    processor: null,
    networkAuthorized: 0,
    failureReason: null,
    expiresAt: new Date(i.now.getTime() + AUTHORIZATION_LIFETIME_MS),
    settleAfter: new Date(i.now.getTime() + SANDBOX_SETTLE_DELAY_MS),
    createdAt: i.now,
    updatedAt: i.now,
    capturedAt: i.now,
    settledAt: null,
    canceledAt: null,
  };
  i.batch.add(q.insertPaymentPart(payment));
  rememberPaymentWallet(payment.id, payment.walletId);
  await emitPayment(tx, 'PaymentCreated', payment, i.rc, i.now, i.batch);
  return payment;
}

/** A direct payment's write refused by the ledger's no-negative check: the balance it was planned from changed (402 Failed, to retry). */
export function directPaymentRefused(err: unknown): unknown {
  if (!refusedByLedger(err)) return err;
  countMovement('payment.direct', 'insufficient_funds');
  return apiError('Failed', 'The wallet balance changed; try again.');
}

// ----- the card network (sandbox) -------------------------------------------------------
//
// Each authorization the network answers is kept as an AuthorizationRequest (Approved or
// Declined) and each capture as a Capture (successful or refused), so they can be listed. A
// decline (402) is a network answer, not bad input: its row is recorded and the 402 follows.

const amountPointer = { pointer: '/data/attributes/amount' };

/** Commits what a declined network step recorded, then answers its 402. */
async function recordedDecline<T>(db: Db, step: (tx: Executor) => Promise<T | ApiError>): Promise<T> {
  const out = await db.transaction(step);
  if (out instanceof ApiError) throw out;
  return out;
}

type Authorized = { payment: q.PaymentRow; authorization: q.CardAuthorizationRow };
type Captured = { payment: q.PaymentRow; capture: q.CaptureRow };

/**
 * The merchant ran the payment's virtual card (or the gift's) through its gateway: the network
 * authorizes an amount on it. For a gift, that holds the gift's money. Over what the payment
 * (or the gift) has left, the authorization is Declined.
 */
export async function networkAuthorize(
  db: Db,
  opts: Ctx & { paymentId: string; amount?: number },
): Promise<Authorized> {
  await clientAccountIds(db, opts.clientId);
  return recordedDecline(db, async (tx) =>
    authorizeOnCard(tx, await getPayment(tx, { ...opts, forUpdate: true }), opts),
  );
}

/** The network's authorization of the locked payment `p`, in the caller's transaction; a decline is returned. */
async function authorizeOnCard(
  tx: Executor,
  p: q.PaymentRow,
  opts: Ctx & { amount?: number },
): Promise<Authorized | ApiError> {
  if (p.rail === 'bank') throw apiError('IllegalOperation', 'A bank-rail payment has no card.');
  if (p.status !== 'Created') illegal(p, 'authorized on the card network');
  const room = p.amount - p.networkAuthorized;
  const amount = opts.amount ?? room;
  if (amount <= 0) throw apiError('Failed', 'The card is authorized for the whole payment already.', amountPointer);
  const request = (status: string) =>
    q.insertCardAuthorization(tx, {
      id: uuidv7(),
      clientId: p.clientId,
      paymentId: p.id,
      status,
      amount,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
  const decline = async (detail: string) => {
    await request('Declined');
    return apiError('Failed', detail, amountPointer);
  };
  if (amount > room) return decline(`The card can be authorized for at most ${room} more cents.`);
  if (p.giftId) {
    try {
      // A savepoint: a hold the gift cannot cover leaves the transaction usable for the Declined row.
      await tx.transaction((sp) =>
        holdGift(sp, {
          clientId: p.clientId,
          refType: 'payment',
          refId: p.id,
          now: opts.now,
          giftId: p.giftId!,
          amount,
        }),
      );
    } catch (err) {
      if (err instanceof InsufficientFundsError) return decline('The gift does not have that much left.');
      throw err;
    }
  }
  const authorization = await request('Approved');
  const updated = await q.updatePayment(tx, p.id, {
    networkAuthorized: p.networkAuthorized + amount,
    updatedAt: opts.now,
  });
  await emitPayment(tx, 'PaymentUpdated', updated, opts.rc, opts.now);
  return { payment: updated, authorization };
}

/**
 * The network captures (at most what it authorized): the money goes to the card network, the
 * uncaptured rest is released, and the payment is settled: Created → Sent. More than was
 * authorized is a refused capture (recorded, 402). `authorizationRequestId`, when given, must
 * be one of the payment's Approved authorizations; it is recorded on the capture.
 */
export async function networkCapture(
  db: Db,
  opts: Ctx & { paymentId: string; amount?: number; authorizationRequestId?: string },
): Promise<Captured> {
  const ext = await clientAccountIds(db, opts.clientId);
  return recordedDecline(db, async (tx) => {
    const p = await getPayment(tx, { ...opts, forUpdate: true });
    capturable(p);
    if (opts.authorizationRequestId !== undefined) {
      const a = await q.findCardAuthorization(tx, p.id, opts.authorizationRequestId);
      if (a?.status !== 'Approved') {
        throw apiError(
          'ValidationError',
          '`authorizationRequestId` is not an Approved authorization request of this payment.',
          { pointer: '/data/attributes/authorizationRequestId' },
        );
      }
    }
    return captureOnCard(tx, p, { ...opts, authorizationId: opts.authorizationRequestId ?? null, ext });
  });
}

/** A card capture needs a Created card payment with something authorized on the card. */
function capturable(p: q.PaymentRow): void {
  if (p.rail === 'bank') throw apiError('IllegalOperation', 'A bank-rail payment has no card.');
  if (p.status !== 'Created') illegal(p, 'captured on the card network');
  if (p.networkAuthorized === 0) throw apiError('IllegalOperation', 'Nothing has been authorized on the card yet.');
}

/** The network's capture of the locked, capturable payment `p`, in the caller's transaction; a refused capture is returned. */
async function captureOnCard(
  tx: Executor,
  p: q.PaymentRow,
  opts: Ctx & { amount?: number; authorizationId: string | null; ext: Record<ClientCode, string> },
): Promise<Captured | ApiError> {
  const amount = opts.amount ?? p.networkAuthorized;
  const success = amount <= p.networkAuthorized;
  const capture: q.CaptureRow = {
    id: uuidv7(),
    paymentId: p.id,
    amount,
    success,
    method: 'VirtualDebitCard',
    reference: p.reference,
    authorizationId: opts.authorizationId,
    capturedAt: success ? opts.now : null,
    createdAt: opts.now,
    updatedAt: opts.now,
  };
  await q.insertCardCapture(tx, {
    id: capture.id,
    clientId: p.clientId,
    paymentId: p.id,
    authorizationId: capture.authorizationId,
    amount,
    success,
    createdAt: opts.now,
    updatedAt: opts.now,
  });
  if (!success)
    return apiError('Failed', `Only ${p.networkAuthorized} cents were authorized on the card.`, amountPointer);
  let captured: Sourcing;
  if (p.giftId) {
    await captureGift(tx, {
      clientId: p.clientId,
      refType: 'payment',
      refId: p.id,
      now: opts.now,
      giftId: p.giftId,
      captured: amount,
      released: p.networkAuthorized - amount,
      ext: opts.ext,
    });
    captured = { ...NO_SOURCING, gift: amount };
  } else {
    const split = splitCapture(p.sourcing, amount);
    await captureWallet(tx, {
      clientId: p.clientId,
      refType: 'payment',
      refId: p.id,
      now: opts.now,
      walletId: p.walletId!,
      ...split,
      to: 'card_network',
      ext: opts.ext,
    });
    captured = split.captured;
  }
  const updated = await q.updatePayment(tx, p.id, {
    status: 'Sent',
    capturedAmount: amount,
    captured,
    capturedAt: opts.now,
    settledAt: opts.now,
    updatedAt: opts.now,
  });
  await emitPayment(tx, 'PaymentCaptured', updated, opts.rc, opts.now);
  return { payment: updated, capture };
}

/**
 * auth-capture: the network authorizes and captures in one transaction, so the hold and the
 * capture commit together or not at all, and the capture names the authorization. A repeat of
 * the auth-capture that captured the card (the same amount, or none when that one took all
 * that was left) answers its outcome again instead of a decline.
 */
export async function networkAuthorizeCapture(
  db: Db,
  opts: Ctx & { paymentId: string; amount?: number },
): Promise<Authorized & Captured> {
  const ext = await clientAccountIds(db, opts.clientId);
  return recordedDecline(db, async (tx) => {
    const p = await getPayment(tx, { ...opts, forUpdate: true });
    if (p.status !== 'Created') {
      const done = await authCaptureOf(tx, p, opts.amount);
      if (done) return done;
    }
    const auth = await authorizeOnCard(tx, p, opts);
    if (auth instanceof ApiError) return auth;
    const cap = await captureOnCard(tx, auth.payment, { ...opts, authorizationId: auth.authorization.id, ext });
    // It captures what was just authorized, so it is never refused; thrown, it undoes the authorization too.
    if (cap instanceof ApiError) throw cap;
    return { payment: cap.payment, authorization: auth.authorization, capture: cap.capture };
  });
}

/** The outcome of the auth-capture that captured `p`'s card, if `amount` asks for that one again. */
async function authCaptureOf(
  tx: Executor,
  p: q.PaymentRow,
  amount: number | undefined,
): Promise<(Authorized & Captured) | undefined> {
  if (p.rail === 'bank' || p.capturedAt === null) return undefined;
  const [capture] = (await q.captureRows(tx, p.clientId, [p.id], { success: true })).rows;
  if (!capture?.authorizationId) return undefined;
  const authorization = await q.findCardAuthorization(tx, p.id, capture.authorizationId);
  // An auth-capture writes both at one instant; a capture naming an earlier authorization is another request's.
  if (authorization?.createdAt.getTime() !== capture.createdAt.getTime()) return undefined;
  const same = amount === undefined ? p.networkAuthorized === p.amount : amount === authorization.amount;
  return same ? { payment: p, authorization, capture } : undefined;
}

/** GET /simulation/{paymentId}/card/auth: the payment's card authorizations, newest first. */
export async function listCardAuthorizations(db: Executor, opts: { clientId: string; paymentId: string; page: Page }) {
  const payment = await getPayment(db, opts);
  return { payment, ...(await q.listCardAuthorizations(db, opts.clientId, payment.id, opts.page)) };
}

/** GET /simulation/{paymentId}/card/capture: the payment's captures (card network or bank). */
export async function listCaptures(
  db: Executor,
  opts: {
    clientId: string;
    paymentId: string;
    method?: string;
    success?: boolean;
    sort: SortKey<(typeof q.CAPTURE_SORT_FIELDS)[number]>[];
    page: Page;
  },
) {
  const payment = await getPayment(db, opts);
  return { payment, ...(await q.captureRows(db, opts.clientId, [payment.id], opts)) };
}

// ----- Accrue's payment operations: update, increase-authorization, complete -----------------

/** Locks a payment for a change, in the one order: its intent first, then the payment. */
async function lockForChange(
  tx: Executor,
  opts: { clientId: string; paymentId: string },
): Promise<{ payment: q.PaymentRow; intent: IntentRow | undefined }> {
  const seen = await getPayment(tx, opts);
  const intent = seen.intentId ? await lockIntent(tx, opts.clientId, seen.intentId) : undefined;
  return { payment: await getPayment(tx, { ...opts, forUpdate: true }), intent };
}

/** PATCH /payments/{id}: the merchant's `reference`, in any status. PaymentUpdated when it changes. */
export async function updatePaymentReference(
  db: Db,
  opts: Ctx & { paymentId: string; bodyId?: string; reference: string | null },
): Promise<q.PaymentRow> {
  return db.transaction(async (tx) => {
    const { payment } = await lockForChange(tx, opts);
    checkBodyId(opts.bodyId, payment.id);
    if (payment.reference === opts.reference) return payment;
    const updated = await q.updatePayment(tx, payment.id, { reference: opts.reference, updatedAt: opts.now });
    await emitPayment(tx, 'PaymentUpdated', updated, opts.rc, opts.now);
    return updated;
  });
}

/**
 * The wallet accounts a reservation may move money between (not the pending ones): an increase
 * locks them all, since which buckets it reserves from depends on the balances it reads under
 * the lock. A capture or release locks only those it moves (movedWalletAccounts).
 */
const MOVED_WALLET_CODES = WALLET_CODES.filter((c) => !c.endsWith('.pending'));

/**
 * PATCH /payments/{id}/increase-authorization: a Created wallet payment (bank or card rails)
 * reserves `increase` more cents from the wallet, in the spending order (rewards count against
 * the new total for the reward minimum). The wallet alone pays for it: when it cannot, 402 and
 * nothing changes. The card network may then authorize the new amount. PaymentUpdated.
 */
export async function increaseAuthorization(
  tx: Executor,
  opts: Ctx & { paymentId: string; increase: number; settings: ClientSettings },
): Promise<ChangedPayment> {
  const { payment: p, intent } = await lockForChange(tx, opts);
  if (p.status !== 'Created') illegal(p, 'increased', 402);
  refuseOverMaxAmount(p.amount + opts.increase, opts.settings, '/data/attributes/increase', 'increased amount');
  if (!p.walletId)
    throw apiError(
      'IllegalOperation',
      'A gift payment is held on the gift by the card network; its authorization cannot be increased.',
      { status: 402 },
    );
  const wallet = (await findWallet(tx, opts.clientId, p.walletId))!;
  if (wallet.status !== 'Active') throw apiError('WalletClosed', undefined, { status: 402 });
  const user = (await findUser(tx, opts.clientId, wallet.userId))!;
  if (user.kycStatus !== 'Approved')
    throw apiError('InvalidKycStatus', `The user's KYC status is ${user.kycStatus}; payments need Approved.`, {
      status: 402,
    });
  const ids = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: wallet.id });
  const held = MOVED_WALLET_CODES.map((c) => ids[c]).sort();
  await lockAccounts(tx, held);
  const plan = planWalletSourcing(await walletBuckets(tx, wallet.id), opts.increase, {
    applyWalletBalance: true,
    rewardMinimumPurchase: opts.settings.rewardMinimumPurchase,
    purchaseAmount: p.amount + opts.increase,
  });
  if (plan.linked > 0) {
    throw apiError(
      'Failed',
      `The wallet can cover ${opts.increase - plan.linked} of the ${opts.increase} cents; the authorization is unchanged.`,
      { pointer: '/data/attributes/increase' },
    );
  }
  await reserveWallet(tx, {
    clientId: opts.clientId,
    refType: 'payment',
    refId: p.id,
    now: opts.now,
    walletId: wallet.id,
    sourcing: plan,
    locked: new Set(held),
  });
  const updated = await q.updatePayment(tx, p.id, {
    amount: p.amount + opts.increase,
    sourcing: addSourcing(p.sourcing, plan),
    updatedAt: opts.now,
  });
  await emitPayment(tx, 'PaymentUpdated', updated, opts.rc, opts.now);
  return { payment: updated, intent, paymentIds: intent ? await q.paymentIdsOfIntent(tx, intent.id) : [] };
}

/**
 * POST /payments/{id}/complete (card rails and gifts): in Coffer the card network's capture
 * completes the payment (the uncaptured rest is released then), so a Sent or Returned payment
 * is complete already and is returned as it is. A Created one has nothing captured: 402.
 */
export async function completePayment(
  db: Executor,
  opts: { clientId: string; paymentId: string },
): Promise<q.PaymentRow> {
  const p = await getPayment(db, opts);
  if (p.rail === 'bank')
    throw apiError(
      'IllegalOperation',
      'Only card-rail and gift payments are completed; a bank-rail payment is captured with /capture.',
      { status: 402 },
    );
  if (p.status === 'Sent' || p.status === 'Returned') return p;
  if (p.status !== 'Created') illegal(p, 'completed', 402);
  throw apiError(
    'Failed',
    'Nothing has been captured on the card: capture it through the card network first, or cancel the payment.',
  );
}

/** Reads for `include`: refunds of these payments. */
export async function refundsByPayment(db: Executor, paymentIds: string[]): Promise<Map<string, q.RefundRow[]>> {
  const out = new Map<string, q.RefundRow[]>();
  for (const r of await q.refundsOf(db, paymentIds)) out.set(r.paymentId, [...(out.get(r.paymentId) ?? []), r]);
  return out;
}
