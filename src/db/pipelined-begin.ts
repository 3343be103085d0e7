// A transaction's BEGIN goes to PostgreSQL in the same exchange as its first statement, and a
// statement whose rows nobody reads (the accounts' lock, a group's last write) in the same
// exchange as the statement after it, or as the COMMIT when none follows (node-postgres).
//
// Every round trip of a transaction costs more than PostgreSQL's time: its answer waits for the
// event loop to come back to it, behind whatever requests arrived meanwhile: under load, BEGIN,
// the accounts' lock and COMMIT waited as long as the rest of a group's transaction
// (bench/profile-checkout.ts deposit shows it). Sent together, BEGIN, the deferred statements and the next
// statement (or COMMIT) are one extended-protocol pipeline ending in a single Sync: PostgreSQL
// runs them in order, and if one fails the rest are skipped (never run outside the transaction,
// never run without the lock before them, never committed), and the error is the carrying
// statement's.
//
// Only where that is plain: a carrying statement of the extended protocol (it has parameters or
// a name; a text without them may hold several statements, which only the simple protocol runs)
// that is not a portal read in pages, and, if named, already prepared on the connection (node-
// postgres marks a named statement prepared at the first ParseComplete of its exchange, which
// would be BEGIN's). A deferred statement is prepared on the connection, or unnamed (parsed in
// the exchange). Otherwise each goes on its own, in order.
import { createRequire } from 'node:module';
import pg from 'pg';
import { markPipelined, takeCarried, type Carried, type Deferred } from './next-statement.ts';

type Client = { query(...args: unknown[]): unknown; connection: { parsedStatements: Record<string, string> } };
type QueryConfig = { text?: string; name?: string; values?: unknown[]; rows?: number; submit?: unknown };
type Connection = { parse(q: object): void; bind(b: object): void; execute(e: object): void };

/** node-postgres's Query, with the members the exchange below uses (not in its type declarations). */
const Query = pg.Query as unknown as new (
  config: QueryConfig,
  values?: unknown[],
) => {
  callback?: (err: unknown, res: unknown) => void;
  requiresPreparation(): boolean;
  prepare(connection: unknown): void;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: unknown): void;
};
/** How node-postgres turns a parameter into its wire text (arrays, dates, JSON), as its own Bind does. */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };

/** The carrying statement, with BEGIN and the deferred statements sent before it in its exchange. */
class Carrying extends Query {
  /** CommandCompletes still to come before the statement's own: BEGIN's and each deferred one's. */
  #ahead: number;

  constructor(
    config: QueryConfig,
    values: unknown[] | undefined,
    private readonly begin: boolean,
    private readonly deferred: Deferred[],
  ) {
    super(config, values);
    this.#ahead = (begin ? 1 : 0) + deferred.length;
  }

  override requiresPreparation(): boolean {
    return true;
  }

  /**
   * BEGIN's Parse, Bind and Execute; each deferred statement's Bind and Execute (and Parse, for
   * an unnamed one: each Parse of the unnamed statement replaces the one before, already bound);
   * then the statement's own messages and the one Sync.
   */
  override prepare(connection: unknown): void {
    const c = connection as Connection;
    if (this.begin) {
      c.parse({ text: 'begin', name: '' });
      c.bind({ portal: '', statement: '', values: [] });
      c.execute({ portal: '', rows: 0 });
    }
    for (const d of this.deferred) {
      if (d.name === '') c.parse({ text: d.text, name: '' });
      c.bind({ portal: '', statement: d.name, values: d.values, valueMapper: prepareValue });
      c.execute({ portal: '', rows: 0 });
    }
    super.prepare(connection);
  }

  /** Rows before the statement's own are a deferred statement's (never described): skipped. */
  override handleDataRow(msg: unknown): void {
    if (this.#ahead === 0) super.handleDataRow(msg);
  }

  override handleCommandComplete(msg: unknown, connection: unknown): void {
    if (this.#ahead > 0) {
      this.#ahead--;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }
}

/** Installs the carrying path on a node-postgres client (innermost: it sees the named config). */
export function pipelineBegin(client: object): void {
  const c = client as Client;
  markPipelined(client);
  const query = c.query;
  c.query = function pipelined(this: unknown, ...args: unknown[]) {
    const carried = takeCarried(client);
    if (!carried) return query.apply(this, args);
    const { begin, deferred } = carried;
    const ahead: unknown[] = [...(begin ? ['begin'] : []), ...deferred];
    const config = (typeof args[0] === 'string' ? { text: args[0] } : args[0]) as QueryConfig;
    const values = Array.isArray(args[1]) ? args[1] : config.values;
    const extended = (values?.length ?? 0) > 0 || !!config.name;
    const prepared = !config.name || c.connection.parsedStatements[config.name] !== undefined;
    if (typeof config.submit === 'function' || typeof args[args.length - 1] === 'function') {
      // A cursor or a callback's statement is answered as it is given: what goes ahead of it is
      // queued before it, and the client sends each after the one before has been answered.
      for (const a of ahead) void (query.call(this, a) as Promise<unknown>).catch(() => {});
      return query.apply(this, args);
    }
    if (config.rows || !extended || !prepared) {
      // Each on its own first, in order; the statement after the last has been answered.
      let before: Promise<unknown> = Promise.resolve();
      for (const a of ahead) before = before.then(() => query.call(this, a));
      return before.then(() => query.apply(this, args));
    }
    return answerOf(new Carrying(config, values, begin, deferred), (q) => query.call(this, q));
  };
}

/** Submits a carrying query; its answer, as a promise. */
function answerOf(q: Carrying, submit: (q: Carrying) => void): Promise<unknown> {
  const answer = new Promise((resolve, reject) => {
    q.callback = (err, res) => (err ? reject(err) : resolve(res));
  });
  submit(q);
  return answer;
}

/**
 * The transaction's COMMIT with what it carries (next-statement.ts): BEGIN if nothing else has
 * gone, and the statements still deferred, all in one exchange. If one of them fails, PostgreSQL
 * skips the rest and the COMMIT, and the transaction is left failed: a ROLLBACK ends it, so the
 * connection goes back to the pool clean, and the error is thrown as PostgreSQL sent it (nothing
 * was written). An answer that never comes (a lost connection) is thrown as the driver's error.
 */
export async function commitCarrying(client: object, carried: Carried): Promise<void> {
  const c = client as Client;
  try {
    await answerOf(new Carrying({ text: 'commit' }, [], carried.begin, carried.deferred), (q) => c.query(q));
  } catch (err) {
    if (err instanceof pg.DatabaseError) {
      await (c.query('rollback') as Promise<unknown>).catch(() => {});
    }
    throw err;
  }
}
