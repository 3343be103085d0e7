// Every query on payment intents, scoped by client_id.
import { and, asc, desc, eq, inArray, lte, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { paymentIntents } from '../../db/schema.ts';
import type { Page, SortKey } from '../../http/paging.ts';

export type IntentRow = typeof paymentIntents.$inferSelect;

/** States that run out at expiresAt. */
export const EXPIRING = ['Promotable', 'RequiresAction'];

export async function insertIntent(db: Executor, row: typeof paymentIntents.$inferInsert): Promise<IntentRow> {
  const [out] = await db.insert(paymentIntents).values(row).returning();
  return out!;
}

export async function findIntent(db: Executor, clientId: string, id: string): Promise<IntentRow | undefined> {
  const [row] = await db.select().from(paymentIntents).where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, id)));
  return row;
}

/**
 * Locks an intent without waiting: a concurrent authorize of the same intent holds the lock,
 * and the caller answers 409 instead of queueing behind it. Undefined when not found;
 * 'busy' when another transaction holds it.
 */
export async function lockIntentNoWait(db: Executor, clientId: string, id: string): Promise<IntentRow | undefined | 'busy'> {
  try {
    const [row] = await db
      .select()
      .from(paymentIntents)
      .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, id)))
      .for('update', { noWait: true });
    return row;
  } catch (err) {
    if (isLockNotAvailable(err)) return 'busy';
    throw err;
  }
}

function isLockNotAvailable(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === '55P03') return true;
  }
  return false;
}

export async function lockIntent(db: Executor, clientId: string, id: string): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, id)))
    .for('update');
  return row;
}

export async function updateIntent(db: Executor, id: string, patch: Partial<IntentRow>): Promise<IntentRow> {
  const [row] = await db.update(paymentIntents).set(patch).where(eq(paymentIntents.id, id)).returning();
  return row!;
}

export async function intentsByIds(db: Executor, clientId: string, ids: string[]): Promise<IntentRow[]> {
  if (ids.length === 0) return [];
  return db.select().from(paymentIntents).where(and(eq(paymentIntents.clientId, clientId), inArray(paymentIntents.id, ids)));
}

export interface IntentFilters {
  initiator?: string;
  status?: string;
  paymentMethod?: string;
}

export const INTENT_SORT_FIELDS = ['createdAt', 'updatedAt', 'amount', 'expiresAt', 'status'] as const;
export type IntentSortField = (typeof INTENT_SORT_FIELDS)[number];

/** Sort expressions; status sorts as read (an intent past expiresAt as Expired), like the filter. */
function sortable(field: IntentSortField, now: Date): SQLWrapper {
  switch (field) {
    case 'createdAt':
      return paymentIntents.createdAt;
    case 'updatedAt':
      return paymentIntents.updatedAt;
    case 'amount':
      return paymentIntents.amount;
    case 'expiresAt':
      return paymentIntents.expiresAt;
    case 'status':
      return sql`case when ${inArray(paymentIntents.status, EXPIRING)} and ${paymentIntents.expiresAt} <= ${now} then 'Expired' else ${paymentIntents.status} end`;
  }
}

export async function listIntentRows(db: Executor, clientId: string, f: IntentFilters, sort: SortKey<IntentSortField>[], page: Page, now: Date) {
  const conds: SQL[] = [eq(paymentIntents.clientId, clientId)];
  if (f.initiator) conds.push(eq(paymentIntents.initiator, f.initiator));
  if (f.paymentMethod) conds.push(eq(paymentIntents.paymentMethod, f.paymentMethod));
  if (f.status) {
    // The status read is the effective one: an expiring intent past expiresAt reads Expired.
    const due = and(inArray(paymentIntents.status, EXPIRING), lte(paymentIntents.expiresAt, now));
    if (f.status === 'Expired') conds.push(or(eq(paymentIntents.status, 'Expired'), due)!);
    else if (EXPIRING.includes(f.status)) conds.push(and(eq(paymentIntents.status, f.status), sql`${paymentIntents.expiresAt} > ${now}`)!);
    else conds.push(eq(paymentIntents.status, f.status));
  }
  const where = and(...conds);
  const order = [...sort.map((k) => (k.descending ? desc(sortable(k.field, now)) : asc(sortable(k.field, now)))), desc(paymentIntents.id)];
  const rows = await db
    .select({ i: paymentIntents, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(paymentIntents)
    .where(where)
    .orderBy(...order)
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.i), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(paymentIntents).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

/** Intents past expiresAt still in an expiring state, locked (SKIP LOCKED) for the sweeper. */
export async function lockDueExpiries(db: Executor, now: Date, limit: number): Promise<IntentRow[]> {
  return db
    .select()
    .from(paymentIntents)
    .where(and(inArray(paymentIntents.status, EXPIRING), lte(paymentIntents.expiresAt, now)))
    .orderBy(asc(paymentIntents.expiresAt))
    .limit(limit)
    .for('update', { skipLocked: true });
}
