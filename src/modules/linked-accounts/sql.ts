// Every query on linked accounts, scoped by client_id.
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import { emptyPageCountsNothing } from '../../db/list-counts.ts';
import type { Executor } from '../../db/open.ts';
import { linkedAccounts } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type LinkedAccountRow = typeof linkedAccounts.$inferSelect;

/**
 * Account types of cards (the sandbox's demo backup payment methods, provider Checkout): a
 * deposit from one is card-funded, not a bank transfer (clear-pending/card clears it).
 */
export const CARD_ACCOUNT_TYPES = ['debit', 'creditCard'] as const;

export async function insertLinkedAccount(
  db: Executor,
  row: typeof linkedAccounts.$inferInsert,
): Promise<LinkedAccountRow> {
  const [out] = await db.insert(linkedAccounts).values(row).returning();
  return out!;
}

/** A user's connected account with exactly these details (a demo card of one test card type). */
export async function findConnectedAccountLike(
  db: Executor,
  clientId: string,
  userId: string,
  like: Pick<LinkedAccountRow, 'provider' | 'accountType' | 'institutionName' | 'accountMask'>,
): Promise<LinkedAccountRow | undefined> {
  const [row] = await db
    .select()
    .from(linkedAccounts)
    .where(
      and(
        eq(linkedAccounts.clientId, clientId),
        eq(linkedAccounts.userId, userId),
        eq(linkedAccounts.status, 'Connected'),
        eq(linkedAccounts.provider, like.provider),
        eq(linkedAccounts.accountType, like.accountType),
        eq(linkedAccounts.institutionName, like.institutionName),
        eq(linkedAccounts.accountMask, like.accountMask),
      ),
    )
    .orderBy(asc(linkedAccounts.createdAt), asc(linkedAccounts.id))
    .limit(1);
  return row;
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
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(linkedAccounts)
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateLinkedAccountRow(
  db: Executor,
  id: string,
  patch: Partial<LinkedAccountRow>,
): Promise<LinkedAccountRow> {
  const [row] = await db.update(linkedAccounts).set(patch).where(eq(linkedAccounts.id, id)).returning();
  return row!;
}

/** A user's connected accounts, oldest first. */
export async function connectedAccounts(db: Executor, clientId: string, userId: string): Promise<LinkedAccountRow[]> {
  return db
    .select()
    .from(linkedAccounts)
    .where(
      and(
        eq(linkedAccounts.clientId, clientId),
        eq(linkedAccounts.userId, userId),
        eq(linkedAccounts.status, 'Connected'),
      ),
    )
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
