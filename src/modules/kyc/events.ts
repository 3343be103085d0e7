// The events of a KYC change, written in the change's transaction. Every change of status sends
// Accrue's topic (Kyc<Status>, included[0] the Kyc resource); an application's creation sends
// KycCreated first; the three decisions the spec names also send its topic
// (Application<Decision>, included[0] the User). A receiver subscribes to the set it handles.
import type { Executor } from '../../db/open.ts';
import { recordEvent } from '../events/record.ts';
import type { Topic } from '../events/topics.ts';
import { userResource } from '../users/render.ts';
import type { UserRow } from '../users/sql.ts';
import { kycResource } from './render.ts';
import type { KycStatus } from './schemas.ts';
import type { KycApplicationRow } from './sql.ts';

/** Accrue's topic for each status a change can reach (a denial is KycDeclined, as Accrue names the topic). */
const ACCRUE_TOPICS: Partial<Record<KycStatus, Topic>> = {
  Pending: 'KycPending',
  ManualReview: 'KycManualReview',
  AwaitingDocuments: 'KycAwaitingDocuments',
  Approved: 'KycApproved',
  Denied: 'KycDeclined',
};

/** The spec's topics, for the decisions it names. */
const SPEC_TOPICS: Partial<Record<KycStatus, Topic>> = {
  Approved: 'ApplicationApproved',
  AwaitingDocuments: 'ApplicationAwaitingDocuments',
  Denied: 'ApplicationDeclined',
};

/** Records the events of the user's new KYC status (`created`: the application was just submitted). */
export async function recordKycChange(
  tx: Executor,
  e: { user: UserRow; application: KycApplicationRow; created?: boolean; now: Date; baseUrl: string },
): Promise<void> {
  const status = e.user.kycStatus as KycStatus;
  const kyc = kycResource(e.user, e.application, e.baseUrl);
  const base = { clientId: e.user.clientId, userId: e.user.id, now: e.now };
  const topics = [...(e.created ? (['KycCreated'] as const) : []), ACCRUE_TOPICS[status]].filter(
    (x) => x !== undefined,
  );
  for (const topic of topics) await recordEvent(tx, { ...base, topic, resource: kyc });
  const spec = SPEC_TOPICS[status];
  if (spec) await recordEvent(tx, { ...base, topic: spec, resource: userResource(e.user, e.baseUrl) });
}
