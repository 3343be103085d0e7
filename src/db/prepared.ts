// Named prepared statements for hot reads. Building a query with Drizzle and having
// PostgreSQL parse and plan it again on every request was most of a GET's cost (measured:
// GET user went from ~4k to ~9k req/s). A statement is prepared once per database handle
// and executed with placeholders; PostgreSQL keeps its plan per connection.
import type { Db, Executor } from './open.ts';

interface Executable<P, R> {
  execute(params: P): Promise<R>;
}

const cache = new WeakMap<object, Map<string, Executable<never, unknown>>>();

/**
 * The statement `name` for `db`, built on first use. Only for the database handle itself:
 * inside a transaction, build the query normally (a statement is bound to its handle).
 */
export function prepared<P, R>(db: Db, name: string, build: (db: Db) => Executable<P, R>): Executable<P, R> {
  let forDb = cache.get(db);
  if (!forDb) {
    forDb = new Map();
    cache.set(db, forDb);
  }
  let stmt = forDb.get(name) as Executable<P, R> | undefined;
  if (!stmt) {
    stmt = build(db);
    forDb.set(name, stmt as Executable<never, unknown>);
  }
  return stmt;
}

/** True when `db` is an open transaction rather than the database handle. */
export function isTransaction(db: Executor): boolean {
  return typeof (db as { rollback?: unknown }).rollback === 'function';
}
