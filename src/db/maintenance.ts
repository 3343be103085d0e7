// Autovacuum's work, where nothing else does it. PGlite runs one backend and no background
// workers, so nothing vacuums or analyzes its tables; a PostgreSQL server can have autovacuum
// turned off (this project's benchmark machine has). Without it statistics never come (the plans
// PostgreSQL caches for prepared statements stay those made for empty tables: docs/operations.md;
// the checkout benchmark saw the idempotency check scan its whole table) and the dead rows that
// updates leave are never reclaimed. Coffer then runs this as a job instead, with autovacuum's
// default thresholds: a table with more dead rows than 50 + 20% of its live ones is vacuumed, and
// so is one with more rows inserted since its last VACUUM than 1,000 + 20% of its live ones (the
// append-only ledger postings, events and logs, which leave no dead rows: without a VACUUM their
// pages are never marked all-visible, so an index-only scan of them reads the table too, and their
// rows wait to be frozen all at once by the anti-wraparound VACUUM that PostgreSQL forces even with
// autovacuum off); one with more changes since its last ANALYZE than 50 + 10% is analyzed.
// A PostgreSQL server with autovacuum on (the default) does this itself; the job is not
// registered there.
import { sql } from 'drizzle-orm';
import { rowsOf, type Database, type Db } from './open.ts';

const DUE = sql`select relname as name,
    n_dead_tup > 50 + 0.2 * n_live_tup or n_ins_since_vacuum > 1000 + 0.2 * n_live_tup as vacuum,
    n_mod_since_analyze > 50 + 0.1 * n_live_tup as analyze
  from pg_stat_user_tables where schemaname = 'public' order by relname`;

/** Vacuums and analyzes the tables that are due; returns how many it did. */
export async function maintainTables(db: Db): Promise<number> {
  let done = 0;
  for (const t of rowsOf<{ name: string; vacuum: boolean; analyze: boolean }>(await db.execute(DUE))) {
    if (!t.vacuum && !t.analyze) continue;
    const table = sql.identifier(t.name);
    await db.execute(t.vacuum ? sql`vacuum (analyze) ${table}` : sql`analyze ${table}`);
    done++;
  }
  return done;
}

/** Whether nothing but Coffer will vacuum and analyze its tables: PGlite, or autovacuum off. */
export async function needsTableMaintenance(database: Database): Promise<boolean> {
  if (database.kind === 'pglite') return true;
  const [row] = rowsOf<{ autovacuum: string }>(await database.db.execute(sql`show autovacuum`));
  return row?.autovacuum !== 'on';
}

/** Dead rows in the webhook queue that make a VACUUM of it worth its cost. */
const QUEUE_DEAD_ROWS = 1_000;

/**
 * Vacuums the queue of pending webhook deliveries (event_delivery_queue, migration 0027) once
 * it holds more than QUEUE_DEAD_ROWS dead rows: the claim walks its indexes from their oldest
 * entry, and every delivery that ended leaves an entry there until a VACUUM. The queue is as
 * small as the backlog, so a VACUUM of it takes milliseconds. Registered whether or not
 * autovacuum is on: autovacuum looks at each database once a minute (autovacuum_naptime), in
 * which time thousands of deliveries can end. SKIP_LOCKED: another process's VACUUM of it is
 * enough.
 *
 * Counted from what the last VACUUM here left: rows that a long transaction still sees cannot
 * be removed, and a VACUUM every few seconds would remove nothing until it ends. Returns a
 * function for the job that returns 1 when it vacuumed, 0 when not due.
 */
export function deliveryQueueVacuum(db: Db): () => Promise<number> {
  let left = 0;
  return async () => {
    const dead = await deadQueueRows(db);
    // Fewer than were left: another process's VACUUM removed them, or the counters were reset.
    if (dead < left) left = 0;
    if (dead - left <= QUEUE_DEAD_ROWS) return 0;
    await db.execute(sql`vacuum (skip_locked) event_delivery_queue`);
    left = await deadQueueRows(db);
    return 1;
  };
}

async function deadQueueRows(db: Db): Promise<number> {
  const [row] = rowsOf<{ dead: number | string }>(
    await db.execute(
      sql`select coalesce((select n_dead_tup from pg_stat_user_tables where schemaname = 'public' and relname = 'event_delivery_queue'), 0) as dead`,
    ),
  );
  return Number(row?.dead ?? 0);
}
