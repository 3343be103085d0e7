// Every query on KYC applications.
import { and, desc, eq, inArray, lte, sql } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { kycApplications } from '../../db/schema.ts';

export type KycApplicationRow = typeof kycApplications.$inferSelect;

export async function insertApplication(db: Executor, row: typeof kycApplications.$inferInsert): Promise<KycApplicationRow> {
  const [out] = await db.insert(kycApplications).values(row).returning();
  return out!;
}

export async function latestApplication(db: Executor, clientId: string, userId: string): Promise<KycApplicationRow | undefined> {
  const [row] = await db
    .select()
    .from(kycApplications)
    .where(and(eq(kycApplications.clientId, clientId), eq(kycApplications.userId, userId)))
    .orderBy(desc(kycApplications.createdAt), desc(kycApplications.id))
    .limit(1);
  return row;
}

/**
 * Claims due applications for one decision round: pushes their decide_after forward by a
 * lease, so another process skips them while this one asks the provider. A crashed claimer's
 * applications come due again when the lease runs out.
 */
export async function claimDueApplications(db: Executor, now: Date, leaseUntil: Date, limit: number): Promise<KycApplicationRow[]> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select({ id: kycApplications.id })
      .from(kycApplications)
      .where(and(eq(kycApplications.status, 'Pending'), lte(kycApplications.decideAfter, now)))
      .orderBy(kycApplications.decideAfter)
      .limit(limit)
      .for('update', { skipLocked: true });
    if (due.length === 0) return [];
    return tx
      .update(kycApplications)
      .set({ decideAfter: leaseUntil })
      .where(inArray(kycApplications.id, due.map((d) => d.id)))
      .returning();
  });
}

/** The provider has the application and has not decided yet: ask again at `decideAfter`. */
export async function awaitDecision(db: Executor, id: string, sentAt: Date, decideAfter: Date): Promise<void> {
  await db
    .update(kycApplications)
    .set({ sentAt, decideAfter, updatedAt: sentAt })
    .where(and(eq(kycApplications.id, id), eq(kycApplications.status, 'Pending')));
}

/** Records a decision if the application is still pending; false when someone else did. */
export async function decideApplication(db: Executor, id: string, status: string, now: Date): Promise<KycApplicationRow | undefined> {
  const [row] = await db
    .update(kycApplications)
    .set({ status, sentAt: sql`coalesce(${kycApplications.sentAt}, ${now.toISOString()}::timestamptz)`, decidedAt: now, updatedAt: now })
    .where(and(eq(kycApplications.id, id), eq(kycApplications.status, 'Pending')))
    .returning();
  return row;
}
