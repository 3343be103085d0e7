// Authorizing a payment intent (spec "Authorize rules", docs/adr/0004-idempotency-in-the-database.md, docs/payments.md#payments-in-detail).
//
// When nothing outside has to be asked, everything happens in one transaction: the intent is
// locked (NOWAIT: a concurrent authorize of the same intent gets 409 AlreadyExists instead of
// queueing), checked, the wallet money reserved in the spending order, the payment created,
// the response stored under the idempotency key.
//
// The outside world is asked when the merchant's card processor is enabled (it answers inline
// and slowly) or when the payment needs a virtual card from the card issuer (rails `card`).
// Neither call may run inside a database transaction, and neither may happen twice:
//   1. transaction: the same checks and the reservation, plus an authorization attempt row
//      (its id is the outside calls' idempotency reference) with a lease; commit;
//   2. the processor is called, then the issuer;
//   3. transaction: the answer is recorded: a Created payment (with its card), or a Failed one
//      and the reservation released (402); the response is stored under the key.
// While the attempt is open, other authorizes of the intent get 409 (IdempotencyKeyInUse for
// its own key, AlreadyExists otherwise), in any process. If the process dies between 1 and 3,
// the lease runs out and the attempt is taken over (by a retry or the recovery job), which
// asks again with the same reference: the processor answers with its first answer and the
// issuer returns the same card, so nothing is ever charged twice and the reservation is never
// lost.
import { uuidv7 } from '../../ids.ts';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { WriteBatch } from '../../db/batch.ts';
import type { Db, Tx } from '../../db/open.ts';
import type { Sourcing } from '../../db/schema.ts';
import { refusedByLedger } from '../../ledger/post.ts';
import { apiError } from '../../http/errors.ts';
import { renderErrorDocument } from '../../http/error-handler.ts';
import {
  checkKey,
  fingerprintOf,
  RETENTION_MS,
  runPreflight,
  storeOutcomePart,
  type IdempotencyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import { JSONAPI } from '../../http/schemas.ts';
import { countMovement } from '../../observability/metrics.ts';
import { clientAccountIds, type ClientCode } from '../../ledger/accounts.ts';
import type { CardIssuer, IssuedCard } from '../../providers/card-issuing.ts';
import type { CardProcessor, ProcessorAnswer } from '../../providers/card-processor.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { ClientSettings } from '../clients/settings.ts';
import { AUTHORIZATION_LIFETIME_MS, captureBankPayment, emitIntent, emitPayment } from '../payments/domain.ts';
import { NO_SOURCING, planWalletSourcing, releaseWallet, reserveWallet } from '../payments/money.ts';
import { paymentResource, renderContext, type RenderContext } from '../payments/render.ts';
import type { AppContext } from '../../context.ts';
import * as payments from '../payments/sql.ts';
import { rememberPaymentWallet } from '../payments/wallet-hints.ts';
import { effectiveStatus, intentResource } from './render.ts';
import type { Buckets } from '../wallets/balance.ts';
import * as q from './sql.ts';
import { isLockNotAvailable } from './sql.ts';

export interface AuthorizeInput {
  clientId: string;
  settings: ClientSettings;
  intentId: string;
  amount: number;
  applyWalletBalance: boolean;
  idempotencyKey?: string;
  reference?: string;
  channel?: string;
  risk?: { deviceSessionId?: string };
  processorMeta?: Record<string, unknown>;
}

export interface AuthorizeDeps {
  db: Db;
  rc: RenderContext;
  now: () => Date;
  environment: 'sandbox' | 'live';
  processor: CardProcessor;
  issuer: CardIssuer;
  sealer: Sealer;
  log: FastifyBaseLogger;
  /** The request's id, the `id` of the errors it renders (absent in recovery). */
  requestId?: string;
  /** Lease past the processor's latency before an open attempt is presumed dead. */
  leaseMarginMs: number;
}

export function authorizeDeps(ctx: AppContext): AuthorizeDeps {
  return {
    db: ctx.db,
    rc: renderContext(ctx),
    now: () => ctx.clock.now(),
    environment: ctx.config.environment,
    processor: ctx.providers.cardProcessor,
    issuer: ctx.providers.cardIssuer,
    sealer: ctx.sealer,
    log: ctx.log,
    leaseMarginMs: ctx.config.authorizationLeaseMarginMs,
  };
}

/** What the processor attempt carries between its transactions. */
export interface AttemptRequest {
  amount: number;
  channel: string | null;
  reference: string | null;
  processorMeta: Record<string, unknown> | null;
  linkedAccountId: string | null;
  rail: 'bank' | 'card' | 'gift';
  captureMode: 'automatic' | 'manual';
  /** Whether the processor is asked (absent on attempts recorded before cards used attempts). */
  processor?: boolean;
  /** The processor's latency: the lease covers it. */
  latencyMs: number;
}

/** The attributes an authorize key promises (docs/adr/0004-idempotency-in-the-database.md). */
function authorizeFingerprint(i: AuthorizeInput): string {
  return fingerprintOf([
    i.intentId,
    {
      amount: i.amount,
      applyWalletBalance: i.applyWalletBalance,
      reference: i.reference,
      channel: i.channel,
      deviceSessionId: i.risk?.deviceSessionId,
      processor: i.processorMeta,
    },
  ]);
}

type Phase1 =
  | { kind: 'replay'; outcome: StoredOutcome }
  | { kind: 'done'; outcome: StoredOutcome }
  | { kind: 'call'; attempt: payments.AttemptRow };

/** Serializes a response body with the route's schema for its status. */
export type Serialize = (status: number, doc: unknown) => string;

export const serializerOf =
  (reply: FastifyReply): Serialize =>
  (status, doc) =>
    (reply.getSerializationFunction(String(status), JSONAPI) ?? JSON.stringify)(doc);

export function scopeOfInput(i: AuthorizeInput): IdempotencyScope | undefined {
  return i.idempotencyKey
    ? { clientId: i.clientId, operation: 'authorize', key: i.idempotencyKey, fingerprint: authorizeFingerprint(i) }
    : undefined;
}

/** Whether authorizing asks the outside world (the card processor, the card issuer). */
export const asksOutside = (settings: ClientSettings) => settings.cardProcessor.enabled || settings.rails === 'card';

/**
 * Runs an authorize request to its response (status and the exact body), in a transaction of
 * its own. Most authorizes run in groups instead (authorize-groups.ts); this is the path for
 * those that ask the outside world and for what a group hands back.
 */
export async function authorize(deps: AuthorizeDeps, serialize: Serialize, i: AuthorizeInput): Promise<StoredOutcome> {
  const ext = await clientAccountIds(deps.db, i.clientId);
  const scope = scopeOfInput(i);

  // With nothing to ask outside this is five round trips: BEGIN; the key check with the intent's
  // lock; the rest of what it decides on (the wallet's accounts locked); one batch of writes; COMMIT.
  const phase1 = await deps.db.transaction(async (tx): Promise<Phase1> => {
    const now = deps.now();
    const intent = await lockIntent(tx, scope, i, now);
    if (intent.kind === 'replay') return intent;
    const status = effectiveStatus(intent.row, now);
    const authorizable = isAuthorizable(status);
    const c = await q.authorizeContext(tx, {
      clientId: i.clientId,
      intent: intent.row,
      lockWallet: authorizable && i.applyWalletBalance,
    });

    if (status === 'PromotedToPayment')
      return { kind: 'done', outcome: alreadyAuthorized(intent.row, c, deps.rc, now, serialize) };
    refuseUnauthorizable(status);
    if (c.openAttempt) {
      const open = payments.attemptFromJson(c.openAttempt);
      if (open.leaseUntil && open.leaseUntil > now) {
        if (scope && open.idempotencyKey === scope.key) {
          if (open.fingerprint !== scope.fingerprint)
            throw apiError('IdempotencyKeyReused', undefined, { pointer: '/data/attributes/idempotencyKey' });
          throw apiError(
            'IdempotencyKeyInUse',
            'This authorization is still waiting on the card processor or issuer; retry the same request.',
            { headers: { 'retry-after': '1' } },
          );
        }
        throw apiError(
          'AlreadyExists',
          'An authorization of this payment intent is still waiting on the card processor or issuer; retry the same request.',
          {
            headers: { 'retry-after': '1' },
          },
        );
      }
      // Its process died or an outside call failed: take it over and finish it with the same reference.
      const latency = (open.request as unknown as AttemptRequest).latencyMs;
      await payments.updateAttempt(tx, open.id, {
        leaseUntil: new Date(now.getTime() + latency + deps.leaseMarginMs),
        updatedAt: now,
      });
      return { kind: 'call', attempt: open };
    }

    refuseOverAmount(intent.row, i);
    const batch = new WriteBatch();
    const plan = planSourcing(intent.row, c, i);
    if (plan.kind === 'requires-action') {
      // The user must link an account: recorded on the intent, which now requires action (402).
      const updated: q.IntentRow = {
        ...intent.row,
        status: 'RequiresAction',
        error: 'LinkedAccountMissing',
        updatedAt: now,
      };
      batch.add(q.updateIntentPart(updated.id, { status: updated.status, error: updated.error, updatedAt: now }));
      await emitIntent(tx, 'PaymentIntentUpdated', updated, deps.rc, now, { batch, paymentIds: c.paymentIds });
      await batch.flush(tx);
      const doc = renderErrorDocument(
        apiError('Failed', plan.detail, { status: 402 }).items,
        `/api/v1/payment-intents/${intent.row.id}/authorize`,
        { environment: deps.environment, now: () => now, requestId: deps.requestId },
      );
      return { kind: 'done', outcome: { status: 402, body: doc, replayed: false, requiresAction: true } };
    }
    const { sourcing } = plan;
    const { attemptId, request, locked } = await reserve(tx, { i, intent: intent.row, c, plan, now, batch });
    if (!request.processor && request.rail !== 'card') {
      const { outcome } = await approve(tx, {
        intent: intent.row,
        paymentIds: c.paymentIds,
        attemptId,
        request,
        sourcing,
        answer: undefined,
        scope,
        deps,
        ext,
        now,
        serialize,
        batch,
        locked,
      });
      await flushMoney(tx, batch);
      return { kind: 'done', outcome };
    }
    const attempt: payments.AttemptRow = {
      id: attemptId,
      clientId: i.clientId,
      intentId: intent.row.id,
      idempotencyKey: scope?.key ?? null,
      fingerprint: scope?.fingerprint ?? authorizeFingerprint(i),
      state: 'processing',
      leaseUntil: new Date(now.getTime() + request.latencyMs + deps.leaseMarginMs),
      amount: i.amount,
      request: request as unknown as Record<string, unknown>,
      sourcing,
      paymentId: null,
      createdAt: now,
      updatedAt: now,
    };
    batch.add(payments.insertAttemptPart(attempt));
    await flushMoney(tx, batch);
    return { kind: 'call', attempt };
  });

  if (phase1.kind !== 'call') return phase1.outcome;
  return finishAttempt(deps, phase1.attempt, scope, serialize, ext);
}

/** 409: another authorize of the intent holds its lock. */
export const alreadyRunning = () =>
  apiError('AlreadyExists', 'Another authorization of this payment intent is running; retry the same request.', {
    headers: { 'retry-after': '1' },
  });

/** Already authorized: the active payment, without authorizing again (spec rule 1). */
export function alreadyAuthorized(
  intent: q.IntentRow,
  c: q.AuthorizeContext,
  rc: RenderContext,
  now: Date,
  serialize: Serialize,
): StoredOutcome {
  const payment = payments.paymentFromJson(c.activePayment!);
  return {
    status: 201,
    body: serialize(201, successDocument(intent, c.paymentIds, payment, rc, now)),
    replayed: false,
  };
}

/** Only a Promotable or RequiresAction intent can be authorized. */
const isAuthorizable = (status: string) => status === 'Promotable' || status === 'RequiresAction';

/**
 * Any other is 402, the one failure status Accrue declares for authorize besides 403: the
 * authorization fails. The code says why (`PaymentIntentExpired`, `IllegalOperation`).
 */
export function refuseUnauthorizable(status: string): void {
  if (status === 'Expired') throw apiError('PaymentIntentExpired', undefined, { status: 402 });
  if (!isAuthorizable(status))
    throw apiError('IllegalOperation', `A ${status} payment intent cannot be authorized.`, { status: 402 });
}

/**
 * The intent, locked without waiting (a concurrent authorize of it holds the lock: 409
 * AlreadyExists), read in the same statement as the idempotency key's check when there is one.
 */
async function lockIntent(
  tx: Tx,
  scope: IdempotencyScope | undefined,
  i: AuthorizeInput,
  now: Date,
): Promise<{ kind: 'replay'; outcome: StoredOutcome } | { kind: 'row'; row: q.IntentRow }> {
  const preflight = q.lockIntentPreflight(i.clientId, i.intentId);
  let raw: Record<string, unknown> | undefined;
  try {
    if (scope) {
      const checked = await checkKey(tx, scope, now, preflight);
      if (checked.state.kind === 'replay') return { kind: 'replay', outcome: checked.state.outcome };
      raw = checked.preflight;
    } else {
      raw = await runPreflight(tx, preflight);
    }
  } catch (err) {
    if (isLockNotAvailable(err)) throw alreadyRunning();
    throw err;
  }
  const row = raw?.intent_row as Record<string, unknown> | null | undefined;
  if (!row) throw apiError('PaymentIntentNotFound', `No payment intent ${i.intentId}.`);
  return { kind: 'row', row: q.intentFromJson(row) };
}

/**
 * The batch holds debits planned from locked balances; a failed no-negative check there is still
 * a 402, never a 500, and the reservation counts as refused for insufficient funds. (A group's
 * write fails the group instead, whose members then run alone, each through here.)
 */
async function flushMoney(tx: Tx, batch: WriteBatch): Promise<void> {
  try {
    await batch.flush(tx);
  } catch (err) {
    if (refusedByLedger(err)) {
      countMovement('payment.reserve', 'insufficient_funds');
      throw apiError('Failed', 'The wallet balance changed; the amount is no longer available.', { status: 402 });
    }
    throw err;
  }
}

/** Over the intent's amount: 402. */
export function refuseOverAmount(intent: q.IntentRow, i: AuthorizeInput): void {
  if (i.amount > intent.amount)
    throw apiError('Failed', `\`amount\` is more than the intent's ${intent.amount} cents.`, {
      status: 402,
      pointer: '/data/attributes/amount',
    });
}

/**
 * The wallet money of a plan reserved (into the batch) under a new attempt id, and what the
 * processor attempt or the approval needs to know. The wallet's accounts are held locked.
 */
export async function reserve(
  tx: Tx,
  r: {
    i: AuthorizeInput;
    intent: q.IntentRow;
    c: q.AuthorizeContext;
    plan: Plan & { kind: 'ok' };
    now: Date;
    batch: WriteBatch;
  },
): Promise<{ attemptId: string; request: AttemptRequest; locked: ReadonlySet<string> }> {
  const { i, intent, plan } = r;
  const attemptId = uuidv7();
  const locked = new Set((r.c.walletAccounts ?? []).map(([id]) => id));
  if (intent.walletId)
    await reserveWallet(tx, {
      clientId: i.clientId,
      refType: 'attempt',
      refId: attemptId,
      now: r.now,
      walletId: intent.walletId,
      sourcing: plan.sourcing,
      batch: r.batch,
      locked,
    });
  const request: AttemptRequest = {
    amount: i.amount,
    channel: i.channel ?? null,
    reference: i.reference ?? intent.reference ?? null,
    processorMeta: i.processorMeta ?? null,
    linkedAccountId: plan.linkedAccountId,
    rail: intent.giftId ? 'gift' : i.settings.rails,
    captureMode: i.settings.captureMode,
    processor: i.settings.cardProcessor.enabled,
    latencyMs: i.settings.cardProcessor.enabled ? i.settings.cardProcessor.latencyMs : 0,
  };
  return { attemptId, request, locked };
}

export type Plan =
  | { kind: 'ok'; sourcing: Sourcing; linkedAccountId: string | null }
  | { kind: 'requires-action'; detail: string };

/** Where the money comes from, with the limits of docs/payments.md#payments-in-detail, from the locked balances. */
export function planSourcing(intent: q.IntentRow, c: q.AuthorizeContext, i: AuthorizeInput): Plan {
  if (intent.giftId) {
    // Gift intents skip KYC; authorize does not touch the gift (its card is spent later).
    const left = c.giftAvailable ?? 0;
    if (i.amount > left)
      throw apiError('Failed', `The gift has ${left} cents left.`, { status: 402, pointer: '/data/attributes/amount' });
    return { kind: 'ok', sourcing: { ...NO_SOURCING, gift: i.amount }, linkedAccountId: null };
  }
  if (c.walletStatus !== 'Active') throw apiError('WalletClosed');
  if (c.kycStatus !== 'Approved')
    throw apiError('InvalidKycStatus', `The user's KYC status is ${c.kycStatus}; payments need Approved.`);
  const buckets = Object.fromEntries((c.walletAccounts ?? []).map(([, code, balance]) => [code, balance])) as Buckets;
  const sourcing = planWalletSourcing(buckets, i.amount, {
    applyWalletBalance: i.applyWalletBalance,
    rewardMinimumPurchase: i.settings.rewardMinimumPurchase,
  });
  if (sourcing.linked === 0) return { kind: 'ok', sourcing, linkedAccountId: null };
  if (!c.linkedAccountId) {
    return {
      kind: 'requires-action',
      detail: `The wallet covers ${i.amount - sourcing.linked} of ${i.amount} cents and the user has no connected linked account for the rest (intent error LinkedAccountMissing).`,
    };
  }
  if (sourcing.linked > i.settings.bankFundingLimit) {
    throw apiError(
      'Failed',
      `\`amount\` is more than the intent's upper limit (the wallet's ${i.amount - sourcing.linked} cents plus ${i.settings.bankFundingLimit} from the bank).`,
      {
        status: 402,
        pointer: '/data/attributes/amount',
      },
    );
  }
  return { kind: 'ok', sourcing, linkedAccountId: c.linkedAccountId };
}

export interface Decision {
  intent: q.IntentRow;
  /** The intent's payments so far, oldest first. */
  paymentIds: string[];
  attemptId: string;
  request: AttemptRequest;
  sourcing: Sourcing;
  answer: ProcessorAnswer | undefined;
  /** The virtual card the issuer gave this attempt (rails `card`). */
  card?: IssuedCard;
  scope: IdempotencyScope | undefined;
  deps: AuthorizeDeps;
  ext: Record<ClientCode, string>;
  now: Date;
  serialize: Serialize;
  batch: WriteBatch;
  /** Ledger accounts held locked (the wallet's, read with their balances). */
  locked?: ReadonlySet<string>;
}

type Decided = { outcome: StoredOutcome; payment: payments.PaymentRow };

/** The payment an authorization decision creates; what differs between outcomes is given. */
function newPaymentRow(
  d: Decision,
  outcome: Pick<payments.PaymentRow, 'status' | 'sourcing' | 'processor' | 'failureReason' | 'expiresAt'>,
): payments.PaymentRow {
  const { intent, request, now } = d;
  return {
    id: uuidv7(),
    clientId: intent.clientId,
    intentId: intent.id,
    walletId: intent.walletId,
    giftId: intent.giftId,
    userId: intent.userId,
    rail: request.rail,
    amount: request.amount,
    capturedAmount: 0,
    refundedAmount: 0,
    channel: request.channel,
    reference: request.reference,
    linkedAccountId: request.linkedAccountId,
    captured: null,
    externalPayments: [],
    disbursement: [],
    networkAuthorized: 0,
    settleAfter: null,
    createdAt: now,
    updatedAt: now,
    capturedAt: null,
    settledAt: null,
    canceledAt: null,
    ...outcome,
  };
}

/** Approved: a Created payment (captured at once when the merchant captures automatically). */
export async function approve(tx: Tx, d: Decision): Promise<Decided> {
  const { intent, request, now, batch } = d;
  let payment = newPaymentRow(d, {
    status: 'Created',
    sourcing: d.sourcing,
    processor: d.answer
      ? { request: request.processorMeta, response: d.answer.data }
      : request.processorMeta
        ? { request: request.processorMeta }
        : null,
    failureReason: null,
    expiresAt: new Date(now.getTime() + AUTHORIZATION_LIFETIME_MS),
  });
  batch.add(payments.insertPaymentPart(payment));
  rememberPaymentWallet(payment.id, payment.walletId);
  if (request.rail === 'card') {
    const card = d.card!;
    const cardId = uuidv7();
    batch.add(
      payments.insertCardPart({
        id: cardId,
        clientId: intent.clientId,
        paymentId: payment.id,
        giftId: null,
        numberSealed: d.deps.sealer.seal(card.number, 'card', `virtual_cards:${cardId}:number`),
        cvcSealed: d.deps.sealer.seal(card.cvc, 'card', `virtual_cards:${cardId}:cvc`),
        last4: card.number.slice(-4),
        expirationMonth: card.expirationMonth,
        expirationYear: card.expirationYear,
        createdAt: now,
      }),
    );
  }
  const paymentIds = [...d.paymentIds, payment.id];
  const promoted: q.IntentRow = { ...intent, status: 'PromotedToPayment', error: null, updatedAt: now };
  batch.add(q.updateIntentPart(intent.id, { status: promoted.status, error: null, updatedAt: now }));
  await emitPayment(tx, 'PaymentCreated', payment, d.deps.rc, now, batch);
  if (request.rail === 'bank' && request.captureMode === 'automatic') {
    payment = await captureBankPayment(tx, payment, payment.amount, {
      clientId: intent.clientId,
      rc: d.deps.rc,
      now,
      ext: d.ext,
      batch,
      locked: d.locked,
    });
  }
  await emitIntent(tx, 'PaymentIntentUpdated', promoted, d.deps.rc, now, { batch, paymentIds });
  const body = d.serialize(201, successDocument(promoted, paymentIds, payment, d.deps.rc, now));
  // Authorize keys live as long as the authorization (docs/adr/0004-idempotency-in-the-database.md).
  if (d.scope) batch.add(storeOutcomePart(d.scope, 201, body, now, payment.expiresAt));
  return { outcome: { status: 201, body, replayed: false }, payment };
}

/** Declined by the processor: the payment is Failed, the reservation released, 402. */
async function decline(tx: Tx, d: Decision): Promise<Decided> {
  const { intent, request, now, batch } = d;
  if (intent.walletId) {
    await releaseWallet(tx, {
      clientId: intent.clientId,
      refType: 'attempt',
      refId: d.attemptId,
      now,
      walletId: intent.walletId,
      sourcing: d.sourcing,
      batch,
    });
  }
  const payment = newPaymentRow(d, {
    status: 'Failed',
    sourcing: NO_SOURCING,
    processor: { request: request.processorMeta, response: d.answer!.data },
    failureReason: `The card processor declined: ${d.answer!.code}.`,
    expiresAt: now,
  });
  batch.add(payments.insertPaymentPart(payment));
  await emitPayment(tx, 'PaymentCreated', payment, d.deps.rc, now, batch);
  const body = renderErrorDocument(
    apiError(
      'Failed',
      `The card processor declined the authorization (${d.answer!.code}); the payment is Failed and the intent can be authorized again.`,
      {
        status: 402,
        meta: { paymentId: payment.id },
      },
    ).items,
    `/api/v1/payment-intents/${intent.id}/authorize`,
    { environment: d.deps.environment, now: () => now, requestId: d.deps.requestId },
  );
  if (d.scope) batch.add(storeOutcomePart(d.scope, 402, body, now, new Date(now.getTime() + RETENTION_MS)));
  return { outcome: { status: 402, body, replayed: false }, payment };
}

/**
 * Steps 2 and 3 for an open attempt: the processor call (outside any transaction) and the
 * recording of its answer. Also used by the recovery job for attempts whose process died.
 */
async function finishAttempt(
  deps: AuthorizeDeps,
  attempt: payments.AttemptRow,
  scope: IdempotencyScope | undefined,
  serialize: Serialize,
  ext?: Record<ClientCode, string>,
): Promise<StoredOutcome> {
  const request = attempt.request as unknown as AttemptRequest;
  let answer: ProcessorAnswer | undefined;
  let card: IssuedCard | undefined;
  try {
    if (request.processor !== false) {
      answer = await deps.processor.authorize({
        reference: attempt.id,
        clientId: attempt.clientId,
        amount: attempt.amount,
        latencyMs: request.latencyMs,
        meta: request.processorMeta ?? undefined,
      });
    }
    // The single-use card for exactly the authorized amount; the same card for the same reference.
    if (request.rail === 'card' && answer?.approved !== false)
      card = await deps.issuer.issue({ reference: attempt.id, amount: attempt.amount, now: deps.now() });
  } catch (err) {
    // Unknown what happened outside: the attempt stays open and is finished on retry or recovery.
    deps.log.warn(
      { err, attemptId: attempt.id },
      'the card processor or issuer did not answer; the authorization will be retried',
    );
    throw apiError('ServiceUnavailable', 'The card processor or issuer did not answer; retry the same request.', {
      headers: { 'retry-after': '2' },
    });
  }
  const approved = answer?.approved ?? true;
  const accounts = ext ?? (await clientAccountIds(deps.db, attempt.clientId));
  return deps.db.transaction(async (tx) => {
    const now = deps.now();
    // Intent first, then the attempt: the order authorize takes them in.
    const intent = (await q.lockIntent(tx, attempt.clientId, attempt.intentId))!;
    const current = await payments.findAttempt(tx, attempt.id, { forUpdate: true });
    if (current?.state !== 'processing') {
      // Another process finished it first: answer as it did.
      return recordedOutcome(tx, current!, deps, serialize, now);
    }
    const paymentIds = await payments.paymentIdsOfIntent(tx, intent.id);
    const batch = new WriteBatch();
    const d: Decision = {
      intent,
      paymentIds,
      attemptId: attempt.id,
      request,
      sourcing: attempt.sourcing,
      answer,
      card,
      scope: scopeOf(attempt, scope),
      deps,
      ext: accounts,
      now,
      serialize,
      batch,
    };
    const { outcome, payment } = approved ? await approve(tx, d) : await decline(tx, d);
    batch.add(
      payments.updateAttemptPart(attempt.id, {
        state: approved ? 'succeeded' : 'declined',
        leaseUntil: null,
        paymentId: approved ? payment.id : null,
        updatedAt: now,
      }),
    );
    await batch.flush(tx);
    return outcome;
  });
}

/** The key an attempt was made under (recovery has no request of its own). */
function scopeOf(attempt: payments.AttemptRow, scope: IdempotencyScope | undefined): IdempotencyScope | undefined {
  if (scope) return scope;
  if (!attempt.idempotencyKey) return undefined;
  return {
    clientId: attempt.clientId,
    operation: 'authorize',
    key: attempt.idempotencyKey,
    fingerprint: attempt.fingerprint,
  };
}

async function recordedOutcome(
  tx: Tx,
  attempt: payments.AttemptRow,
  deps: AuthorizeDeps,
  serialize: Serialize,
  now: Date,
): Promise<StoredOutcome> {
  const intent = (await q.findIntent(tx, attempt.clientId, attempt.intentId))!;
  if (attempt.state === 'succeeded') {
    const payment = (await payments.findPayment(tx, attempt.clientId, attempt.paymentId!))!;
    const doc = successDocument(intent, await payments.paymentIdsOfIntent(tx, intent.id), payment, deps.rc, now);
    return { status: 201, body: serialize(201, doc), replayed: true };
  }
  return {
    status: 402,
    body: renderErrorDocument(
      apiError('Failed', 'The card processor declined the authorization.', { status: 402 }).items,
      `/api/v1/payment-intents/${intent.id}/authorize`,
      { environment: deps.environment, now: () => now, requestId: deps.requestId },
    ),
    replayed: true,
  };
}

/** 201/200 body: the intent in data, the payment (with the processor's data) in included. */
function successDocument(
  intent: q.IntentRow,
  paymentIds: string[],
  payment: payments.PaymentRow,
  rc: RenderContext,
  now: Date,
) {
  return {
    data: intentResource(intent, paymentIds, rc.baseUrl, now),
    included: [paymentResource(payment, rc, { withProcessor: true })],
  };
}

/** Job: attempts whose process died are finished (same processor reference, no new charge). */
export async function recoverAttempts(deps: AuthorizeDeps): Promise<number> {
  const now = deps.now();
  const orphaned = await payments.claimOrphanedAttempts(
    deps.db,
    now,
    new Date(now.getTime() + 60_000 + deps.leaseMarginMs),
    20,
  );
  let done = 0;
  for (const attempt of orphaned) {
    await finishAttempt(deps, attempt, undefined, (_s, doc) => JSON.stringify(doc)).then(
      () => done++,
      (err) => deps.log.warn({ err, attemptId: attempt.id }, 'authorization recovery will be retried'),
    );
  }
  return done;
}
