// Authorizing a payment intent (spec "Authorize rules", decisions §4, §8).
//
// Without a card processor, everything happens in one transaction: the intent is locked
// (NOWAIT: a concurrent authorize of the same intent gets 409 AlreadyExists instead of
// queueing), checked, the wallet money reserved in the spending order, the payment created,
// the response stored under the idempotency key.
//
// With the merchant's card processor enabled, the processor answers inline and slowly, and
// must be called outside any transaction:
//   1. transaction: the same checks and the reservation, plus an authorization attempt row
//      (its id is the processor's idempotency reference) with a lease; commit;
//   2. the processor is called;
//   3. transaction: the answer is recorded: a Created payment, or a Failed one and the
//      reservation released (402); the response is stored under the key.
// While the attempt is open, other authorizes of the intent get 409 (IdempotencyKeyInUse for
// its own key, AlreadyExists otherwise), in any process. If the process dies between 1 and 3,
// the lease runs out and the attempt is taken over (by a retry or the recovery job), which
// calls the processor again with the same reference: the processor answers with its first
// answer, so nothing is ever charged twice and the reservation is never lost.
import { uuidv7 } from 'uuidv7';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { WriteBatch } from '../../db/batch.ts';
import type { Db, Tx } from '../../db/open.ts';
import type { Sourcing } from '../../db/schema.ts';
import { apiError } from '../../http/errors.ts';
import { renderErrorDocument } from '../../http/error-handler.ts';
import { checkKey, fingerprintOf, RETENTION_MS, storeOutcomePart, type IdempotencyScope, type StoredOutcome } from '../../http/idempotency.ts';
import { JSONAPI } from '../../http/schemas.ts';
import { clientAccountIds, type ClientCode } from '../../ledger/accounts.ts';
import { InsufficientFundsError } from '../../ledger/post.ts';
import type { CardIssuer } from '../../providers/card-issuing.ts';
import type { CardProcessor, ProcessorAnswer } from '../../providers/card-processor.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { ClientSettings } from '../clients/settings.ts';
import { giftAvailable } from '../gifts/routes.ts';
import { connectedAccounts } from '../linked-accounts/sql.ts';
import { AUTHORIZATION_LIFETIME_MS, captureBankPayment, emitIntent, emitPayment, walletBuckets } from '../payments/domain.ts';
import { NO_SOURCING, planWalletSourcing, releaseWallet, reserveWallet } from '../payments/money.ts';
import { paymentResource, type RenderContext } from '../payments/render.ts';
import * as payments from '../payments/sql.ts';
import { findUser } from '../users/sql.ts';
import { findWallet } from '../wallets/sql.ts';
import { effectiveStatus, intentResource } from './render.ts';
import * as q from './sql.ts';

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
  /** Lease past the processor's latency before an open attempt is presumed dead. */
  leaseMarginMs: number;
}

/** What the processor attempt carries between its transactions. */
interface AttemptRequest {
  amount: number;
  channel: string | null;
  reference: string | null;
  processorMeta: Record<string, unknown> | null;
  linkedAccountId: string | null;
  rail: 'bank' | 'card' | 'gift';
  captureMode: 'automatic' | 'manual';
  latencyMs: number;
}

/** The attributes an authorize key promises (decisions §4). */
export function authorizeFingerprint(i: AuthorizeInput): string {
  return fingerprintOf([i.intentId, { amount: i.amount, applyWalletBalance: i.applyWalletBalance, reference: i.reference, channel: i.channel, deviceSessionId: i.risk?.deviceSessionId, processor: i.processorMeta }]);
}

type Phase1 =
  | { kind: 'replay'; outcome: StoredOutcome }
  | { kind: 'done'; outcome: StoredOutcome }
  | { kind: 'call'; attempt: payments.AttemptRow };

