// Retention: events older than EVENT_RETENTION_DAYS leave the outbox with their deliveries and
// attempts, a batch at a time, so that the tables every movement writes to stop growing with
// the service's age (docs/operations.md#retention). An event with a delivery still pending (a
// replay of an old event, say) waits until that delivery ends.
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/open.ts';

/** The most events one run deletes; a full batch makes the job run again at once. */
export const RETENTION_BATCH = 5_000;

/** Deletes up to `batch` events created before `before`, their deliveries and attempts; returns how many events. */
export async function purgeOldEvents(db: Db, opts: { before: Date; batch?: number }): Promise<number> {
  // One statement: the three deletes see the same rows, and the foreign keys are checked at its
  // end, when the deliveries and attempts of the chosen events are gone too. No ORDER BY: the
  // oldest rows are the first ones in the heap, and a sort would read the whole table.
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`
      with old as (
        select e.id from events e
        where e.created_at < ${opts.before}
          and not exists (select 1 from event_deliveries d where d.event_id = e.id and d.state = 'pending')
        limit ${opts.batch ?? RETENTION_BATCH}
      ), attempts as (
        delete from delivery_attempts where event_id in (select id from old)
      ), deliveries as (
        delete from event_deliveries where event_id in (select id from old)
      ), gone as (
        delete from events where id in (select id from old) returning 1
      )
      select count(*)::int as n from gone`),
  );
  return rows[0]?.n ?? 0;
}
