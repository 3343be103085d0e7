// KYC: disclosures, the application, the provider's answers, document verification
// (docs/identity.md#kyc-in-detail, docs/adr/0001-spec-then-accrue.md).
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Static } from 'typebox';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { nextCheckAt } from '../../jobs/backoff.ts';
import { providerUnavailable } from '../../http/errors.ts';
import type { KycAnswer, KycProvider, KycSubmission } from '../../providers/kyc.ts';
import { getUser } from '../users/domain.ts';
import { updateUserRow, type UserRow } from '../users/sql.ts';
import { recordKycChange } from './events.ts';
import type { AccrueKycApplicationBody, KycStatus } from './schemas.ts';
import * as q from './sql.ts';
import { afterCommit } from '../../db/commit-hooks.ts';
import { kycDecisions } from '../../observability/metrics.ts';

/** Accepting disclosures is recorded once, before any application; later calls change nothing. */
export async function acceptKycDisclosures(
  db: Db,
  opts: { clientId: string; userId: string; now: Date },
): Promise<void> {
  await db.transaction(async (tx) => {
    const user = await getUser(tx, { ...opts, forUpdate: true });
    if (user.kycStatus !== 'NotStarted' || user.disclosuresAcceptedAt) return;
    await updateUserRow(tx, opts.clientId, user.id, { disclosuresAcceptedAt: opts.now, updatedAt: opts.now });
  });
}

export interface KycApplicationInput {
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  email: string;
  address: { street: string; street2?: string; city: string; state: string; postalCode: string; country: string };
  phone?: string;
  ipAddress?: string;
}

/** Accrue's body (type Kyc: a flat US address) as Coffer's. */
export function fromAccrueApplication(
  a: Static<typeof AccrueKycApplicationBody>['data']['attributes'],
): KycApplicationInput {
  const { street, street2, city, state, postalCode, ...rest } = a;
  return {
    ...rest,
    address: { street, ...(street2 !== undefined ? { street2 } : {}), city, state, postalCode, country: 'US' },
  };
}

/** Which statuses may (re)apply: after disclosures, or to answer a request for documents with a new application. */
const CAN_APPLY: ReadonlySet<string> = new Set<KycStatus>(['NotStarted', 'AwaitingDocuments']);
/** Where the provider wants documents. */
const WANTS_DOCUMENTS: ReadonlySet<string> = new Set<KycStatus>(['AwaitingDocuments', 'ManualReview']);

function checkApplication(a: KycApplicationInput, now: Date): void {
  const dob = new Date(`${a.dateOfBirth}T00:00:00Z`);
  const real = !Number.isNaN(dob.getTime()) && dob.toISOString().slice(0, 10) === a.dateOfBirth;
  if (!real || dob >= now || now.getUTCFullYear() - dob.getUTCFullYear() > 130) {
    throw apiError('ValidationError', '`dateOfBirth` must be a real date in the past.', {
      pointer: '/data/attributes/dateOfBirth',
    });
  }
  if (a.ipAddress !== undefined && isIP(a.ipAddress) === 0) {
    throw apiError('ValidationError', '`ipAddress` must be an IPv4 or IPv6 address.', {
      pointer: '/data/attributes/ipAddress',
    });
  }
}

