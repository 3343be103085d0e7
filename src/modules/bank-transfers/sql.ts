// Every query on the bank transfers Coffer waits on (jobs: any merchant's).
import { and, eq, inArray, lte } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { bankTransfers } from '../../db/schema.ts';

export type BankTransferRow = typeof bankTransfers.$inferSelect;

/** Transfers to wait for; one already kept (a send repeated after a crash) stays as it is. */
export async function insertTransfers(
  db: Executor,
  rows: {
    reference: string;
    clientId: string;
    purpose: string;
    subjectId: string;
    direction: string;
    amount: number;
    providerRef: string;
  }[],
  now: Date,
  checkAfter: Date,
): Promise<void> {
  await db
    .insert(bankTransfers)
    .values(rows.map((r) => ({ ...r, status: 'Pending', checkAfter, createdAt: now, updatedAt: now })))
    .onConflictDoNothing({ target: bankTransfers.reference });
}

/**
 * Claims pending transfers due to be asked about: their next check moves to `leaseUntil`, so
 * another process skips them while this one asks (SKIP LOCKED); a crashed asker's come due again.
 */
export async function claimDueTransfers(
  db: Executor,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<BankTransferRow[]> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select({ reference: bankTransfers.reference })
      .from(bankTransfers)
      .where(and(eq(bankTransfers.status, 'Pending'), lte(bankTransfers.checkAfter, now)))
      .orderBy(bankTransfers.checkAfter)
      .limit(limit)
      .for('update', { skipLocked: true });
    if (due.length === 0) return [];
    return tx
      .update(bankTransfers)
      .set({ checkAfter: leaseUntil })
      .where(
        inArray(
          bankTransfers.reference,
          due.map((d) => d.reference),
        ),
      )
      .returning();
  });
}

export async function scheduleCheck(db: Executor, reference: string, checkAfter: Date): Promise<void> {
  await db
    .update(bankTransfers)
    .set({ checkAfter })
    .where(and(eq(bankTransfers.reference, reference), eq(bankTransfers.status, 'Pending')));
}

/** The transfer, locked, if it is still pending. */
export async function lockPendingTransfer(db: Executor, reference: string): Promise<BankTransferRow | undefined> {
  const [row] = await db
    .select()
    .from(bankTransfers)
    .where(and(eq(bankTransfers.reference, reference), eq(bankTransfers.status, 'Pending')))
    .for('update');
  return row;
}

export async function finishTransfer(
  db: Executor,
  reference: string,
  o: { status: 'Settled' | 'Failed'; failureReason: string | null; now: Date },
): Promise<void> {
  await db
    .update(bankTransfers)
    .set({ status: o.status, failureReason: o.failureReason, finishedAt: o.now, updatedAt: o.now })
    .where(eq(bankTransfers.reference, reference));
}
