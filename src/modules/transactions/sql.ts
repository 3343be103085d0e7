// Every query on deposit transactions, scoped by client_id.
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { transactions } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type TransactionRow = typeof transactions.$inferSelect;

export async function insertTransaction(db: Executor, row: typeof transactions.$inferInsert): Promise<TransactionRow> {
  const [out] = await db.insert(transactions).values(row).returning();
  return out!;
}

export async function findTransaction(db: Executor, clientId: string, walletId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  const q = db
    .select()
    .from(transactions)
    .where(and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

/** A wallet's pending deposits, oldest first, locked for clearing or failing. */
export async function lockPendingTransactions(db: Executor, clientId: string, walletId: string): Promise<TransactionRow[]> {
  return db
    .select()
    .from(transactions)
    .where(and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.status, 'Pending')))
    .orderBy(asc(transactions.createdAt), asc(transactions.id))
    .for('update');
}

export async function listTransactionRows(db: Executor, clientId: string, walletId: string, page: Page) {
  const where = and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId));
  const rows = await db
    .select({ t: transactions, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(transactions)
    .where(where)
    .orderBy(desc(transactions.createdAt), desc(transactions.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.t), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(transactions).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateTransactionRow(db: Executor, id: string, patch: Partial<TransactionRow>): Promise<TransactionRow> {
  const [row] = await db.update(transactions).set(patch).where(eq(transactions.id, id)).returning();
  return row!;
}

/** Pending deposits whose pull the provider has not acknowledged yet (oldest first). */
export async function unsentPulls(db: Executor, before: Date, limit: number): Promise<TransactionRow[]> {
  return db
    .select()
    .from(transactions)
    .where(and(eq(transactions.status, 'Pending'), isNull(transactions.providerRef), sql`${transactions.createdAt} <= ${before}`))
    .orderBy(asc(transactions.createdAt))
    .limit(limit);
}
