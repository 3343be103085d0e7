// KYC: disclosures, the application, the provider's decision (decisions §5).
import type { FastifyBaseLogger } from 'fastify';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { nextCheckAt } from '../../jobs/backoff.ts';
import type { KycDecision, KycProvider, KycSubmission } from '../../providers/kyc.ts';
import { getUser } from '../users/domain.ts';
import { updateUserRow, type UserRow } from '../users/sql.ts';
import type { KycStatus } from './schemas.ts';
import * as q from './sql.ts';

/** Accepting disclosures moves NotStarted to DisclosuresAccepted; any later status stays. */
export async function acceptKycDisclosures(db: Db, opts: { clientId: string; userId: string; now: Date }): Promise<void> {
  await db.transaction(async (tx) => {
    const user = await getUser(tx, { ...opts, forUpdate: true });
    if (user.kycStatus !== 'NotStarted') return;
    await updateUserRow(tx, opts.clientId, user.id, { kycStatus: 'DisclosuresAccepted', disclosuresAcceptedAt: opts.now, updatedAt: opts.now });
  });
}

export interface KycApplicationInput {
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  email: string;
  address: { street: string; street2?: string; city: string; state: string; postalCode: string; country: string };
}

/** Which statuses may (re)apply: after disclosures, or to answer a request for documents. */
const CAN_APPLY: ReadonlySet<string> = new Set<KycStatus>(['DisclosuresAccepted', 'AwaitingDocuments']);

export async function submitKycApplication(
  db: Db,
  opts: { clientId: string; userId: string; application: KycApplicationInput; provider: KycProvider; now: Date },
): Promise<{ user: UserRow; application: q.KycApplicationRow }> {
  const a = opts.application;
  const dob = new Date(`${a.dateOfBirth}T00:00:00Z`);
  if (Number.isNaN(dob.getTime()) || dob >= opts.now || opts.now.getUTCFullYear() - dob.getUTCFullYear() > 130) {
    throw apiError('ValidationError', '`dateOfBirth` must be a real date in the past.', { pointer: '/data/attributes/dateOfBirth' });
  }
  return db.transaction(async (tx) => {
    const user = await getUser(tx, { clientId: opts.clientId, userId: opts.userId, forUpdate: true });
    if (user.kycStatus === 'NotStarted') throw apiError('DisclosuresNotAccepted');
    if (!CAN_APPLY.has(user.kycStatus)) {
      throw apiError('IllegalOperation', `KYC is ${user.kycStatus}; an application is accepted only after disclosures or when documents are requested.`);
    }
    const application = await q.insertApplication(tx, {
      id: uuidv7(),
      clientId: opts.clientId,
      userId: user.id,
      status: 'Pending',
      firstName: a.firstName,
      lastName: a.lastName,
      dateOfBirth: a.dateOfBirth,
      email: a.email.toLowerCase(),
      address: a.address,
      decideAfter: new Date(opts.now.getTime() + opts.provider.decisionDelayMs),
      createdAt: opts.now,
      updatedAt: opts.now,
    });
    const updated = await updateUserRow(tx, opts.clientId, user.id, {
      kycStatus: 'Pending',
      firstName: a.firstName,
      lastName: a.lastName,
      dateOfBirth: a.dateOfBirth,
      updatedAt: opts.now,
    });
    return { user: updated, application };
  });
}

export async function getKyc(db: Executor, opts: { clientId: string; userId: string }) {
  const user = await getUser(db, opts);
  const application = await q.latestApplication(db, opts.clientId, user.id);
  return { user, application };
}

/** Hook run in the decision's transaction (the webhook outbox subscribes here). */
export type KycDecisionListener = (tx: Executor, e: { user: UserRow; application: q.KycApplicationRow; decision: KycDecision; now: Date }) => Promise<void>;

/** How long a claimed application belongs to the process asking the provider about it. */
const DECISION_LEASE_MS = 60_000;

/**
 * One round of the provider's answers. Due applications are claimed with a lease; each is sent to
 * the provider (once: its id is the provider's idempotency key) or, once sent, its answer asked
 * for, all at once and outside any transaction. A decision is recorded (user status and
 * application together) in its own transaction; an application still pending is asked about
 * again later, less often the longer it waits; one the provider did not answer for stays leased
 * and is tried again when the lease runs out.
 */
export async function decideDueKycApplications(
  db: Db,
  opts: { provider: KycProvider; now: () => Date; onDecision?: KycDecisionListener; log?: FastifyBaseLogger },
): Promise<number> {
  const now = opts.now();
  const claimed = await q.claimDueApplications(db, now, new Date(now.getTime() + DECISION_LEASE_MS), 50);
  let decided = 0;
  await Promise.all(
    claimed.map(async (app) => {
      let answer;
      try {
        answer = app.sentAt ? await opts.provider.status(submissionOf(app)) : await opts.provider.submit(submissionOf(app));
      } catch (err) {
        opts.log?.warn({ err, applicationId: app.id }, 'the KYC provider did not answer; the application is tried again later');
        return;
      }
      const at = opts.now();
      if (answer === 'Pending') {
        const sentAt = app.sentAt ?? at;
        return q.awaitDecision(db, app.id, sentAt, nextCheckAt(at, sentAt));
      }
      await db.transaction(async (tx) => {
        const row = await q.decideApplication(tx, app.id, answer, at);
        if (!row) return;
        const user = await updateUserRow(tx, app.clientId, app.userId, { kycStatus: answer, updatedAt: at });
        await opts.onDecision?.(tx, { user, application: row, decision: answer, now: at });
        decided++;
      });
    }),
  );
  return decided;
}

function submissionOf(app: q.KycApplicationRow): KycSubmission {
  return {
    reference: app.id,
    userId: app.userId,
    firstName: app.firstName,
    lastName: app.lastName,
    dateOfBirth: app.dateOfBirth,
    email: app.email,
    address: app.address as KycSubmission['address'],
  };
}
