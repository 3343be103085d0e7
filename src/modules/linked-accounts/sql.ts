// Every query on linked accounts, scoped by client_id.
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { linkedAccounts } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type LinkedAccountRow = typeof linkedAccounts.$inferSelect;

export async function insertLinkedAccount(db: Executor, row: typeof linkedAccounts.$inferInsert): Promise<LinkedAccountRow> {
  const [out] = await db.insert(linkedAccounts).values(row).returning();
  return out!;
}

export async function findLinkedAccount(
  db: Executor,
  clientId: string,
  userId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<LinkedAccountRow | undefined> {
  const q = db
    .select()
    .from(linkedAccounts)
    .where(and(eq(linkedAccounts.clientId, clientId), eq(linkedAccounts.userId, userId), eq(linkedAccounts.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function listLinkedAccountRows(db: Executor, clientId: string, userId: string, page: Page) {
  const where = and(eq(linkedAccounts.clientId, clientId), eq(linkedAccounts.userId, userId));
  const rows = await db
    .select({ account: linkedAccounts, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(linkedAccounts)
    .where(where)
    .orderBy(desc(linkedAccounts.createdAt), desc(linkedAccounts.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.account), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(linkedAccounts).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateLinkedAccountRow(db: Executor, id: string, patch: Partial<LinkedAccountRow>): Promise<LinkedAccountRow> {
  const [row] = await db.update(linkedAccounts).set(patch).where(eq(linkedAccounts.id, id)).returning();
  return row!;
}

/** A user's connected accounts, oldest first. */
export async function connectedAccounts(db: Executor, clientId: string, userId: string): Promise<LinkedAccountRow[]> {
  return db
    .select()
    .from(linkedAccounts)
    .where(and(eq(linkedAccounts.clientId, clientId), eq(linkedAccounts.userId, userId), eq(linkedAccounts.status, 'Connected')))
    .orderBy(asc(linkedAccounts.createdAt), asc(linkedAccounts.id));
}

/** Disconnected accounts whose deactivation the provider has not confirmed yet. */
export async function unconfirmedDeactivations(db: Executor, limit: number): Promise<LinkedAccountRow[]> {
  return db
    .select()
    .from(linkedAccounts)
    .where(and(eq(linkedAccounts.status, 'Disconnected'), isNull(linkedAccounts.providerDeactivatedAt)))
    .limit(limit);
}
