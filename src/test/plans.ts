// The plan PostgreSQL keeps for a prepared statement once it stops planning each execution (its
// generic plan: parameters unknown), which is what a statement named by nameRepeatedStatements
// runs with under load. Sequential scans are switched off, so the plan shows an index wherever
// one can serve the statement, and a Seq Scan only where none can.
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db/open.ts';

const literal = (v: unknown) =>
  v === null ? 'null' : `'${(v instanceof Date ? v.toISOString() : String(v)).replace(/'/g, "''")}'`;

export async function genericPlan(db: Db, query: { sql: string; params: unknown[] }): Promise<string> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local plan_cache_mode = force_generic_plan`);
    await tx.execute(sql`set local enable_seqscan = off`);
    await tx.execute(sql.raw(`prepare plan_probe as ${query.sql}`));
    const rows = rowsOf<{ 'QUERY PLAN': string }>(
      await tx.execute(sql.raw(`explain execute plan_probe(${query.params.map(literal).join(', ')})`)),
    );
    await tx.execute(sql`deallocate plan_probe`);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
