// Every query on KYC applications and document links.
import { and, desc, eq, inArray, lte } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { kycApplications, kycDocumentLinks } from '../../db/schema.ts';

export type KycApplicationRow = typeof kycApplications.$inferSelect;
export type KycDocumentLinkRow = typeof kycDocumentLinks.$inferSelect;

/** The statuses the decision job asks the provider about: it is checking, or reviewing. */
const OPEN_STATUSES = ['Pending', 'ManualReview'];

export async function insertApplication(
  db: Executor,
  row: typeof kycApplications.$inferInsert,
): Promise<KycApplicationRow> {
  const [out] = await db.insert(kycApplications).values(row).returning();
  return out!;
}

export async function latestApplication(
  db: Executor,
  clientId: string,
  userId: string,
  opts: { forUpdate?: boolean } = {},
): Promise<KycApplicationRow | undefined> {
  const q = db
    .select()
    .from(kycApplications)
    .where(and(eq(kycApplications.clientId, clientId), eq(kycApplications.userId, userId)))
    .orderBy(desc(kycApplications.createdAt), desc(kycApplications.id))
    .limit(1);
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

/**
 * Claims due applications for one round: pushes their decide_after forward by a lease, so
 * another process skips them while this one asks the provider. A crashed claimer's
 * applications come due again when the lease runs out.
 */
export async function claimDueApplications(
  db: Executor,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<KycApplicationRow[]> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select({ id: kycApplications.id })
      .from(kycApplications)
      .where(and(inArray(kycApplications.status, OPEN_STATUSES), lte(kycApplications.decideAfter, now)))
      .orderBy(kycApplications.decideAfter)
      .limit(limit)
      .for('update', { skipLocked: true });
    if (due.length === 0) return [];
    return tx
      .update(kycApplications)
      .set({ decideAfter: leaseUntil })
      .where(
        inArray(
          kycApplications.id,
          due.map((d) => d.id),
        ),
      )
      .returning();
  });
}

/** What a round recorded about an application whose status the provider did not change. */
export interface Acknowledged {
  sentAt: Date;
  documentsSentAt: Date | null;
  decideAfter: Date;
}

/** The provider has what was sent and its answer is unchanged: ask again at `decideAfter`. */
export async function awaitAnswer(db: Executor, app: KycApplicationRow, ack: Acknowledged): Promise<void> {
  await db
    .update(kycApplications)
    .set(ack)
    .where(and(eq(kycApplications.id, app.id), eq(kycApplications.status, app.status)));
}

/**
 * Records the provider's new status if the application still has the status the round saw
 * (else someone else moved it: undefined). An open status is asked about again at `decideAfter`.
 */
export async function changeApplicationStatus(
  db: Executor,
  app: KycApplicationRow,
  change: Acknowledged & { status: string; at: Date },
): Promise<KycApplicationRow | undefined> {
  const { at, ...set } = change;
  const [row] = await db
    .update(kycApplications)
    .set({ ...set, decidedAt: at, updatedAt: at })
    .where(and(eq(kycApplications.id, app.id), eq(kycApplications.status, app.status)))
    .returning();
  return row;
}

/** The user has finished uploading documents: back to Pending, the report to be sent at `decideAfter`. */
export async function markDocumentsSubmitted(
  db: Executor,
  id: string,
  at: Date,
  decideAfter: Date,
): Promise<KycApplicationRow> {
  const [row] = await db
    .update(kycApplications)
    .set({ status: 'Pending', documentsSubmittedAt: at, documentsSentAt: null, decideAfter, updatedAt: at })
    .where(eq(kycApplications.id, id))
    .returning();
  return row!;
}

export async function insertDocumentLink(
  db: Executor,
  row: typeof kycDocumentLinks.$inferInsert,
): Promise<KycDocumentLinkRow> {
  const [out] = await db.insert(kycDocumentLinks).values(row).returning();
  return out!;
}

export async function recordDocumentLinkUrl(
  db: Executor,
  id: string,
  url: string,
  at: Date,
): Promise<KycDocumentLinkRow> {
  const [out] = await db
    .update(kycDocumentLinks)
    .set({ url, updatedAt: at })
    .where(eq(kycDocumentLinks.id, id))
    .returning();
  return out!;
}

/** A link by id alone: the sandbox's document page, opened by the user's browser, knows no merchant. */
export async function findDocumentLink(db: Executor, id: string): Promise<KycDocumentLinkRow | undefined> {
  const [row] = await db.select().from(kycDocumentLinks).where(eq(kycDocumentLinks.id, id));
  return row;
}
