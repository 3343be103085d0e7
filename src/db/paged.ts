// One page of a list and the total it pages through. The total rides along with the page
// (count(*) over (), one round trip); only an empty page (an offset past the end) costs a
// second query for it.
import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Page } from '../http/paging.ts';
import type { Executor } from './open.ts';

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
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(table as PgTable).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

/**
 * How many rows match, counting no further than `cap` (a list over a million rows pages in
 * milliseconds, where an exact total would count them all): { total, capped } where capped
 * means there are more than `total`.
 */
export async function cappedCount(db: Executor, table: PgTable, where: SQL | undefined, cap: number): Promise<{ total: number; capped: boolean }> {
  const inner = db.select({ one: sql`1` }).from(table).where(where).limit(cap + 1).as('capped');
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(inner);
  const n = c?.n ?? 0;
  return n > cap ? { total: cap, capped: true } : { total: n, capped: false };
}