/** Runs an authorize request to its response (status and the exact body). */
export async function authorize(deps: AuthorizeDeps, reply: FastifyReply, i: AuthorizeInput): Promise<StoredOutcome> {
  const ext = await clientAccountIds(deps.db, i.clientId);
  const scope: IdempotencyScope | undefined = i.idempotencyKey
    ? { clientId: i.clientId, operation: 'authorize', key: i.idempotencyKey, fingerprint: authorizeFingerprint(i) }
    : undefined;
  const serialize = (status: number, doc: unknown) => (reply.getSerializationFunction(String(status), JSONAPI) ?? JSON.stringify)(doc);

  const phase1 = await deps.db.transaction(async (tx): Promise<Phase1> => {
    const now = deps.now();
    if (scope) {
      const checked = await checkKey(tx, scope, now);
      if (checked.state.kind === 'replay') return { kind: 'replay', outcome: checked.state.outcome };
    }
    const locked = await q.lockIntentNoWait(tx, i.clientId, i.intentId);
    if (locked === undefined) throw apiError('PaymentIntentNotFound', `No payment intent ${i.intentId}.`);
    if (locked === 'busy') throw apiError('AlreadyExists', 'Another authorization of this payment intent is running; retry the same request.', { headers: { 'retry-after': '1' } });
    const intent = locked;
    const status = effectiveStatus(intent, now);

    if (status === 'PromotedToPayment') {
      // Already authorized: the active payment, without authorizing again (spec rule 1).
      const payment = await payments.activePaymentOfIntent(tx, intent.id);
      const doc = await successDocument(tx, intent, payment!, deps.rc, now);
      return { kind: 'done', outcome: { status: 200, body: serialize(200, doc), replayed: false } };
    }
    if (status === 'Expired') throw apiError('PaymentIntentExpired');
    if (status !== 'Promotable' && status !== 'RequiresAction') {
      throw apiError('IllegalOperation', `A ${status} payment intent cannot be authorized.`);
    }
    const open = await payments.openAttemptOfIntent(tx, intent.id);
    if (open) {
      if (open.leaseUntil && open.leaseUntil > now) {
        if (scope && open.idempotencyKey === scope.key) {
          if (open.fingerprint !== scope.fingerprint) throw apiError('IdempotencyKeyReused', undefined, { pointer: '/data/attributes/idempotencyKey' });
          throw apiError('IdempotencyKeyInUse', 'This authorization is still with the card processor; retry the same request.', { headers: { 'retry-after': '1' } });
        }
        throw apiError('AlreadyExists', 'An authorization of this payment intent is still with the card processor; retry the same request.', {
          headers: { 'retry-after': '1' },
        });
      }
      // Its process died: take it over and finish it with the same processor reference.
      const latency = (open.request as unknown as AttemptRequest).latencyMs;
      await payments.updateAttempt(tx, open.id, { leaseUntil: new Date(now.getTime() + latency + deps.leaseMarginMs), updatedAt: now });
      return { kind: 'call', attempt: open };
    }

    if (i.amount > intent.amount) throw apiError('Failed', `\`amount\` is more than the intent's ${intent.amount} cents.`, { status: 402, pointer: '/data/attributes/amount' });
    const plan = await planSourcing(tx, intent, i, now, deps);
    if (plan.kind === 'requires-action') return { kind: 'done', outcome: plan.outcome };
    const { sourcing, linkedAccountId } = plan;

    const attemptId = uuidv7();
    if (intent.walletId) {
      try {
        await reserveWallet(tx, { clientId: i.clientId, refType: 'attempt', refId: attemptId, now, walletId: intent.walletId, sourcing });
      } catch (err) {
        if (err instanceof InsufficientFundsError) throw apiError('Failed', 'The wallet balance changed; the amount is no longer available.', { status: 402 });
        throw err;
      }
    }
    const request: AttemptRequest = {
      amount: i.amount,
      channel: i.channel ?? null,
      reference: i.reference ?? intent.reference ?? null,
      processorMeta: i.processorMeta ?? null,
      linkedAccountId,
      rail: intent.giftId ? 'gift' : i.settings.rails,
      captureMode: i.settings.captureMode,
      latencyMs: i.settings.cardProcessor.latencyMs,
    };
    if (!i.settings.cardProcessor.enabled) {
      const batch = new WriteBatch();
      const outcome = await approve(tx, { intent, attemptId, request, sourcing, answer: undefined, scope, deps, ext, now, serialize, batch });
      await batch.flush(tx);
      return { kind: 'done', outcome };
    }
    const attempt = await payments.insertAttempt(tx, {
      id: attemptId,
      clientId: i.clientId,
      intentId: intent.id,
      idempotencyKey: scope?.key ?? null,
      fingerprint: scope?.fingerprint ?? authorizeFingerprint(i),
      state: 'processing',
      leaseUntil: new Date(now.getTime() + request.latencyMs + deps.leaseMarginMs),
      amount: i.amount,
      request: request as unknown as Record<string, unknown>,
      sourcing,
      createdAt: now,
      updatedAt: now,
    });
    return { kind: 'call', attempt };
  });

  if (phase1.kind !== 'call') return phase1.outcome;
  return finishAttempt(deps, phase1.attempt, scope, serialize, ext);
}

