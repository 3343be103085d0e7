// Every query on identity challenges, their submissions and profile updates, scoped by client_id.
import { and, desc, eq, gt, gte, isNotNull } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import {
  identityChallenges,
  identitySubmissions,
  linkedAccounts,
  profileUpdates,
  transactions,
  walletBarcodes,
  wallets,
} from '../../db/schema.ts';

export type ChallengeRow = typeof identityChallenges.$inferSelect;
export type SubmissionRow = typeof identitySubmissions.$inferSelect;
export type ProfileUpdateRow = typeof profileUpdates.$inferSelect;

export async function insertChallenge(
  db: Executor,
  row: typeof identityChallenges.$inferInsert,
): Promise<ChallengeRow> {
  const [out] = await db.insert(identityChallenges).values(row).returning();
  return out!;
}

export async function latestChallenge(
  db: Executor,
  clientId: string,
  userId: string,
): Promise<ChallengeRow | undefined> {
  const [row] = await db
    .select()
    .from(identityChallenges)
    .where(and(eq(identityChallenges.clientId, clientId), eq(identityChallenges.userId, userId)))
    .orderBy(desc(identityChallenges.createdAt), desc(identityChallenges.id))
    .limit(1);
  return row;
}

/** The user's most recent failure that still blocks a new challenge. */
export async function failureSince(
  db: Executor,
  clientId: string,
  userId: string,
  since: Date,
): Promise<ChallengeRow | undefined> {
  const [row] = await db
    .select()
    .from(identityChallenges)
    .where(
      and(
        eq(identityChallenges.clientId, clientId),
        eq(identityChallenges.userId, userId),
        gt(identityChallenges.failedAt, since),
      ),
    )
    .orderBy(desc(identityChallenges.failedAt))
    .limit(1);
  return row;
}

export async function lockChallenge(
  db: Executor,
  clientId: string,
  userId: string,
  id: string,
): Promise<ChallengeRow | undefined> {
  const [row] = await db
    .select()
    .from(identityChallenges)
    .where(
      and(
        eq(identityChallenges.clientId, clientId),
        eq(identityChallenges.userId, userId),
        eq(identityChallenges.id, id),
      ),
    )
    .for('update');
  return row;
}

/** The challenge whose verification token hashes to `tokenHash`, locked for consumption. */
export async function lockChallengeByToken(
  db: Executor,
  clientId: string,
  userId: string,
  tokenHash: string,
): Promise<ChallengeRow | undefined> {
  const [row] = await db
    .select()
    .from(identityChallenges)
    .where(
      and(
        eq(identityChallenges.clientId, clientId),
        eq(identityChallenges.userId, userId),
        eq(identityChallenges.tokenHash, tokenHash),
      ),
    )
    .for('update');
  return row;
}

export async function updateChallenge(
  db: Executor,
  id: string,
  patch: Partial<typeof identityChallenges.$inferInsert>,
): Promise<ChallengeRow> {
  const [row] = await db.update(identityChallenges).set(patch).where(eq(identityChallenges.id, id)).returning();
  return row!;
}

export async function insertSubmission(
  db: Executor,
  row: typeof identitySubmissions.$inferInsert,
): Promise<SubmissionRow> {
  const [out] = await db.insert(identitySubmissions).values(row).returning();
  return out!;
}

export async function insertProfileUpdate(
  db: Executor,
  row: typeof profileUpdates.$inferInsert,
): Promise<ProfileUpdateRow> {
  const [out] = await db.insert(profileUpdates).values(row).returning();
  return out!;
}

export async function activeWalletOf(
  db: Executor,
  clientId: string,
  userId: string,
): Promise<{ id: string } | undefined> {
  const [row] = await db
    .select({ id: wallets.id })
    .from(wallets)
    .where(and(eq(wallets.clientId, clientId), eq(wallets.userId, userId), eq(wallets.status, 'Active')));
  return row;
}

/** The user's connected (still linked) accounts, newest first. */
export async function connectedAccountsOf(db: Executor, clientId: string, userId: string) {
  return db
    .select({ mask: linkedAccounts.accountMask, institutionName: linkedAccounts.institutionName })
    .from(linkedAccounts)
    .where(
      and(
        eq(linkedAccounts.clientId, clientId),
        eq(linkedAccounts.userId, userId),
        eq(linkedAccounts.status, 'Connected'),
      ),
    )
    .orderBy(desc(linkedAccounts.createdAt));
}

/** Amounts of the user's deposits cleared since `since`, newest first. */
export async function clearedDepositAmounts(
  db: Executor,
  clientId: string,
  userId: string,
  since: Date,
): Promise<number[]> {
  const rows = await db
    .select({ amount: transactions.amount })
    .from(transactions)
    .where(
      and(
        eq(transactions.clientId, clientId),
        eq(transactions.userId, userId),
        eq(transactions.status, 'Cleared'),
        isNotNull(transactions.clearedAt),
        gte(transactions.clearedAt, since),
      ),
    )
    .orderBy(desc(transactions.clearedAt))
    .limit(50);
  return rows.map((r) => r.amount);
}

/** Ends every barcode of the wallet that could still be scanned (the old phone may show one). */
export async function expireBarcodes(db: Executor, clientId: string, walletId: string, now: Date): Promise<void> {
  await db
    .update(walletBarcodes)
    .set({ expiresAt: now, updatedAt: now })
    .where(
      and(
        eq(walletBarcodes.clientId, clientId),
        eq(walletBarcodes.walletId, walletId),
        gt(walletBarcodes.expiresAt, now),
      ),
    );
}
