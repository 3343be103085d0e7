// Autovacuum's work, where nothing else does it. PGlite runs one backend and no background
// workers, so nothing vacuums or analyzes its tables; a PostgreSQL server can have autovacuum
// turned off (this project's benchmark machine has). Without it statistics never come (the plans
// PostgreSQL caches for prepared statements stay those made for empty tables: docs/operations.md;
// the checkout benchmark saw the idempotency check scan its whole table) and the dead rows that
// updates leave are never reclaimed. Coffer then runs this as a job instead, with autovacuum's
// default thresholds: a table with more dead rows than 50 + 20% of its live ones is vacuumed, one
// with more changes since its last ANALYZE than 50 + 10% is analyzed. A PostgreSQL server with
// autovacuum on (the default) does this itself; the job is not registered there.
import { sql } from 'drizzle-orm';
import { rowsOf, type Database, type Db } from './open.ts';

const DUE = sql`select relname as name,
    n_dead_tup > 50 + 0.2 * n_live_tup as vacuum,
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
