// What a transaction's next statement carries to PostgreSQL ahead of itself: the transaction's
// BEGIN, and statements deferred to it (the accounts' lock). The state lives on the checked-out
// node-postgres client; pipelined-begin.ts sends it. Kept apart from that file so that the
// statements module can defer without loading the pg driver (PGlite never does).

const PENDING = Symbol('coffer.pendingBegin');
const DEFERRED = Symbol('coffer.deferred');
const IN_TRANSACTION = Symbol('coffer.inTransaction');
const INSTALLED = Symbol('coffer.pipelinedBegin');

/** A prepared statement sent ahead of the next one; its rows are skipped. */
export interface Deferred {
  name: string;
  text: string;
  values: unknown[];
}

type State = {
  [PENDING]?: true;
  [DEFERRED]?: Deferred[];
  [IN_TRANSACTION]?: true;
  [INSTALLED]?: true;
  connection?: { parsedStatements: Record<string, string> };
};

/**
 * Makes the client's next statement carry the transaction's BEGIN, and lets statements be
 * deferred to the next one until the transaction ends. `withdraw()`, at the transaction's end,
 * takes back what no statement has carried, and tells whether one did (the transaction began);
 * asked again, it gives the same answer.
 */
export function beginWithNextStatement(client: object): { withdraw(): boolean } {
  const c = client as State;
  c[PENDING] = true;
  c[IN_TRANSACTION] = true;
  let began: boolean | undefined;
  return {
    withdraw() {
      if (began === undefined) {
        began = c[PENDING] === undefined;
        delete c[PENDING];
        delete c[DEFERRED];
        delete c[IN_TRANSACTION];
      }
      return began;
    },
  };
}

/**
 * Sends a statement whose rows nobody reads with the transaction's next statement, in its
 * exchange; its failure is that statement's. Only inside a transaction that began through
 * beginWithNextStatement, and for a statement already prepared on the connection; otherwise
 * false, and the caller runs it now. A transaction that ends before another statement never
 * sends it: what it would have done (a lock) has nothing left to guard.
 */
export function deferToNextStatement(client: object, statement: Deferred): boolean {
  const c = client as State;
  if (!c[IN_TRANSACTION] || c.connection?.parsedStatements[statement.name] !== statement.text) return false;
  (c[DEFERRED] ??= []).push(statement);
  return true;
}

/** What the client's next statement carries, taken off the client; undefined if nothing. */
export function takeCarried(client: object): { begin: boolean; deferred: Deferred[] } | undefined {
  const c = client as State;
  if (!c[PENDING] && c[DEFERRED] === undefined) return undefined;
  const carried = { begin: c[PENDING] === true, deferred: c[DEFERRED] ?? [] };
  delete c[PENDING];
  delete c[DEFERRED];
  return carried;
}

/** Marks a node-postgres client whose statements carry what goes ahead of them (pipelined-begin.ts). */
export function markPipelined(client: object): void {
  (client as State)[INSTALLED] = true;
}

/** Whether the client (a checked-out pool client) carries BEGIN with its next statement. */
export function isPipelined(client: object): boolean {
  return (client as State)[INSTALLED] === true;
}