type Plan = { kind: 'ok'; sourcing: Sourcing; linkedAccountId: string | null } | { kind: 'requires-action'; outcome: StoredOutcome };

/** Where the money comes from, with the limits of decisions §8. */
async function planSourcing(tx: Tx, intent: q.IntentRow, i: AuthorizeInput, now: Date, deps: AuthorizeDeps): Promise<Plan> {
  if (intent.giftId) {
    // Gift intents skip KYC; authorize does not touch the gift (its card is spent later).
    const left = await giftAvailable(tx, intent.giftId);
    if (i.amount > left) throw apiError('Failed', `The gift has ${left} cents left.`, { status: 402, pointer: '/data/attributes/amount' });
    return { kind: 'ok', sourcing: { ...NO_SOURCING, gift: i.amount }, linkedAccountId: null };
  }
  const wallet = await findWallet(tx, i.clientId, intent.walletId!);
  if (!wallet || wallet.status !== 'Active') throw apiError('WalletClosed');
  const user = (await findUser(tx, i.clientId, wallet.userId))!;
  if (user.kycStatus !== 'Approved') throw apiError('InvalidKycStatus', `The user's KYC status is ${user.kycStatus}; payments need Approved.`);
  const sourcing = planWalletSourcing(await walletBuckets(tx, wallet.id), i.amount, { applyWalletBalance: i.applyWalletBalance, rewardMinimumPurchase: i.settings.rewardMinimumPurchase });
  if (sourcing.linked === 0) return { kind: 'ok', sourcing, linkedAccountId: null };
  const [account] = await connectedAccounts(tx, i.clientId, user.id);
  if (!account) {
    // The user must link an account: recorded on the intent, which now requires action (402).
    const updated = await q.updateIntent(tx, intent.id, { status: 'RequiresAction', error: 'LinkedAccountMissing', updatedAt: now });
    await emitIntent(tx, 'PaymentIntentUpdated', updated, deps.rc, now);
    const doc = renderErrorDocument(
      apiError('Failed', `The wallet covers ${i.amount - sourcing.linked} of ${i.amount} cents and the user has no connected linked account for the rest (intent error LinkedAccountMissing).`, {
        status: 402,
      }).items,
      `/api/v1/payment-intents/${intent.id}/authorize`,
      { environment: deps.environment, now: () => now },
    );
    return { kind: 'requires-action', outcome: { status: 402, body: doc, replayed: false } };
  }
  if (sourcing.linked > i.settings.bankFundingLimit) {
    throw apiError('Failed', `\`amount\` is more than the intent's upper limit (the wallet's ${i.amount - sourcing.linked} cents plus ${i.settings.bankFundingLimit} from the bank).`, {
      status: 402,
      pointer: '/data/attributes/amount',
    });
  }
  return { kind: 'ok', sourcing, linkedAccountId: account.id };
}

interface Decision {
  intent: q.IntentRow;
  attemptId: string;
  request: AttemptRequest;
  sourcing: Sourcing;
  answer: ProcessorAnswer | undefined;
  scope: IdempotencyScope | undefined;
  deps: AuthorizeDeps;
  ext: Record<ClientCode, string>;
  now: Date;
  serialize: (status: number, doc: unknown) => string;
  batch: WriteBatch;
}

