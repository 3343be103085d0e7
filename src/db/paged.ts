// One page of a list and the total it pages through. The total rides along with the page
// (count(*) over (), one round trip); only an empty page (an offset past the end) costs a
// second query for it.
import { and, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Executor } from './open.ts';

/** One page of a list: how many rows, after how many. */
export interface Page {
  limit: number;
  offset: number;
}

export async function pagedRows<T extends PgTable>(
  db: Executor,
  table: T,
  where: SQL | undefined,
  orderBy: (PgColumn | SQL)[],
  page: Page,
): Promise<{ rows: T['$inferSelect'][]; total: number }> {
  const rows = (await db
    .select({ row: table as PgTable, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(table as PgTable)
    .where(where)
    .orderBy(...orderBy)
    .limit(page.limit)
    .offset(page.offset)) as { row: T['$inferSelect']; total: number }[];
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(table as PgTable)
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

/**
 * How many rows match, counting no further than `cap` (a list over a million rows pages in
 * milliseconds, where an exact total would count them all): { total, capped } where capped
 * means there are more than `total`.
 */
export async function cappedCount(
  db: Executor,
  table: PgTable,
  where: SQL | undefined,
  cap: number,
): Promise<{ total: number; capped: boolean }> {
  const inner = db
    .select({ one: sql`1` })
    .from(table)
    .where(where)
    .limit(cap + 1)
    .as('capped');
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(inner);
  const n = c?.n ?? 0;
  return n > cap ? { total: cap, capped: true } : { total: n, capped: false };
}

/**
 * Where a page starts next to a row of a newest-first list, by the row's id: `after` it (the
 * older rows: a "next" link) or `before` it (the newer rows: a "previous" link). A page reached
 * this way costs its own rows at any depth, where page[offset] walks every row before it.
 */
export interface Cursor {
  after?: string;
  before?: string;
}

/** A console list's page: its rows, the total counted up to a cap, and the cursors of the pages beside it. */
export interface CappedPage<R> {
  rows: R[];
  total: number;
  capped: boolean;
  /** The last row's id, when older rows follow (the next page starts after it). */
  next?: string;
  /** The first row's id, when newer rows come before (the previous page ends before it). */
  prev?: string;
}

/**
 * A page of a newest-first list (created_at desc, id desc, the order of each merchant's
 * (client_id, created_at, id) index) for the console: by `cursor` when one is given (page.offset
 * then only numbers the rows), else by page.offset; the total counted no further than `totalCap`
 * (cappedCount). `rows` runs the page's query with the condition, order and limit given;
 * `count` counts (defaults to the table alone, for filters on its own columns).
 */
export async function cappedPage<R extends { id: string }>(
  db: Executor,
  o: {
    table: PgTable & { createdAt: PgColumn; id: PgColumn; clientId: PgColumn };
    clientId: string;
    where: SQL | undefined;
    page: Page;
    cursor?: Cursor;
    totalCap: number;
    rows: (where: SQL | undefined, orderBy: SQL[], limit: number, offset: number) => Promise<R[]>;
    count?: (where: SQL | undefined, cap: number) => Promise<{ total: number; capped: boolean }>;
    /**
     * An offset is skipped in the index alone, the page's rows read by id after (default; false
     * when `where` names another table's columns, which the inner query could not see).
     */
    deferOffset?: boolean;
  },
): Promise<CappedPage<R>> {
  const t = o.table;
  const key = o.cursor?.before ?? o.cursor?.after;
  const newer = o.cursor?.before !== undefined;
  // The cursor row's position, read by id within the merchant (no such row: an empty page).
  const at =
    key === undefined
      ? undefined
      : sql`((select k.created_at from ${t} k where k.client_id = ${o.clientId} and k.id = ${key}::uuid), ${key}::uuid)`;
  const where =
    at === undefined
      ? o.where
      : and(o.where, newer ? sql`(${t.createdAt}, ${t.id}) > ${at}` : sql`(${t.createdAt}, ${t.id}) < ${at}`);
  const orderBy = newer ? [sql`${t.createdAt} asc`, sql`${t.id} asc`] : [sql`${t.createdAt} desc`, sql`${t.id} desc`];
  // An offset without a cursor (a typed page[offset]): the skipped rows are walked in the
  // (client_id, …, created_at, id) index only (an index-only scan), and only the page's rows are
  // read from the table, instead of every skipped row (page[offset]=500000: 87 against 200 ms).
  const deep = key === undefined && o.page.offset > 0 && o.deferOffset !== false;
  const pageWhere = deep
    ? sql`${t.id} in (select ${t.id} from ${t} where ${where} order by ${t.createdAt} desc, ${t.id} desc limit ${o.page.limit + 1} offset ${o.page.offset})`
    : where;
  // One row more than the page: whether another page follows in that direction.
  const [fetched, counted] = await Promise.all([
    o.rows(pageWhere, orderBy, o.page.limit + 1, key === undefined && !deep ? o.page.offset : 0),
    o.count ? o.count(o.where, o.totalCap) : cappedCount(db, t, o.where, o.totalCap),
  ]);
  const more = fetched.length > o.page.limit;
  const rows = fetched.slice(0, o.page.limit);
  if (newer) rows.reverse();
  const olderFollow = newer ? rows.length > 0 : more;
  const newerBefore = newer ? more : key !== undefined || o.page.offset > 0;
  return {
    rows,
    ...counted,
    ...(olderFollow && rows.length > 0 ? { next: rows.at(-1)!.id } : {}),
    ...(newerBefore && rows.length > 0 ? { prev: rows[0]!.id } : {}),
  };
}
