// What a transaction's next statement carries to PostgreSQL ahead of itself: the transaction's
// BEGIN, and statements deferred to it (the accounts' lock, a group's last write, which then
// goes with the COMMIT). The state lives on the checked-out node-postgres client;
// pipelined-begin.ts sends it. Kept apart from that file so that the statements module can
// defer without loading the pg driver (PGlite never does).

const PENDING = Symbol('coffer.pendingBegin');
const DEFERRED = Symbol('coffer.deferred');
const IN_TRANSACTION = Symbol('coffer.inTransaction');
const INSTALLED = Symbol('coffer.pipelinedBegin');

/** A statement sent ahead of the next one; its rows are skipped. */
export interface Deferred {
  /** A statement prepared on the connection, or '' to send the text, parsed in the exchange. */
  name: string;
  text: string;
  values: unknown[];
}

type State = {
  [PENDING]?: true | undefined;
  [DEFERRED]?: Deferred[] | undefined;
  [IN_TRANSACTION]?: true | undefined;
  [INSTALLED]?: true;
  connection?: { parsedStatements: Record<string, string> };
};

/** What a statement (or the COMMIT) carries ahead of itself. */
export interface Carried {
  begin: boolean;
  deferred: Deferred[];
}

/**
 * Makes the client's next statement carry the transaction's BEGIN, and lets statements be
 * deferred to the next one until the transaction ends. At its end, `withdraw()` (a rollback)
 * takes back what no statement has carried and tells whether the transaction began; `commit()`
 * gives what the COMMIT must carry (statements still deferred, and BEGIN if nothing else has
 * gone), or undefined when the transaction neither began nor deferred anything: there is
 * nothing to commit. Either clears the client; asked again, withdraw gives the same answer.
 */
export function beginWithNextStatement(client: object): { withdraw(): boolean; commit(): Carried | undefined } {
  const c = client as State;
  c[PENDING] = true;
  c[IN_TRANSACTION] = true;
  let began: boolean | undefined;
  const end = (): Carried => {
    const carried = takeCarried(client) ?? { begin: false, deferred: [] };
    began ??= !carried.begin;
    c[IN_TRANSACTION] = undefined;
    return carried;
  };
  return {
    withdraw() {
      if (began === undefined) end();
      return began!;
    },
    commit() {
      const carried = end();
      return carried.begin && carried.deferred.length === 0 ? undefined : carried;
    },
  };
}

/**
 * Sends a statement whose rows nobody reads with the transaction's next statement, or with its
 * COMMIT if none follows, in that exchange; its failure is that statement's (or the COMMIT's).
 * A rollback never sends it. Only inside a transaction that began through
 * beginWithNextStatement, and for a named statement already prepared on the connection (or an
 * unnamed one); otherwise false, and the caller runs it now.
 */
export function deferToNextStatement(client: object, statement: Deferred): boolean {
  const c = client as State;
  if (!c[IN_TRANSACTION]) return false;
  if (statement.name !== '' && c.connection?.parsedStatements[statement.name] !== statement.text) return false;
  (c[DEFERRED] ??= []).push(statement);
  return true;
}

/** What the client's next statement carries, taken off the client; undefined if nothing. */
export function takeCarried(client: object): Carried | undefined {
  const c = client as State;
  if (!c[PENDING] && c[DEFERRED] === undefined) return undefined;
  const carried = { begin: c[PENDING] === true, deferred: c[DEFERRED] ?? [] };
  c[PENDING] = undefined;
  c[DEFERRED] = undefined;
  return carried;
}

/** Marks a node-postgres client whose statements carry what goes ahead of them (pipelined-begin.ts). */
export function markPipelined(client: object): void {
  // Every member is made here, in one order, and later only set (never deleted): a deleted
  // property turns node-postgres's Client into a dictionary, and every property read of its own
  // on every statement into a hash lookup.
  const c = client as State;
  c[INSTALLED] = true;
  c[PENDING] = undefined;
  c[DEFERRED] = undefined;
  c[IN_TRANSACTION] = undefined;
}

/** Whether the client (a checked-out pool client) carries BEGIN with its next statement. */
export function isPipelined(client: object): boolean {
  return (client as State)[INSTALLED] === true;
}
