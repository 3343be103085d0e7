// Retention by partitions (docs/operations.md#retention, docs/internals.md#retention-by-partitions). events,
// event_deliveries and delivery_attempts are partitioned by week of the event's id (migration
// 0020, db/weeks.ts). The `event-retention` job keeps the weeks ahead created and drops the weeks
// past EVENT_RETENTION_DAYS, the three tables' partitions of a week together.
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/open.ts';
import { boundOf, DAY, keepWeeks, partitionWeeks } from '../../db/weeks.ts';

export { weekOf, WEEKS_AHEAD } from '../../db/weeks.ts';

/** The most rows of the default partitions one run deletes; a full batch makes the job run again at once. */
export const RETENTION_BATCH = 5_000;

/** The Mondays of the existing weekly partitions of events, oldest first. */
export const eventWeeks = (db: Db): Promise<Date[]> => partitionWeeks(db, 'events');

export interface RetentionRun {
  created: number;
  dropped: number;
  /** Events of dropped weeks kept (in the default partition) because a delivery was pending. */
  kept: number;
  /** Events deleted from the default partition. */
  deleted: number;
}

/**
 * One run: creates the weeks ahead (and any week, within the retention, that has rows in the
 * default partition), drops the weeks wholly older than the retention, and deletes from the
 * default partitions the events older than it with nothing pending.
 */
export async function maintainEventPartitions(
  db: Db,
  o: { now: Date; retentionDays: number; batch?: number },
): Promise<RetentionRun> {
  const cutoff = new Date(o.now.getTime() - o.retentionDays * DAY);
  const weeks = await keepWeeks(db, {
    table: 'events',
    lock: 'coffer:event-partitions',
    now: o.now,
    cutoff,
    create: (monday) => sql`select create_event_partitions(${monday}::date) as made`,
    drop: (monday) => sql`select drop_event_partitions(${monday}::date) as kept`,
  });
  return { ...weeks, deleted: await purgeDefaultPartitions(db, { before: cutoff, batch: o.batch ?? RETENTION_BATCH }) };
}

/**
 * Deletes up to `batch` events of the default partition created before `before` (by their ids'
 * time), with their deliveries and attempts, leaving those with a delivery still pending.
 * The default partitions hold only strays: kept events of dropped weeks, rows that came before
 * their week was created. One statement: the three deletes see the same rows.
 */
async function purgeDefaultPartitions(db: Db, o: { before: Date; batch: number }): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`
      with old as (
        select e.id from events_default e
        where e.id < ${boundOf(o.before)}::uuid
          and not exists (select 1 from event_deliveries_default d where d.event_id = e.id and d.state = 'pending')
        limit ${o.batch}
        -- An event a replay holds (lockEventForReplay) is passed over: its new delivery may be
        -- about to commit, unseen by this statement's snapshot.
        for update skip locked
      ), attempts as (
        delete from delivery_attempts_default where event_id in (select id from old)
      ), deliveries as (
        delete from event_deliveries_default where event_id in (select id from old)
      ), gone as (
        -- Through the parent table, whose statement trigger takes the events off the list
        -- totals (migration 0021); a delete from the partition itself would fire none.
        delete from events where id in (select id from old) returning 1
      )
      select count(*)::int as n from gone`),
  );
  return rows[0]?.n ?? 0;
}
