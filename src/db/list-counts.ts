// The exact totals of the API's lists, kept by the database (migration 0021,
// docs/internals.md#counters): list_counts holds each (merchant, list, key)'s count as of the
// last fold, list_count_deltas what statements changed since. A total is both summed in one
// statement, so a fold running meanwhile is seen wholly or not at all.
import { eq, getTableColumns, Placeholder, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { PageQuery } from './coalesced-pages.ts';
import { builtOnce, ph } from './built-once.ts';
import { rowsOf, type Executor } from './open.ts';
import { clients } from './schema.ts';

/**
 * A counted total as an uncorrelated scalar subquery (PostgreSQL runs it once per statement, as
 * an InitPlan), to read beside a page (countedPage) or alone (totalAlone): the rows of `list` for the merchant
 * whose key (JSON text) contains `match` (`{}`: all of them), or only the one key given as SQL.
 * A merchant's list has few keys (the product of its counted columns' values), read through the
 * primary key and the deltas' index.
 */
export function countedTotal(
  clientId: string | Placeholder,
  list: string | Placeholder,
  match: Record<string, string> | { key: SQL } | Placeholder,
): SQL {
  const which =
    match instanceof Placeholder
      ? sql`key::jsonb @> ${match}::jsonb` // the match's JSON text, given at execution
      : 'key' in match && typeof match.key !== 'string'
        ? sql`key = ${match.key}`
        : sql`key::jsonb @> ${JSON.stringify(match)}::jsonb`;
  return sql`(select coalesce(sum(c.n), 0) from (
    select n from list_counts where client_id = ${clientId} and list = ${list} and ${which}
    union all
    select n from list_count_deltas where client_id = ${clientId} and list = ${list} and ${which}) c)`;
}

/**
 * From this offset on, a list of wide rows (the events, about 1.3 KB each) reads a page by its
 * ids first (countedPage's `deep`). On the lists benchmark's database (1,000,000 events), the
 * two forms cost PostgreSQL about the same at an offset of 500: below it the direct read is
 * cheaper, above it the ids first (docs/internals.md#statements-and-plans).
 */
export const DEEP_OFFSET = 500;

/** Whether a page of wide rows at this offset is read by its ids first (a shape of its own). */
export const isDeep = (page: { offset: number }): boolean => page.offset >= DEEP_OFFSET;

/**
 * A page of rows with its counted total, in the statement PostgreSQL runs cheapest:
 *
 *   select page.*, t.total from (select <total> as total offset 0) t
 *     cross join lateral (<page>) page where t.total > <offset>
 *
 * - The total is a one-row subquery of its own, computed once (`offset 0` keeps PostgreSQL from
 *   folding it into the outer query, where it ran once per row returned).
 * - `page` selects the table's columns in their stored order and nothing else, so its scan hands
 *   on each row as stored. With the total among its columns, the scan projected every row it
 *   read, the rows an offset skips too: a page of payments at `page[offset]=1000` took PostgreSQL
 *   twice the time (docs/internals.md#statements-and-plans). A test checks that each paged
 *   table's columns are declared in their stored order (src/db/stored-order.test.ts).
 * - `t.total > offset` is checked before the page is read, so a page at or past the total (or of
 *   a filter combination no row matches) reads no index at all.
 * - A cross join runs as a nested loop, and with one row on one side the page's rows keep the
 *   order its ORDER BY gave them.
 * - A deep page (`deep`) finds its rows' ids first, from the list's index alone, then reads
 *   those rows by primary key (byIds). It is a statement of its own, for a shape of its own
 *   (isDeep): a first page is cheaper read directly (docs/internals.md#statements-and-plans).
 */
export function countedPage<T extends PgTable, A extends Record<string, SQL> = Record<never, SQL>>(
  db: Executor,
  o: {
    table: T;
    where: SQL | undefined;
    orderBy: (PgColumn | SQL)[];
    total: SQL;
    /** Placeholders `limit` and `offset` unless given. */
    limit?: number | Placeholder;
    offset?: number | Placeholder;
    /** More of each row, computed for the page's rows only (SQL naming the page's columns as `"page"."<column>"`). */
    also?: A;
    /** Read the page's ids first, from the list's index (for a deep offset: isDeep). The index must hold the `where` and `orderBy` columns and the id. */
    deep?: boolean;
  },
): PageQuery<{ row: T['$inferSelect']; total: number } & { [K in keyof A]: A[K] extends SQL<infer V> ? V : never }> {
  const offset = o.offset ?? ph('offset');
  const limit = o.limit ?? ph('limit');
  const table = o.table as PgTable;
  const page = o.deep
    ? byIds(db, table, { ...o, limit, offset })
    : db
        .select()
        .from(table)
        .where(o.where)
        .orderBy(...o.orderBy)
        .limit(limit)
        .offset(offset)
        .as('page');
  return db
    .select({ row: columnsThrough(table, page), total: sql<number>`"t"."total"`.mapWith(Number), ...o.also })
    .from(sql`(select ${o.total} as total offset 0) as "t"`)
    .crossJoinLateral(page)
    .where(sql`"t"."total" > ${offset}`) as unknown as PageQuery<never>;
}

/** The table's columns read through a subquery of its rows (each as `"<alias>"."name"`), under the table's keys. */
function columnsThrough(table: PgTable, subquery: unknown): Record<string, PgColumn> {
  const through = subquery as Record<string, PgColumn>;
  return Object.fromEntries(Object.keys(getTableColumns(table)).map((k) => [k, through[k]!]));
}

/**
 * countedPage's deep page: the ids from the list's index, in order (skipping `offset` of them
 * costs no heap fetches), then each of those rows by primary key (`id`, every listed table's).
 * The ids go through an array and unnest … with ordinality, whose order the page keeps; the
 * row's subquery has a LIMIT so that PostgreSQL keeps it a probe per id. As a join of the ids
 * to the table, the plan kept for the prepared statement (its LIMIT a parameter, which
 * PostgreSQL takes for a tenth of the table) hashed the whole table.
 */
function byIds(
  db: Executor,
  table: PgTable,
  o: { where: SQL | undefined; orderBy: (PgColumn | SQL)[]; limit: number | Placeholder; offset: number | Placeholder },
) {
  const key = (table as unknown as { id: PgColumn }).id;
  const ids = db
    .select({ id: key })
    .from(table)
    .where(o.where)
    .orderBy(...o.orderBy)
    .limit(o.limit)
    .offset(o.offset);
  const row = db.select().from(table).where(sql`${key} = "ids"."id"`).limit(1).as('row');
  return db
    .select(columnsThrough(table, row))
    .from(sql`unnest(array(${ids})) with ordinality as "ids"("id", "n")`)
    .crossJoinLateral(row)
    .orderBy(sql`"ids"."n"`)
    .as('page');
}

/**
 * Whether a page that came back empty has a total of 0: a first page does. Each list reads a
 * page's rows and its total in one statement, one snapshot, so a first page with no rows had
 * nothing to count, and its total is not read again; only a page past the end (its offset at or
 * beyond the total) reads the total alone.
 */
export function emptyPageCountsNothing(page: { offset: number }): boolean {
  return page.offset === 0;
}

/** How many totals were read alone (the tests read it). */
export const totalStats = { alone: 0 };

/**
 * A total read alone, for an empty page past the end (an empty first page's is 0):
 * `build(shape)` gives the total with placeholders, built once per shape and prepared, as the
 * pages are (built-once.ts). Built anew by Drizzle's builder for each empty page, an intents
 * filter that matches nothing (whose total adds the due intents' counts) served a fifth fewer
 * pages a second (bench/profile-list.ts). It is selected beside the merchant's `clients` row
 * (a primary-key read) so that Drizzle prepares it like any select.
 */
export function totalAlone<S extends string>(build: (shape: S) => SQL) {
  const statement = builtOnce((db: Executor, shape: S) =>
    db
      .select({ n: sql<number>`${build(shape)}`.mapWith(Number) })
      .from(clients)
      .where(eq(clients.id, ph('clientId')))
      .prepare(''),
  );
  return async (db: Executor, shape: S, values: Record<string, unknown> & { clientId: string }): Promise<number> => {
    totalStats.alone++;
    return (await statement(db, shape, values))[0]?.n ?? 0;
  };
}

/**
 * Folds up to `limit` rows of list_count_deltas into list_counts in one statement (the rows leave
 * the deltas and enter the counts together). Rows another fold holds are skipped; counts are
 * written in key order, so two folds never deadlock. Returns how many delta rows it folded.
 */
export async function foldListCounts(db: Executor, limit: number): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(
    await db.execute(sql`
      with batch as (select ctid from list_count_deltas limit ${limit} for update skip locked),
      d as (delete from list_count_deltas x using batch where x.ctid = batch.ctid returning x.*),
      folded as (
        insert into list_counts as c (client_id, list, key, n)
        select client_id, list, key, sum(n) from d group by client_id, list, key order by client_id, list, key
        on conflict (client_id, list, key) do update set n = c.n + excluded.n
        returning 1
      )
      select count(*) as n from d`),
  );
  return Number(row?.n ?? 0);
}
