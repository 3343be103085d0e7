// Retention by weekly partitions (docs/operations.md#retention, docs/internals.md#retention-by-partitions). A table kept
// this way (events with their deliveries and attempts, migration 0020; the request log, 0025) is
// partitioned by range of a UUIDv7 id, whose first 48 bits are its creation time, one partition
// a week from Monday 00:00 UTC named `<table>_pYYYYMMDD`, plus a default partition for any row
// outside every week. Its job keeps the weeks ahead created and drops the weeks past the
// retention: a dropped partition leaves no dead rows and no index bloat behind, where deleting
// rows left both in tables written on every request.
//
// Week bounds are the ids' times, and ids come from the real clock (ids.ts), so the jobs read the
// real clock too: a test clock moved ahead would not move the ids with it.
import { sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from './open.ts';

export const DAY = 86_400_000;
const WEEK = 7 * DAY;
/** Weeks created ahead of the current one: an insert finds its week even if the job stops for two weeks. */
export const WEEKS_AHEAD = 2;
/** How long a job waits for a lock before trying again on its next run: writers queue behind its wait. */
const LOCK_TIMEOUT = '500ms';

/** The Monday (UTC, 00:00) of the week holding `at`. */
export function weekOf(at: Date): Date {
  const day = Math.floor(at.getTime() / DAY);
  // Day 0 (1970-01-01) was a Thursday, so (day + 3) % 7 counts the days since Monday.
  return new Date((day - ((day + 3) % 7)) * DAY);
}

export const isoDate = (d: Date): string => d.toISOString().slice(0, 10);

/** The smallest UUIDv7 of a moment (as event_partition_bound in SQL). */
export function boundOf(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The time a UUIDv7 was made at. */
const timeOf = (id: string): Date => new Date(parseInt(id.replaceAll('-', '').slice(0, 12), 16));

/** The Mondays of the existing weekly partitions of `table`, oldest first. */
export async function partitionWeeks(db: Db, table: 'events' | 'request_log'): Promise<Date[]> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ${table}::regclass order by c.relname`),
  );
  const week = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`);
  return rows.flatMap((r) => {
    const m = week.exec(r.name);
    return m ? [new Date(`${m[1]}-${m[2]}-${m[3]}T00:00:00Z`)] : [];
  });
}

export interface WeeksRun {
  created: number;
  dropped: number;
  /** Rows of dropped weeks kept (in the default partition), as `drop` reports them. */
  kept: number;
}

/**
 * Creates the weeks to have and drops the weeks wholly older than the retention (`cutoff`). The
 * weeks to have run from the first week not wholly expired that holds rows in the default
 * partition (there are none unless the job was late), else the current week, up to WEEKS_AHEAD
 * weeks ahead. `create(monday)` and `drop(monday)` are the table's statements: `create` returns
 * `made` (whether it made the week), `drop` may return `kept` (rows it kept). `lock` names the
 * advisory lock that lets one process at a time change the table's partitions.
 */
export async function keepWeeks(
  db: Db,
  o: {
    table: 'events' | 'request_log';
    lock: string;
    now: Date;
    cutoff: Date;
    create: (monday: string) => SQL;
    drop: (monday: string) => SQL;
  },
): Promise<WeeksRun> {
  const run: WeeksRun = { created: 0, dropped: 0, kept: 0 };
  const current = weekOf(o.now);
  const stray = rowsOf<{ id: string | null }>(
    await db.execute(sql`select id::text as id from ${sql.identifier(`${o.table}_default`)}
      where id >= ${boundOf(weekOf(o.cutoff))}::uuid and id < ${boundOf(current)}::uuid order by id limit 1`),
  )[0]?.id;
  const from = stray ? weekOf(timeOf(stray)) : current;
  for (let w = from; w.getTime() <= current.getTime() + WEEKS_AHEAD * WEEK; w = new Date(w.getTime() + WEEK)) {
    const monday = isoDate(w);
    if (await locked(db, o.lock, async (tx) => rowsOf<{ made: boolean }>(await tx.execute(o.create(monday)))[0]?.made))
      run.created++;
  }
  for (const w of await partitionWeeks(db, o.table)) {
    if (w.getTime() + WEEK > o.cutoff.getTime()) break;
    const monday = isoDate(w);
    const kept = await locked(
      db,
      o.lock,
      async (tx) => rowsOf<{ kept?: number }>(await tx.execute(o.drop(monday)))[0]?.kept ?? 0,
    );
    if (kept === undefined) continue;
    run.dropped++;
    run.kept += kept;
  }
  return run;
}

/**
 * Runs `fn` in a transaction with a short lock timeout; undefined when a lock was not had in
 * time (the next run tries again). With lock_timeout under deadlock_timeout (1 s), a deadlock
 * with a request ends this transaction, never the request's. One process at a time changes a
 * table's partitions (a transaction's advisory lock, which a transaction-mode pooler keeps):
 * another process's run skips the step rather than fail on a table just created or dropped.
 */
async function locked<T>(db: Db, key: string, fn: (tx: Db) => Promise<T>): Promise<T | undefined> {
  try {
    return await db.transaction(async (tx) => {
      const [turn] = rowsOf<{ ok: boolean }>(
        await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext(${key})) as ok`),
      );
      if (!turn?.ok) return undefined;
      await tx.execute(sql.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`));
      return fn(tx as unknown as Db);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '55P03' || (err as { cause?: { code?: string } }).cause?.code === '55P03')
      return undefined;
    throw err;
  }
}
