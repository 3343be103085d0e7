// Named prepared statements for the hottest money paths. Drizzle sends its statements
// unnamed, so PostgreSQL parses and plans each one again on every request; on a deposit that
// was most of the database's CPU (measured with pg_stat_statements). A named statement is
// parsed and planned once per connection, then only bound and executed. The statement runs
// on whatever the caller holds: the pool, a transaction's connection, or PGlite.
import { createHash } from 'node:crypto';
import type { Executor } from './executor.ts';
import { deferToNextStatement } from './next-statement.ts';

export interface Statement {
  name: string;
  text: string;
}

/** Declares a statement. Names must be unique per text (the driver caches by name). */
export function statement(name: string, text: string): Statement {
  const existing = declared.get(name);
  if (existing !== undefined && existing !== text)
    throw new Error(`statement ${name} declared twice with different text`);
  declared.set(name, text);
  return { name, text: withOpaqueArrays(text) };
}

/**
 * Each array parameter read through a scalar subquery: `$1::uuid[]` becomes
 * `(select $1::uuid[])::uuid[]`. PostgreSQL plans a prepared statement for the values of its
 * first five executions, then keeps one generic plan if that costs no more than those did. An
 * array's length is known when planning for the values (`unnest` of three ids: three rows) and
 * not in the generic plan (ten rows), so for the small groups of a server under moderate load
 * the generic plan always looked dearer and the statement was planned again on almost every
 * execution, planning costing more than running. Read
 * through a subquery, the array's length is unknown to both plans, which then cost the same, and
 * the generic plan is kept; the hot statements' arrays hold keys, which both plans look up by index.
 */
function withOpaqueArrays(text: string): string {
  return text.replace(
    /\$(\d+)::([a-z_]+)\[\]/g,
    (_, n: string, type: string) => `(select $${n}::${type}[])::${type}[]`,
  );
}

const declared = new Map<string, string>();

interface Queryable {
  query(config: unknown, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * Marks a node-postgres pool or connection as one that sends statements unnamed: behind a
 * transaction-mode pooler without prepared-statement tracking (PgBouncer before 1.21), a
 * statement prepared on one server connection is unknown on the next
 * (DATABASE_PREPARED_STATEMENTS=false; docs/scaling.md#behind-pgbouncer).
 */
export function markUnnamed(client: object): void {
  (client as Record<symbol, boolean>)[UNNAMED] = true;
}

const UNNAMED = Symbol('coffer.unnamedStatements');

/** Whether markUnnamed marked this pool or connection. */
function sendsUnnamed(client: object): boolean {
  return (client as Record<symbol, boolean | undefined>)[UNNAMED] === true;
}

/** Runs a statement on the executor's own connection (inside its transaction, if any). */
export async function run<R>(ex: Executor, st: Statement, params: unknown[]): Promise<R[]> {
  const client = clientOf(ex);
  // node-postgres (a Pool or a transaction's PoolClient) takes a named query config; PGlite
  // takes the text and keeps its own statement cache.
  if (isPgClient(client) && !sendsUnnamed(client)) {
    return (await client.query({ name: st.name, text: st.text, values: params })).rows as R[];
  }
  return (await client.query(st.text, params)).rows as R[];
}

/**
 * Runs a statement whose rows nobody reads (a lock, a group's last write) with the
 * transaction's next statement, or its COMMIT, in one exchange, where the connection allows it
 * (next-statement.ts); otherwise now. Its failure (a deadlock, a lock timeout, a refused write)
 * then surfaces as that statement's, which the callers treat as their transaction's failure
 * either way. It is timed and traced as part of that statement.
 */
export async function runWithNext(ex: Executor, st: Statement, params: unknown[]): Promise<void> {
  const client = clientOf(ex);
  // Unnamed where statements go unnamed (behind an older PgBouncer): parsed in its exchange.
  const name = sendsUnnamed(client) ? '' : st.name;
  if (deferToNextStatement(client, { name, text: st.text, values: params })) return;
  await run(ex, st, params);
}

/** The connection or pool a Drizzle executor runs its statements on. */
function clientOf(ex: Executor): Queryable {
  return (ex as unknown as { session: { client: Queryable } }).session.client;
}

function isPgClient(c: unknown): boolean {
  const proto = Object.getPrototypeOf(c) as { constructor?: { name?: string } } | null;
  const name = proto?.constructor?.name ?? '';
  return (
    name === 'Client' ||
    name === 'BoundPool' ||
    name === 'Pool' ||
    typeof (c as { connect?: unknown }).connect === 'function'
  );
}

/** Renumbers `$n` placeholders by `offset`, to embed one statement's SQL in another. */
export function shiftParams(text: string, offset: number): string {
  return offset === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}

/** Distinct statement texts named per process; past this, new texts go unnamed (see nameRepeatedStatements). */
const NAMED_TEXTS_CAP = 2_000;
const namedTexts = new Map<string, string>();
// The keyword must come first: a text that opens with a comment stays unnamed on purpose.
const NAMEABLE = /^\s*(select|with|insert|update|delete)\b/i;

/**
 * Names every parameterised SELECT, WITH, INSERT, UPDATE or DELETE that a connection is sent
 * unnamed (all of Drizzle's), by a hash of its text, so PostgreSQL parses and plans it once per
 * connection instead of once per request. On a list page that planning was a fifth to three
 * quarters of the database's time (bench/profile-list.ts): a query on the weekly-partitioned
 * events plans every partition, and each row's delivery state plans them again. The text is all
 * that decides the name, so a repeated query is found on any connection that ran it before; a text
 * seen for the first time costs one hash. Statements without parameters stay unnamed: they may hold
 * several statements (the migrations), which only the simple protocol runs. So does a text that
 * opens with a comment: a statement that must be planned for its values at each execution says why
 * there (the webhook worker's claim). The number of texts is bounded by the code's queries (filters
 * in fixed combinations, IN lists of bounded lengths); `NAMED_TEXTS_CAP` keeps a mistake from
 * growing every connection's statement cache without end.
 */
export function nameRepeatedStatements(client: { query(...args: unknown[]): unknown }): void {
  const query = client.query;
  client.query = function named(this: unknown, ...args: unknown[]) {
    const config = args[0] as { name?: string; text?: string; values?: unknown[] } | null;
    if (
      typeof config === 'object' &&
      config !== null &&
      !config.name && // unnamed: none, or '' (a statement built once: built-once.ts)
      typeof config.text === 'string' &&
      ((Array.isArray(args[1]) && args[1].length > 0) || (config.values?.length ?? 0) > 0) &&
      !sendsUnnamed(client)
    ) {
      const name = statementName(config.text);
      if (name !== undefined) args[0] = { ...config, name };
    }
    return query.apply(this, args);
  };
}

function statementName(text: string): string | undefined {
  const known = namedTexts.get(text);
  if (known !== undefined || !NAMEABLE.test(text) || namedTexts.size >= NAMED_TEXTS_CAP) return known;
  const name = `q_${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`;
  namedTexts.set(text, name);
  return name;
}
