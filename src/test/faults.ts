// Database faults for tests of what a failure leaves behind.
import { sql } from 'drizzle-orm';
import type { TestApp } from './harness.ts';

/**
 * Runs `fn` while the database refuses the writes to `table` for which `when` (a condition on
 * NEW) holds, with a serialization failure (40001), which callers see as a 503 to retry.
 */
export async function withRefusal<T>(t: TestApp, o: { table: string; on: 'insert' | 'update'; when: string }, fn: () => Promise<T>): Promise<T> {
  const name = `refuse_${o.table}_${o.on}`;
  await t.ctx.db.execute(sql.raw(`create function ${name}() returns trigger language plpgsql as $$
    begin if ${o.when} then raise exception 'refused' using errcode = '40001'; end if; return new; end $$`));
  await t.ctx.db.execute(sql.raw(`create trigger ${name} before ${o.on} on ${o.table} for each row execute function ${name}()`));
  try {
    return await fn();
  } finally {
    await t.ctx.db.execute(sql.raw(`drop trigger ${name} on ${o.table}`));
    await t.ctx.db.execute(sql.raw(`drop function ${name}()`));
  }
}
