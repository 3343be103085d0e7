// Every query on withdrawals, scoped by client_id.
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import { pagedRows } from '../../db/paged.ts';
import type { Executor } from '../../db/open.ts';
import { linkedAccounts, transactions, withdrawals } from '../../db/schema.ts';

export type WithdrawalRow = typeof withdrawals.$inferSelect;

export async function insertWithdrawal(db: Executor, row: typeof withdrawals.$inferInsert): Promise<WithdrawalRow> {
  const [out] = await db.insert(withdrawals).values(row).returning();
  return out!;
}

/**
 * What a wallet's cleared deposits brought in, per linked account, over the accounts named. The
 * merchant's id leads the condition so the wallet's rows are read through transactions_wallet_idx
 * (client_id, wallet_id, …); on the wallet id alone PostgreSQL read every transaction.
 */
export async function clearedDepositsByAccount(db: Executor, clientId: string, walletId: string, linkedAccountIds: string[]) {
  return db
    .select({ linkedAccountId: transactions.linkedAccountId, sum: sql<number>`sum(${transactions.walletAmount})`.mapWith(Number) })
    .from(transactions)
    .where(
      and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.status, 'Cleared'), inArray(transactions.linkedAccountId, linkedAccountIds)),
    )
    .groupBy(transactions.linkedAccountId);
}

/** Withdrawals the provider has not acknowledged yet, oldest first (the bank-pushes job, every client). */
export async function unsentWithdrawals(db: Executor, limit: number): Promise<WithdrawalRow[]> {
  return db.select().from(withdrawals).where(sql`${withdrawals.providerRef} is null`).orderBy(withdrawals.createdAt).limit(limit);
}

/** The provider's external ids of the linked accounts named. */
export async function linkedAccountExternalIds(db: Executor, ids: string[]): Promise<{ id: string; externalId: string }[]> {
  return db.select({ id: linkedAccounts.id, externalId: linkedAccounts.externalId }).from(linkedAccounts).where(inArray(linkedAccounts.id, ids));
}

export async function findWithdrawalById(db: Executor, id: string): Promise<WithdrawalRow | undefined> {
  const [row] = await db.select().from(withdrawals).where(eq(withdrawals.id, id));
  return row;
}

export async function recordProviderRef(db: Executor, id: string, providerRef: string): Promise<void> {
  await db.update(withdrawals).set({ providerRef }).where(eq(withdrawals.id, id));
}

/** A page of a wallet's withdrawals, newest first (the console). */
export async function listWithdrawalRows(db: Executor, clientId: string, walletId: string, page: { limit: number; offset: number }) {
  return pagedRows(db, withdrawals, and(eq(withdrawals.clientId, clientId), eq(withdrawals.walletId, walletId)), [desc(withdrawals.createdAt), desc(withdrawals.id)], page);
}