/** Approved: a Created payment (captured at once when the merchant captures automatically). */
async function approve(tx: Tx, d: Decision): Promise<StoredOutcome> {
  const { intent, request, now } = d;
  let payment = await payments.insertPayment(tx, {
    id: uuidv7(),
    clientId: intent.clientId,
    intentId: intent.id,
    walletId: intent.walletId,
    giftId: intent.giftId,
    userId: intent.userId,
    rail: request.rail,
    status: 'Created',
    amount: request.amount,
    channel: request.channel,
    reference: request.reference,
    linkedAccountId: request.linkedAccountId,
    sourcing: d.sourcing,
    externalPayments: [],
    disbursement: [],
    processor: d.answer ? { request: request.processorMeta, response: d.answer.data } : request.processorMeta ? { request: request.processorMeta } : null,
    expiresAt: new Date(now.getTime() + AUTHORIZATION_LIFETIME_MS),
    createdAt: now,
    updatedAt: now,
  });
  if (request.rail === 'card') {
    // The single-use card for exactly the authorized amount.
    const card = await d.deps.issuer.issue({ reference: payment.id, now });
    await payments.insertCard(tx, {
      id: uuidv7(),
      clientId: intent.clientId,
      paymentId: payment.id,
      numberSealed: d.deps.sealer.seal(card.number, 'card'),
      cvcSealed: d.deps.sealer.seal(card.cvc, 'card'),
      last4: card.number.slice(-4),
      expirationMonth: card.expirationMonth,
      expirationYear: card.expirationYear,
      createdAt: now,
    });
  }
  const promoted = await q.updateIntent(tx, intent.id, { status: 'PromotedToPayment', error: null, updatedAt: now });
  await emitPayment(tx, 'PaymentCreated', payment, d.deps.rc, now);
  if (request.rail === 'bank' && request.captureMode === 'automatic') {
    payment = await captureBankPayment(tx, payment, payment.amount, { clientId: intent.clientId, rc: d.deps.rc, now, ext: d.ext });
  }
  await emitIntent(tx, 'PaymentIntentUpdated', promoted, d.deps.rc, now);
  const body = d.serialize(201, await successDocument(tx, promoted, payment, d.deps.rc, now));
  // Authorize keys live as long as the authorization (decisions §4).
  if (d.scope) d.batch.add(storeOutcomePart(d.scope, 201, body, now, payment.expiresAt));
  return { status: 201, body, replayed: false };
}

/** Declined by the processor: the payment is Failed, the reservation released, 402. */
async function decline(tx: Tx, d: Decision): Promise<StoredOutcome> {
  const { intent, request, now } = d;
  if (intent.walletId) await releaseWallet(tx, { clientId: intent.clientId, refType: 'attempt', refId: d.attemptId, now, walletId: intent.walletId, sourcing: d.sourcing });
  const payment = await payments.insertPayment(tx, {
    id: uuidv7(),
    clientId: intent.clientId,
    intentId: intent.id,
    walletId: intent.walletId,
    giftId: intent.giftId,
    userId: intent.userId,
    rail: request.rail,
    status: 'Failed',
    amount: request.amount,
    channel: request.channel,
    reference: request.reference,
    linkedAccountId: request.linkedAccountId,
    sourcing: NO_SOURCING,
    externalPayments: [],
    disbursement: [],
    processor: { request: request.processorMeta, response: d.answer!.data },
    failureReason: `The card processor declined: ${d.answer!.code}.`,
    expiresAt: now,
    createdAt: now,
    updatedAt: now,
  });
  await emitPayment(tx, 'PaymentCreated', payment, d.deps.rc, now);
  const body = renderErrorDocument(
    apiError('Failed', `The card processor declined the authorization (${d.answer!.code}); the payment is Failed and the intent can be authorized again.`, {
      status: 402,
      meta: { paymentId: payment.id },
    }).items,
    `/api/v1/payment-intents/${intent.id}/authorize`,
    { environment: d.deps.environment, now: () => now },
  );
  if (d.scope) d.batch.add(storeOutcomePart(d.scope, 402, body, now, new Date(now.getTime() + RETENTION_MS)));
  return { status: 402, body, replayed: false };
}

/**
 * Steps 2 and 3 for an open attempt: the processor call (outside any transaction) and the
 * recording of its answer. Also used by the recovery job for attempts whose process died.
 */
