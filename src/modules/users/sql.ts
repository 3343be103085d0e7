// Every query on users. Each one is scoped by client_id: a merchant never reads another's.
import { and, desc, eq, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/open.ts';
import { prepared } from '../../db/prepared.ts';
import { users } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type UserRow = typeof users.$inferSelect;

export async function insertUser(db: Executor, row: typeof users.$inferInsert): Promise<UserRow> {
  const [out] = await db.insert(users).values(row).returning();
  return out!;
}

export async function findUser(db: Executor, clientId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<UserRow | undefined> {
  const q = db.select().from(users).where(and(eq(users.clientId, clientId), eq(users.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

/** The columns GET /users/{id} shows. */
const summaryColumns = {
  id: users.id,
  disabled: users.disabled,
  firstName: users.firstName,
  lastName: users.lastName,
  email: users.email,
  phoneNumber: users.phoneNumber,
  createdAt: users.createdAt,
  updatedAt: users.updatedAt,
};
export type UserSummaryRow = Pick<UserRow, keyof typeof summaryColumns>;

/**
 * The hottest read: a prepared statement selecting only the shown columns (decoding a full
 * 20-column row cost a sixth of the request).
 */
export async function findUserSummary(db: Db, clientId: string, id: string): Promise<UserSummaryRow | undefined> {
  const stmt = prepared(db, 'users_summary', (d) =>
    d
      .select(summaryColumns)
      .from(users)
      .where(and(eq(users.clientId, sql.placeholder('clientId')), eq(users.id, sql.placeholder('id'))))
      .prepare('users_summary'),
  );
  const [row] = await stmt.execute({ clientId, id });
  return row;
}

/** Users whose referenceId or stableReferenceId is `ref` (more than one means ambiguous). */
export async function findUsersByReference(db: Executor, clientId: string, ref: string): Promise<UserRow[]> {
  return db
    .select()
    .from(users)
    .where(and(eq(users.clientId, clientId), or(eq(users.referenceId, ref), eq(users.stableReferenceId, ref))))
    .limit(2);
}

export interface UserFilters {
  phoneNumber?: string;
  email?: string;
  referenceId?: string;
}

export async function listUserRows(db: Executor, clientId: string, f: UserFilters, page: Page): Promise<{ rows: UserRow[]; total: number }> {
  const conds: SQL[] = [eq(users.clientId, clientId)];
  if (f.phoneNumber !== undefined) conds.push(eq(users.phoneNumber, f.phoneNumber));
  if (f.email !== undefined) conds.push(eq(users.email, f.email.toLowerCase()));
  if (f.referenceId !== undefined) conds.push(or(eq(users.referenceId, f.referenceId), eq(users.stableReferenceId, f.referenceId))!);
  const where = and(...conds);
  // The total rides along with the page (one round trip); an empty page needs its own count.
  const rows = await db
    .select({ user: users, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(users)
    .where(where)
    .orderBy(desc(users.createdAt), desc(users.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.user), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(users).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateUserRow(db: Executor, clientId: string, id: string, patch: Partial<typeof users.$inferInsert>): Promise<UserRow> {
  const [row] = await db.update(users).set(patch).where(and(eq(users.clientId, clientId), eq(users.id, id))).returning();
  return row!;
}

/** Serialises reference-id changes within one merchant (uniqueness spans two columns). */
export async function lockReferenceIds(db: Executor, clientId: string): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(hashtext(${'coffer:refs:' + clientId}))`);
}

/** Another user of this merchant already using `ref` as either reference id. */
export async function referenceTakenBy(db: Executor, clientId: string, ref: string, exceptUserId: string): Promise<boolean> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.clientId, clientId), or(eq(users.referenceId, ref), eq(users.stableReferenceId, ref)), sql`${users.id} <> ${exceptUserId}`))
    .limit(1);
  return rows.length > 0;
}
