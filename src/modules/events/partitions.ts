// Retention by partitions (docs/operations.md#retention, docs/decisions.md). events,
// event_deliveries and delivery_attempts are partitioned by week of the event's id (migration
// 0020). The `event-retention` job keeps the weeks ahead created and drops the weeks past
// EVENT_RETENTION_DAYS, the three tables' partitions of a week together: a dropped partition
// leaves no dead rows and no index bloat behind, where deleting rows left both in the tables
// every payment writes to.
//
// Week bounds are the event ids' times, and ids come from the real clock (ids.ts), so the job
// reads the real clock too: a test clock moved ahead would not move the ids with it.
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/open.ts';

const DAY = 86_400_000;
const WEEK = 7 * DAY;
/** Weeks created ahead of the current one: an insert finds its week even if the job stops for two weeks. */
export const WEEKS_AHEAD = 2;
/** The most rows of the default partitions one run deletes; a full batch makes the job run again at once. */
export const RETENTION_BATCH = 5_000;
/** How long the job waits for a lock before trying again on its next run: writers queue behind its wait. */
const LOCK_TIMEOUT = '500ms';

/** The Monday (UTC, 00:00) of the week holding `at`. */
export function weekOf(at: Date): Date {
  const day = Math.floor(at.getTime() / DAY);
  // Day 0 (1970-01-01) was a Thursday, so (day + 3) % 7 counts the days since Monday.
  return new Date((day - ((day + 3) % 7)) * DAY);
}

const isoDate = (d: Date) => d.toISOString().slice(0, 10);

/** The smallest UUIDv7 of a moment (as event_partition_bound in SQL). */
export function boundOf(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The Mondays of the existing weekly partitions of events, oldest first. */
export async function eventWeeks(db: Db): Promise<Date[]> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'events'::regclass order by c.relname`),
  );
  return rows.flatMap((r) => {
    const m = /^events_p(\d{4})(\d{2})(\d{2})$/.exec(r.name);
    return m ? [new Date(`${m[1]}-${m[2]}-${m[3]}T00:00:00Z`)] : [];
  });
}

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
export async function maintainEventPartitions(db: Db, o: { now: Date; retentionDays: number; batch?: number }): Promise<RetentionRun> {
  const cutoff = new Date(o.now.getTime() - o.retentionDays * DAY);
  const run: RetentionRun = { created: 0, dropped: 0, kept: 0, deleted: 0 };

  // Weeks to have: from the first week not wholly expired that holds rows in the default
  // partition (there would be none unless the job was late), else the current week; up to
  // WEEKS_AHEAD weeks ahead.
  const current = weekOf(o.now);
  const [stray] = rowsOf<{ id: string | null }>(
    await db.execute(sql`select id::text as id from events_default where id >= ${boundOf(weekOf(cutoff))}::uuid and id < ${boundOf(current)}::uuid order by id limit 1`),
  );
  let from = current;
  if (stray?.id) from = weekOf(new Date(parseInt(stray.id.replaceAll('-', '').slice(0, 12), 16)));
  for (let w = from; w.getTime() <= current.getTime() + WEEKS_AHEAD * WEEK; w = new Date(w.getTime() + WEEK)) {
    if (await locked(db, async (tx) => rowsOf<{ made: boolean }>(await tx.execute(sql`select create_event_partitions(${isoDate(w)}::date) as made`))[0]?.made)) run.created++;
  }

  for (const w of await eventWeeks(db)) {
    if (w.getTime() + WEEK > cutoff.getTime()) break;
    const kept = await locked(db, async (tx) => rowsOf<{ kept: number }>(await tx.execute(sql`select drop_event_partitions(${isoDate(w)}::date) as kept`))[0]?.kept);
    if (kept === undefined) continue;
    run.dropped++;
    run.kept += kept;
  }

  run.deleted = await purgeDefaultPartitions(db, { before: cutoff, batch: o.batch ?? RETENTION_BATCH });
  return run;
}

/**
 * Runs `fn` in a transaction with a short lock timeout; undefined when a lock was not had in
 * time (the next run tries again). With lock_timeout under deadlock_timeout (1 s), a deadlock
 * with a request ends this transaction, never the request's. One process at a time changes the
 * partitions (a transaction's advisory lock, which a transaction-mode pooler keeps): another
 * process's run skips the step rather than fail on a table just created or dropped.
 */
async function locked<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T | undefined> {
  try {
    return await db.transaction(async (tx) => {
      const [turn] = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('coffer:event-partitions')) as ok`));
      if (!turn?.ok) return undefined;
      await tx.execute(sql.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`));
      return fn(tx as unknown as Db);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '55P03' || (err as { cause?: { code?: string } }).cause?.code === '55P03') return undefined;
    throw err;
  }
}

/**
 * Deletes up to `batch` events of the default partition created before `before` (by their ids'
 * time), with their deliveries and attempts, leaving those with a delivery still pending.
 * The default partitions hold only strays: kept events of dropped weeks, rows that came before
 * their week was created. One statement: the three deletes see the same rows.
 */
export async function purgeDefaultPartitions(db: Db, o: { before: Date; batch: number }): Promise<number> {
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