export async function finishAttempt(
  deps: AuthorizeDeps,
  attempt: payments.AttemptRow,
  scope: IdempotencyScope | undefined,
  serialize: (status: number, doc: unknown) => string,
  ext?: Record<ClientCode, string>,
): Promise<StoredOutcome> {
  const request = attempt.request as unknown as AttemptRequest;
  let answer: ProcessorAnswer;
  try {
    answer = await deps.processor.authorize({ reference: attempt.id, clientId: attempt.clientId, amount: attempt.amount, latencyMs: request.latencyMs, meta: request.processorMeta ?? undefined });
  } catch (err) {
    // Unknown whether it charged: the attempt stays open and is finished on retry or recovery.
    deps.log.warn({ err, attemptId: attempt.id }, 'card processor unreachable; the authorization will be retried');
    throw apiError('ServiceUnavailable', 'The card processor did not answer; retry the same request.', { headers: { 'retry-after': '2' } });
  }
  const accounts = ext ?? (await clientAccountIds(deps.db, attempt.clientId));
  return deps.db.transaction(async (tx) => {
    const now = deps.now();
    const current = await payments.findAttempt(tx, attempt.id, { forUpdate: true });
    if (!current || current.state !== 'processing') {
      // Another process finished it first: answer as it did.
      return recordedOutcome(tx, current!, deps, serialize, now);
    }
    const intent = (await q.lockIntent(tx, attempt.clientId, attempt.intentId))!;
    const batch = new WriteBatch();
    const d: Decision = { intent, attemptId: attempt.id, request, sourcing: attempt.sourcing, answer, scope: scopeOf(attempt, scope), deps, ext: accounts, now, serialize, batch };
    const outcome = answer.approved ? await approve(tx, d) : await decline(tx, d);
    const payment = await payments.activePaymentOfIntent(tx, intent.id);
    await payments.updateAttempt(tx, attempt.id, {
      state: answer.approved ? 'succeeded' : 'declined',
      leaseUntil: null,
      paymentId: answer.approved ? (payment?.id ?? null) : null,
      updatedAt: now,
    });
    await batch.flush(tx);
    return outcome;
  });
}

/** The key an attempt was made under (recovery has no request of its own). */
function scopeOf(attempt: payments.AttemptRow, scope: IdempotencyScope | undefined): IdempotencyScope | undefined {
  if (scope) return scope;
  if (!attempt.idempotencyKey) return undefined;
  return { clientId: attempt.clientId, operation: 'authorize', key: attempt.idempotencyKey, fingerprint: attempt.fingerprint };
}

async function recordedOutcome(tx: Tx, attempt: payments.AttemptRow, deps: AuthorizeDeps, serialize: (status: number, doc: unknown) => string, now: Date): Promise<StoredOutcome> {
  const intent = (await q.findIntent(tx, attempt.clientId, attempt.intentId))!;
  if (attempt.state === 'succeeded') {
    const payment = (await payments.findPayment(tx, attempt.clientId, attempt.paymentId!))!;
    return { status: 201, body: serialize(201, await successDocument(tx, intent, payment, deps.rc, now)), replayed: true };
  }
  return {
    status: 402,
    body: renderErrorDocument(apiError('Failed', 'The card processor declined the authorization.', { status: 402 }).items, `/api/v1/payment-intents/${intent.id}/authorize`, {
      environment: deps.environment,
      now: () => now,
    }),
    replayed: true,
  };
}

/** 201/200 body: the intent in data, the payment (with the processor's data) in included. */
async function successDocument(tx: Tx, intent: q.IntentRow, payment: payments.PaymentRow, rc: RenderContext, now: Date) {
  const all = await payments.paymentsOfIntents(tx, [intent.id]);
  return { data: intentResource(intent, all, rc.baseUrl, now), included: [paymentResource(payment, rc, { withProcessor: true })] };
}

/** Job: attempts whose process died are finished (same processor reference, no new charge). */
export async function recoverAttempts(deps: AuthorizeDeps): Promise<number> {
  const now = deps.now();
  const orphaned = await payments.claimOrphanedAttempts(deps.db, now, new Date(now.getTime() + 60_000 + deps.leaseMarginMs), 20);
  let done = 0;
  for (const attempt of orphaned) {
    await finishAttempt(deps, attempt, undefined, (_s, doc) => JSON.stringify(doc)).then(
      () => done++,
      (err) => deps.log.warn({ err, attemptId: attempt.id }, 'authorization recovery will be retried'),
    );
  }
  return done;
}
