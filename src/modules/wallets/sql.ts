// Every query on wallets and barcodes, scoped by client_id.
import { and, desc, eq, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/open.ts';
import { prepared } from '../../db/prepared.ts';
import { ledgerAccounts, users, walletBarcodes, wallets } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';
import type { Buckets } from './balance.ts';

export type WalletRow = typeof wallets.$inferSelect;
export type BarcodeRow = typeof walletBarcodes.$inferSelect;

export async function insertWallet(db: Executor, row: typeof wallets.$inferInsert): Promise<WalletRow> {
  const [out] = await db.insert(wallets).values(row).returning();
  return out!;
}

export async function findWallet(db: Executor, clientId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<WalletRow | undefined> {
  const q = db.select().from(wallets).where(and(eq(wallets.clientId, clientId), eq(wallets.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function findWalletOfUser(db: Executor, clientId: string, userId: string): Promise<WalletRow | undefined> {
  const [row] = await db.select().from(wallets).where(and(eq(wallets.clientId, clientId), eq(wallets.userId, userId)));
  return row;
}

/**
 * The balance read, the hottest money read: the wallet and its nine bucket balances in one
 * prepared statement.
 */
export async function findWalletWithBuckets(db: Db, clientId: string, id: string): Promise<{ wallet: WalletRow; buckets: Buckets } | undefined> {
  const stmt = prepared(db, 'wallet_with_buckets', (d) =>
    d
      .select({ wallet: wallets, code: ledgerAccounts.code, balance: ledgerAccounts.balance })
      .from(wallets)
      .innerJoin(ledgerAccounts, and(eq(ledgerAccounts.ownerId, wallets.id), eq(ledgerAccounts.ownerType, 'wallet')))
      .where(and(eq(wallets.clientId, sql.placeholder('clientId')), eq(wallets.id, sql.placeholder('id'))))
      .prepare('wallet_with_buckets'),
  );
  const rows = await stmt.execute({ clientId, id });
  if (rows.length === 0) return undefined;
  const buckets = Object.fromEntries(rows.map((r) => [r.code, r.balance])) as Buckets;
  return { wallet: rows[0]!.wallet, buckets };
}

export interface WalletFilters {
  phoneNumber?: string;
  email?: string;
  referenceId?: string;
}

export async function listWalletRows(db: Executor, clientId: string, f: WalletFilters, page: Page) {
  const conds: SQL[] = [eq(wallets.clientId, clientId)];
  if (f.phoneNumber !== undefined) conds.push(eq(users.phoneNumber, f.phoneNumber));
  if (f.email !== undefined) conds.push(eq(users.email, f.email.toLowerCase()));
  if (f.referenceId !== undefined) conds.push(or(eq(users.referenceId, f.referenceId), eq(users.stableReferenceId, f.referenceId))!);
  const where = and(...conds);
  const rows = await db
    .select({ wallet: wallets, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(wallets)
    .innerJoin(users, eq(users.id, wallets.userId))
    .where(where)
    .orderBy(desc(wallets.createdAt), desc(wallets.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.wallet), total: rows[0]!.total };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(wallets)
    .innerJoin(users, eq(users.id, wallets.userId))
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function insertBarcode(db: Executor, row: typeof walletBarcodes.$inferInsert): Promise<BarcodeRow> {
  const [out] = await db.insert(walletBarcodes).values(row).returning();
  return out!;
}

export async function findBarcode(db: Executor, clientId: string, lookUpId: string, opts: { forUpdate?: boolean } = {}): Promise<BarcodeRow | undefined> {
  const q = db.select().from(walletBarcodes).where(and(eq(walletBarcodes.clientId, clientId), eq(walletBarcodes.lookUpId, lookUpId)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function incrementBarcodeUse(db: Executor, id: string): Promise<void> {
  await db.update(walletBarcodes).set({ usageCount: sql`${walletBarcodes.usageCount} + 1` }).where(eq(walletBarcodes.id, id));
}
