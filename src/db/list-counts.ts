// The exact totals of the API's lists, kept by the database (migration 0021,
// docs/decisions.md#list-totals): list_counts holds each (merchant, list, key)'s count as of the
// last fold, list_count_deltas what statements changed since. A total is both summed in one
// statement, so a fold running meanwhile is seen wholly or not at all.
import { eq, Placeholder, sql, type SQL } from 'drizzle-orm';
import { builtOnce, ph } from './built-once.ts';
import { rowsOf, type Executor } from './open.ts';
import { clients } from './schema.ts';

/**
 * A counted total as an uncorrelated scalar subquery (PostgreSQL runs it once per statement, as
 * an InitPlan), to select beside a page's rows or alone: the rows of `list` for the merchant
 * whose key (JSON text) contains `match` (`{}`: all of them), or only the one key given as SQL.
 * A merchant's list has few keys (the product of its counted columns' values), read through the
 * primary key and the deltas' index.
 */
export function countedTotal(clientId: string | Placeholder, list: string | Placeholder, match: Record<string, string> | { key: SQL } | Placeholder): SQL {
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
 * The condition that the page has rows: its offset is below the counted total. PostgreSQL
 * checks it once before reading any row (a one-time filter on the total's InitPlan), so a page
 * past the end, or of a filter combination no row matches, reads no index at all, where it
 * would otherwise walk every entry of the index range looking for rows.
 */
export function withinTotal(total: SQL, offset: number | Placeholder): SQL {
  return sql`${total} > ${offset}`;
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