export async function submitKycApplication(
  db: Db,
  opts: {
    clientId: string;
    userId: string;
    application: KycApplicationInput;
    provider: KycProvider;
    now: Date;
    baseUrl: string;
  },
): Promise<{ user: UserRow; application: q.KycApplicationRow }> {
  const a = opts.application;
  checkApplication(a, opts.now);
  return db.transaction(async (tx) => {
    const user = await getUser(tx, { clientId: opts.clientId, userId: opts.userId, forUpdate: true });
    if (user.kycStatus === 'NotStarted' && !user.disclosuresAcceptedAt) throw apiError('DisclosuresNotAccepted');
    if (!CAN_APPLY.has(user.kycStatus)) {
      throw apiError(
        'KycApplicationFailed',
        `KYC is ${user.kycStatus}; an application is accepted only after disclosures or when documents are requested.`,
      );
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
      phone: a.phone ?? null,
      ipAddress: a.ipAddress ?? null,
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
    await recordKycChange(tx, { user: updated, application, created: true, now: opts.now, baseUrl: opts.baseUrl });
    return { user: updated, application };
  });
}

export async function getKyc(db: Executor, opts: { clientId: string; userId: string }) {
  const user = await getUser(db, opts);
  const application = await q.latestApplication(db, opts.clientId, user.id);
  return { user, application };
}

/** The user's latest application, when the provider wants documents for it; else 400 DocumentVerificationFailed. */
function applicationWantingDocuments(user: UserRow, application: q.KycApplicationRow | undefined): q.KycApplicationRow {
  if (!application || !WANTS_DOCUMENTS.has(application.status) || application.status !== user.kycStatus) {
    throw apiError(
      'DocumentVerificationFailed',
      `KYC is ${user.kycStatus}; documents are taken only while it is AwaitingDocuments or ManualReview.`,
    );
  }
  return application;
}

/**
 * A link to the provider's document page. The link is recorded, then asked of the provider
 * outside any transaction with the link's id as its key; a provider that does not answer is
 * 503 (the link stays unanswered and unused; asking again makes a new one).
 */
export async function createDocumentVerificationLink(
  db: Db,
  opts: { clientId: string; userId: string; redirectUrl: string; provider: KycProvider; now: Date },
): Promise<q.KycDocumentLinkRow> {
  const url = URL.canParse(opts.redirectUrl) ? new URL(opts.redirectUrl) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw apiError('ValidationError', '`redirectUrl` must be an http or https URL.', {
      pointer: '/data/attributes/redirectUrl',
    });
  }
  const link = await db.transaction(async (tx) => {
    const user = await getUser(tx, { clientId: opts.clientId, userId: opts.userId });
    const application = applicationWantingDocuments(user, await q.latestApplication(tx, opts.clientId, user.id));
    return q.insertDocumentLink(tx, {
      id: uuidv7(),
      clientId: opts.clientId,
      userId: user.id,
      applicationId: application.id,
      redirectUrl: opts.redirectUrl,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
  });
  let page: { url: string };
  try {
    page = await opts.provider.createDocumentLink({
      reference: link.id,
      application: link.applicationId,
      userId: link.userId,
      redirectUrl: link.redirectUrl,
    });
  } catch (err) {
    throw providerUnavailable(err, 'The KYC provider did not answer; ask for a link again.');
  }
  return q.recordDocumentLinkUrl(db, link.id, page.url, opts.now);
}

/**
 * The user has finished uploading documents: the application goes back to Pending and the
 * decision job tells the provider (once, keyed) and asks for its review. Calling it again while
 * that review runs, or after it decided, answers the current status and changes nothing.
 */
export async function completeDocumentVerification(
  db: Db,
  opts: { clientId: string; userId: string; provider: KycProvider; now: Date; baseUrl: string },
): Promise<{ user: UserRow; application: q.KycApplicationRow }> {
  return db.transaction(async (tx) => {
    const user = await getUser(tx, { clientId: opts.clientId, userId: opts.userId, forUpdate: true });
    const latest = await q.latestApplication(tx, opts.clientId, user.id, { forUpdate: true });
    if (latest?.documentsSubmittedAt && !WANTS_DOCUMENTS.has(latest.status)) return { user, application: latest };
    const decideAfter = new Date(opts.now.getTime() + opts.provider.decisionDelayMs);
    const application = await q.markDocumentsSubmitted(
      tx,
      applicationWantingDocuments(user, latest).id,
      opts.now,
      decideAfter,
    );
    const updated = await updateUserRow(tx, opts.clientId, user.id, { kycStatus: 'Pending', updatedAt: opts.now });
    await recordKycChange(tx, { user: updated, application, now: opts.now, baseUrl: opts.baseUrl });
    return { user: updated, application };
  });
}

/** Applications still waiting for the provider's decision. */
const UNDECIDED: ReadonlySet<string> = new Set<KycStatus>(['Pending', 'ManualReview', 'AwaitingDocuments']);

/**
 * Sandbox only (the console's buttons): decides the user's undecided application at once, as
 * if the provider had answered, with the user's status and the events the decision job records.
 */
export async function simulateKycDecision(
  db: Db,
  opts: { clientId: string; userId: string; status: 'Approved' | 'Declined'; now: Date; baseUrl: string },
): Promise<UserRow> {
  return db.transaction(async (tx) => {
    const user = await getUser(tx, { clientId: opts.clientId, userId: opts.userId, forUpdate: true });
    const app = await q.latestApplication(tx, opts.clientId, user.id, { forUpdate: true });
    if (!app || !UNDECIDED.has(app.status)) {
      throw apiError(
        'IllegalOperation',
        `The user has no KYC application waiting for a decision${app ? ` (the latest is ${app.status})` : ''}.`,
      );
    }
    const ack = {
      sentAt: app.sentAt ?? opts.now,
      documentsSentAt: app.documentsSentAt,
      decideAfter: nextCheckAt(opts.now, opts.now),
    };
    const row = (await q.changeApplicationStatus(tx, app, { ...ack, status: opts.status, at: opts.now }))!;
    const updated = await updateUserRow(tx, opts.clientId, user.id, { kycStatus: opts.status, updatedAt: opts.now });
    await recordKycChange(tx, { user: updated, application: row, now: opts.now, baseUrl: opts.baseUrl });
    afterCommit(tx, () => kycDecisions.labels(opts.status).inc());
    return updated;
  });
}

/** Hook run in the transaction of a change the provider made (tests use it to fail one). */
export type KycChangeListener = (
  tx: Executor,
  e: { user: UserRow; application: q.KycApplicationRow; now: Date },
) => Promise<void>;

/** How long a claimed application belongs to the process asking the provider about it. */
const DECISION_LEASE_MS = 60_000;

/**
 * One round of the provider's answers. Due applications (Pending, or in ManualReview) are
 * claimed with a lease; each is sent to the provider (once: its id is the provider's
 * idempotency key), or its finished documents reported (once, keyed), or its answer asked for,
 * all at once and outside any transaction. A changed status is recorded (application, user and
 * events together) in its own transaction; an application still open is asked about again
 * later, less often the longer it waits; one the provider did not answer for stays leased and
 * is tried again when the lease runs out.
 */
export async function decideDueKycApplications(
  db: Db,
  opts: {
    provider: KycProvider;
    now: () => Date;
    baseUrl: string;
    onChange?: KycChangeListener;
    log?: FastifyBaseLogger;
  },
): Promise<number> {
  const now = opts.now();
  const claimed = await q.claimDueApplications(db, now, new Date(now.getTime() + DECISION_LEASE_MS), 50);
  let changed = 0;
  await Promise.all(
    claimed.map(async (app) => {
      const submission = submissionOf(app);
      const reportsDocuments = app.sentAt !== null && app.documentsSubmittedAt !== null && app.documentsSentAt === null;
      let answer: KycAnswer;
      try {
        answer = !app.sentAt
          ? await opts.provider.submit(submission)
          : reportsDocuments
            ? await opts.provider.submitDocuments({
                reference: `${app.id}:documents:${app.documentsSubmittedAt!.getTime()}`,
                application: submission,
              })
            : await opts.provider.status(submission);
      } catch (err) {
        opts.log?.warn(
          { err, applicationId: app.id },
          'the KYC provider did not answer; the application is tried again later',
        );
        return;
      }
      const at = opts.now();
      const ack = { sentAt: app.sentAt ?? at, documentsSentAt: reportsDocuments ? at : app.documentsSentAt };
      if (answer === app.status) {
        // Still checking (since it was sent or the documents reported), or still in review (since it went there).
        const waitingSince =
          app.status === 'ManualReview' ? (app.decidedAt ?? at) : (ack.documentsSentAt ?? ack.sentAt);
        return q.awaitAnswer(db, app, { ...ack, decideAfter: nextCheckAt(at, waitingSince) });
      }
      await db.transaction(async (tx) => {
        const row = await q.changeApplicationStatus(tx, app, {
          ...ack,
          status: answer,
          at,
          decideAfter: nextCheckAt(at, at),
        });
        if (!row) return;
        const user = await updateUserRow(tx, app.clientId, app.userId, { kycStatus: answer, updatedAt: at });
        await recordKycChange(tx, { user, application: row, now: at, baseUrl: opts.baseUrl });
        await opts.onChange?.(tx, { user, application: row, now: at });
        changed++;
        afterCommit(tx, () => kycDecisions.labels(answer).inc());
      });
    }),
  );
  return changed;
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
    ...(app.phone !== null ? { phone: app.phone } : {}),
    ...(app.ipAddress !== null ? { ipAddress: app.ipAddress } : {}),
    ...(app.documentsSubmittedAt ? { documentsSubmittedAt: app.documentsSubmittedAt.toISOString() } : {}),
  };
}
