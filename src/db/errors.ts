// Recognising PostgreSQL errors through Drizzle's wrapping (same codes on PGlite and pg).

function pgFields(err: unknown): { code?: string; constraint?: string } | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; constraint?: unknown; cause?: unknown };
    if (typeof x.code === 'string' && /^[0-9A-Z]{5}$/.test(x.code)) {
      return { code: x.code, constraint: typeof x.constraint === 'string' ? x.constraint : undefined };
    }
    e = x.cause;
  }
  return undefined;
}

/** The violated unique constraint's name, or undefined when err is something else. */
export function uniqueViolation(err: unknown): string | undefined {
  const f = pgFields(err);
  return f?.code === '23505' ? (f.constraint ?? '') : undefined;
}

/** The violated check constraint's name (e.g. a balance that would go negative). */
export function checkViolation(err: unknown): string | undefined {
  const f = pgFields(err);
  return f?.code === '23514' ? (f.constraint ?? '') : undefined;
}

export function sqlState(err: unknown): string | undefined {
  return pgFields(err)?.code;
}

/**
 * Postgres SQLSTATE classes and driver errors that mean "try again", not "bad request": among
 * them the connection timeouts (db/open.ts): 55P03 a lock not had within lock_timeout, 57014 a
 * statement cancelled at statement_timeout, 25P03 a session ended idle in a transaction.
 */
const RETRYABLE_SQLSTATE = /^(08|53|57P0[1-3]|57014|55P03|25P03|40001|40P01)/;
/** The timeouts' SQLSTATEs: the database is busy, not away. */
const TIMEOUT_SQLSTATE = /^(57014|55P03|25P03)$/;
const RETRYABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * node-postgres's messages for a connection that is gone or unusable. "Received unexpected …
 * message from backend" is its protocol falling out of step with the server's (seen in the chaos
 * campaign, through PgBouncer, while PostgreSQL restarted): it fails every query queued on the
 * connection and never uses it again.
 */
const CONNECTION_LOST =
  /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect|pool.*ended|Received unexpected \w+ message from backend/i;

export function isRetryableDatabaseError(err: unknown): boolean {
  let e: unknown = err;
  // Drizzle wraps driver errors; look through the cause chain.
  for (let depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof x.code === 'string' && (RETRYABLE_SQLSTATE.test(x.code) || RETRYABLE_ERRNO.has(x.code))) return true;
    if (typeof x.message === 'string' && CONNECTION_LOST.test(x.message)) return true;
    e = x.cause;
  }
  return false;
}

/** A statement that waited or ran past one of the connection's timeouts (retryable too). */
export function isDatabaseTimeout(err: unknown): boolean {
  const state = sqlState(err);
  return state !== undefined && TIMEOUT_SQLSTATE.test(state);
}

/**
 * A COMMIT that got no answer (the connection was lost while it was on its way): the
 * transaction may have committed or not. Whoever ran it must not run the same work again as if
 * nothing had been written; the request gets a retryable 503 (the cause is a connection error),
 * and a retry with its idempotency key replays what was committed.
 */
export class CommitOutcomeUnknown extends Error {
  constructor(override readonly cause: unknown) {
    super('the connection was lost during COMMIT: the transaction may have committed');
  }
}

/** A COMMIT failure is a definite rollback when PostgreSQL answered it with an error of its own. */
export function commitError(err: unknown): unknown {
  const state = sqlState(err);
  return state === undefined || /^(08|57P0)/.test(state) ? new CommitOutcomeUnknown(err) : err;
}
