// Statements built once. Drizzle builds a query's SQL text anew on every execution; on a list
// page that was a fifth of the server's CPU (a CPU profile: the builder's `is` checks and the
// text's assembly). A statement written with placeholders (`sql.placeholder`) is built once per
// shape (which filters it has) and database handle, then only executed with its values. It
// still goes out unnamed from Drizzle, so nameRepeatedStatements (statements.ts) names it by
// its text as before, and DATABASE_PREPARED_STATEMENTS=false still sends it unnamed.
import { sql, type Placeholder } from 'drizzle-orm';
import type { Executor } from './open.ts';

interface Executable<R> {
  execute(values: Record<string, unknown>): Promise<R>;
}

/** A placeholder, for a value given at execution. */
export const ph = <N extends string>(name: N): Placeholder<N> => sql.placeholder(name);

/** Shapes kept per statement and handle; past this (sorts on many keys, say), a shape is built each time. */
const MAX_SHAPES = 256;

/**
 * A statement per shape: `build(db, shape)` returns Drizzle's prepared query for that shape
 * (`.prepare('')`: no name of its own) or another executable of it (the API's list pages:
 * coalesced-pages.ts), kept per database handle (the pool, or PGlite; a transaction's handle
 * gets its own, dropped with it).
 */
export function builtOnce<S extends string, R>(build: (db: Executor, shape: S) => Executable<R>) {
  const byDb = new WeakMap<object, Map<S, Executable<R>>>();
  return (db: Executor, shape: S, values: Record<string, unknown>): Promise<R> => {
    let shapes = byDb.get(db);
    if (!shapes) byDb.set(db, (shapes = new Map()));
    let q = shapes.get(shape);
    if (!q) {
      q = build(db, shape);
      if (shapes.size < MAX_SHAPES) shapes.set(shape, q);
    }
    return q.execute(values);
  };
}
