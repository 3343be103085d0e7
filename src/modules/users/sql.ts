// Every query on users. Each one is scoped by client_id: a merchant never reads another's.
import { and, desc, eq, or, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { ph } from '../../db/built-once.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import type { Executor } from '../../db/open.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, totalAlone } from '../../db/list-counts.ts';
import { CoalescedRead } from '../../db/coalesce.ts';
import { cappedPage, type CappedPage, type Cursor } from '../../db/paged.ts';
import { users } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type UserRow = typeof users.$inferSelect;

export async function insertUser(db: Executor, row: typeof users.$inferInsert): Promise<UserRow> {
  const [out] = await db.insert(users).values(row).returning();
  return out!;
}

export async function findUser(
  db: Executor,
  clientId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<UserRow | undefined> {
  const q = db
    .select()
    .from(users)
    .where(and(eq(users.clientId, clientId), eq(users.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export type UserSummaryRow = Pick<
  UserRow,
  'id' | 'disabled' | 'firstName' | 'lastName' | 'email' | 'phoneNumber' | 'createdAt' | 'updatedAt'
>;

const summaries = new CoalescedRead<UserSummaryRow & { clientId: string }>(
  'users_summaries',
  `select u.id, u.client_id as "clientId", u.disabled, u.first_name as "firstName", u.last_name as "lastName", u.email,
     u.phone_number as "phoneNumber", u.created_at as "createdAt", u.updated_at as "updatedAt"
   from unnest($1::uuid[], $2::uuid[]) k(client_id, id) join users u on u.client_id = k.client_id and u.id = k.id`,
);

/**
 * The hottest read: the shown columns only (decoding a full 20-column row cost a sixth of the
 * request), with the reads that arrive together sent as one prepared statement.
 */
export function findUserSummary(db: Executor, clientId: string, id: string): Promise<UserSummaryRow | undefined> {
  return summaries.get(db, clientId, id);
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

function userConditions(
  clientId: string | Placeholder,
  f: { [K in keyof UserFilters]: string | Placeholder },
): SQL | undefined {
  const conds: SQL[] = [eq(users.clientId, clientId)];
  if (f.phoneNumber !== undefined) conds.push(eq(users.phoneNumber, f.phoneNumber));
  if (f.email !== undefined) conds.push(eq(users.email, f.email));
  if (f.referenceId !== undefined)
    conds.push(or(eq(users.referenceId, f.referenceId), eq(users.stableReferenceId, f.referenceId))!);
  return and(...conds);
}

/** The console's page of users: newest first, the total counted up to `totalCap` (cappedPage). */
export function consoleUserRows(
  db: Executor,
  clientId: string,
  f: UserFilters,
  page: Page,
  o: { totalCap: number; cursor?: Cursor },
): Promise<CappedPage<UserRow>> {
  return cappedPage(db, {
    table: users,
    clientId,
    where: userConditions(clientId, { ...f, email: f.email?.toLowerCase() }),
    page,
    ...o,
    rows: (w, orderBy, limit, offset) =>
      db
        .select()
        .from(users)
        .where(w)
        .orderBy(...orderBy)
        .limit(limit)
        .offset(offset),
  });
}

type UserListShape = `${'' | 'p'}${'' | 'e'}${'' | 'r'}`;

/**
 * A page of users with its total in one round trip: the merchant's counted total, or with a
 * filter (each names at most a user or two, through a unique index) the rows it matches.
 */
const userPage = coalescedPages((db: Executor, shape: UserListShape) => {
  const where = userConditions(ph('clientId'), {
    phoneNumber: shape.includes('p') ? ph('phoneNumber') : undefined,
    email: shape.includes('e') ? ph('email') : undefined,
    referenceId: shape.includes('r') ? ph('referenceId') : undefined,
  });
  if (shape === '') {
    return countedPage(db, {
      table: users,
      where,
      orderBy: [desc(users.createdAt), desc(users.id)],
      total: countedTotal(ph('clientId'), 'users', {}),
    });
  }
  return db
    .select({ row: users, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(users)
    .where(where)
    .orderBy(desc(users.createdAt), desc(users.id))
    .limit(ph('limit'))
    .offset(ph('offset'));
});

const usersTotal = totalAlone((_: '') => countedTotal(ph('clientId'), 'users', {}));

export async function listUserRows(
  db: Executor,
  clientId: string,
  f: UserFilters,
  page: Page,
): Promise<{ rows: UserRow[]; total: number }> {
  const shape =
    `${f.phoneNumber !== undefined ? 'p' : ''}${f.email !== undefined ? 'e' : ''}${f.referenceId !== undefined ? 'r' : ''}` as UserListShape;
  const email = f.email?.toLowerCase();
  const rows = await userPage(db, shape, {
    clientId,
    phoneNumber: f.phoneNumber,
    email,
    referenceId: f.referenceId,
    limit: page.limit,
    offset: page.offset,
  });
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  // A page past the end.
  if (shape === '') return { rows: [], total: await usersTotal(db, '', { clientId }) };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(users)
    .where(userConditions(clientId, { ...f, email }));
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateUserRow(
  db: Executor,
  clientId: string,
  id: string,
  patch: Partial<typeof users.$inferInsert>,
): Promise<UserRow> {
  const [row] = await db
    .update(users)
    .set(patch)
    .where(and(eq(users.clientId, clientId), eq(users.id, id)))
    .returning();
  return row!;
}

/** Serialises reference-id changes within one merchant (uniqueness spans two columns). */
export async function lockReferenceIds(db: Executor, clientId: string): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(hashtext(${`coffer:refs:${clientId}`}))`);
}

/** Another user of this merchant already using `ref` as either reference id: that user's id. */
export async function referenceTakenBy(
  db: Executor,
  clientId: string,
  ref: string,
  exceptUserId: string,
): Promise<string | undefined> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(
      and(
        eq(users.clientId, clientId),
        or(eq(users.referenceId, ref), eq(users.stableReferenceId, ref)),
        sql`${users.id} <> ${exceptUserId}`,
      ),
    )
    .limit(1);
  return rows[0]?.id;
}

/** The user of this merchant with this phone number or e-mail (each unique per merchant). */
export async function findUserIdByContact(
  db: Executor,
  clientId: string,
  contact: { phoneNumber?: string; email?: string },
): Promise<string | undefined> {
  const by = contact.phoneNumber !== undefined ? eq(users.phoneNumber, contact.phoneNumber) : undefined;
  const byEmail = contact.email !== undefined ? eq(users.email, contact.email.toLowerCase()) : undefined;
  const match = by ?? byEmail;
  if (!match) return undefined;
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.clientId, clientId), match));
  return row?.id;
}
