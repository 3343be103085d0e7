// The request log's retention (REQUEST_LOG_RETENTION_DAYS): request_log is partitioned by week of
// its ids (migration 0025, db/weeks.ts). The `request-log-retention` job keeps the weeks ahead
// created and drops the weeks wholly past the retention, so a request is kept at least the
// retention and at most a week more; dropping a week costs the same whatever it holds, where
// deleting a day of requests row by row left millions of dead rows in a table written each second.
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/open.ts';
import { DAY, keepWeeks, type WeeksRun } from '../../db/weeks.ts';
import { purgeDefaultRequestRows } from './sql.ts';

/** The most rows of the default partition one run deletes; a full batch makes the job run again at once. */
export const REQUEST_LOG_PURGE_BATCH = 5_000;

/**
 * One run, by the real clock (`now`): creates the weeks ahead (and any week within the retention
 * with rows in the default partition), drops the weeks wholly older than the retention, and
 * deletes from the default partition the rows older than it.
 */
export async function maintainRequestLog(
  db: Db,
  o: { now: Date; retentionDays: number; batch?: number },
): Promise<Omit<WeeksRun, 'kept'> & { deleted: number }> {
  const cutoff = new Date(o.now.getTime() - o.retentionDays * DAY);
  const { created, dropped } = await keepWeeks(db, {
    table: 'request_log',
    lock: 'coffer:request-log-partitions',
    now: o.now,
    cutoff,
    create: (monday) => sql`select create_request_log_partition(${monday}::date) as made`,
    drop: (monday) => sql`select drop_request_log_partition(${monday}::date)`,
  });
  return { created, dropped, deleted: await purgeDefaultRequestRows(db, cutoff, o.batch ?? REQUEST_LOG_PURGE_BATCH) };
}
