// Database faults for tests of what a failure leaves behind.
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import type { TestApp } from './harness.ts';

/**
 * Runs `fn` while the database refuses the writes to `table` for which `when` (a condition on
 * NEW) holds, by default with a serialization failure (40001), which callers see as a 503 to
 * retry; `raise` gives another error (as the USING clause of RAISE: errcode, constraint).
 */
export async function withRefusal<T>(
  t: TestApp,
  o: { table: string; on: 'insert' | 'update'; when: string; raise?: string },
  fn: () => Promise<T>,
): Promise<T> {
  const name = `refuse_${o.table}_${o.on}`;
  await t.ctx.db.execute(
    sql.raw(`create function ${name}() returns trigger language plpgsql as $$
    begin if ${o.when} then raise exception 'refused' using ${o.raise ?? "errcode = '40001'"}; end if; return new; end $$`),
  );
  await t.ctx.db.execute(
    sql.raw(`create trigger ${name} before ${o.on} on ${o.table} for each row execute function ${name}()`),
  );
  try {
    return await fn();
  } finally {
    await t.ctx.db.execute(sql.raw(`drop trigger ${name} on ${o.table}`));
    await t.ctx.db.execute(sql.raw(`drop function ${name}()`));
  }
}

/** The transaction that wrote each row (its xmin), by id: rows written by one transaction share it. */
export async function writersOf(t: TestApp, table: string, ids: string[]): Promise<{ id: string; xmin: string }[]> {
  return rowsOf<{ id: string; xmin: string }>(
    await t.ctx.db.execute(sql`select id, xmin::text as xmin from ${sql.identifier(table)} where id in ${ids}`),
  );
}
