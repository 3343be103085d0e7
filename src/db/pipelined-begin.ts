// A transaction's BEGIN goes to PostgreSQL in the same exchange as its first statement (node-postgres).
//
// Every round trip of a transaction costs more than PostgreSQL's time: its answer waits for the
// event loop to come back to it, behind whatever requests arrived meanwhile. Timed in a deposit
// benchmark on two cores, BEGIN took 2.5 ms from send to answer (PostgreSQL needs microseconds),
// a sixth of a group's transaction (docs/benchmarks.md#money). Sent together, BEGIN and the first
// statement are one extended-protocol pipeline ending in a single Sync: PostgreSQL runs them in
// order, and if BEGIN fails the statement is skipped, never run outside the transaction.
//
// Only where that is plain: a first statement of the extended protocol (it has parameters or a
// name; a text without them may hold several statements, which only the simple protocol runs)
// that is not a portal read in pages, and, if named, already prepared on the connection (node-
// postgres marks a named statement prepared at the first ParseComplete of its exchange, which
// would be BEGIN's). Otherwise BEGIN goes first on its own, as before.
import pg from 'pg';

const PENDING = Symbol('coffer.pendingBegin');

type Client = { query(...args: unknown[]): unknown } & { [PENDING]?: true };
type QueryConfig = { text?: string; name?: string; values?: unknown[]; rows?: number; submit?: unknown };

/** node-postgres's Query, with the members the exchange below uses (not in its type declarations). */
const Query = pg.Query as unknown as new (config: QueryConfig, values?: unknown[]) => {
  callback?: (err: unknown, res: unknown) => void;
  requiresPreparation(): boolean;
  prepare(connection: unknown): void;
  handleCommandComplete(msg: unknown, connection: unknown): void;
};

/** The first statement, with the transaction's BEGIN sent before it in the same exchange. */
class BeginThen extends Query {
  #begun = false;

  override requiresPreparation(): boolean {
    return true;
  }

  /** Parse, Bind and Execute of BEGIN, then the statement's own messages and the one Sync. */
  override prepare(connection: unknown): void {
    const c = connection as { parse(q: object): void; bind(b: object): void; execute(e: object): void };
    c.parse({ text: 'begin', name: '' });
    c.bind({ portal: '', statement: '', values: [] });
    c.execute({ portal: '', rows: 0 });
    super.prepare(connection);
  }

  /** The first CommandComplete is BEGIN's; the statement's results start after it. */
  override handleCommandComplete(msg: unknown, connection: unknown): void {
    if (!this.#begun) {
      this.#begun = true;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }
}

/**
 * Makes the client's next statement carry the transaction's BEGIN. `withdraw()` takes it back if
 * no statement has yet, and tells whether one did (the transaction began); asked again, it gives
 * the same answer.
 */
export function beginWithNextStatement(client: object): { withdraw(): boolean } {
  const c = client as Client;
  c[PENDING] = true;
  let began: boolean | undefined;
  return {
    withdraw() {
      if (began === undefined) {
        began = c[PENDING] === undefined;
        delete c[PENDING];
      }
      return began;
    },
  };
}

const INSTALLED = Symbol('coffer.pipelinedBegin');

/** Whether the client (a checked-out pool client) carries BEGIN with its next statement. */
export function isPipelined(client: object): boolean {
  return (client as Record<symbol, unknown>)[INSTALLED] === true;
}

/** Installs the BEGIN-carrying path on a node-postgres client (innermost: it sees the named config). */
export function pipelineBegin(client: object): void {
  const c = client as Client & { connection: { parsedStatements: Record<string, string> } };
  (client as Record<symbol, unknown>)[INSTALLED] = true;
  const query = c.query;
  c.query = function pipelined(this: unknown, ...args: unknown[]) {
    if (!c[PENDING]) return query.apply(this, args);
    delete c[PENDING];
    const config = (typeof args[0] === 'string' ? { text: args[0] } : args[0]) as QueryConfig;
    const values = Array.isArray(args[1]) ? args[1] : config.values;
    const extended = (values?.length ?? 0) > 0 || !!config.name;
    const prepared = !config.name || c.connection.parsedStatements[config.name] !== undefined;
    if (typeof config.submit === 'function' || typeof args[args.length - 1] === 'function') {
      // A cursor or a callback's statement is answered as it is given: BEGIN goes ahead of it
      // in the client's queue, which sends each after the one before has been answered.
      void (query.call(this, 'begin') as Promise<unknown>).catch(() => {});
      return query.apply(this, args);
    }
    if (config.rows || !extended || !prepared) {
      // BEGIN on its own first; the statement after it has been answered.
      return (query.call(this, 'begin') as Promise<unknown>).then(() => query.apply(this, args));
    }
    const q = new BeginThen(config, values);
    const result = new Promise((resolve, reject) => {
      q.callback = (err, res) => (err ? reject(err) : resolve(res));
    });
    query.call(this, q);
    return result;
  };
}
