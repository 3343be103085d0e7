// Drizzle's node-postgres transaction (drizzle-orm 0.45) takes a connection from the pool and
// sends BEGIN before its try/finally: when BEGIN fails (the pool handed out a connection that
// PostgreSQL had just closed in a restart, or the server is shutting down), the connection is
// never released. The pool still counts it as in use, so each such failure shrinks the pool
// for good; after DATABASE_POOL_SIZE of them every request waits forever for a connection and
// shutdown hangs on pool.end(). The chaos campaign found it (docs/operations.md, "Chaos
// campaign"). This is the same method with BEGIN inside the try, installed once on the class.
import { sql } from 'drizzle-orm';
import { NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres/session';
import type { PgTransactionConfig } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { commitError } from './errors.ts';
import { beginWithNextStatement, isPipelined } from './next-statement.ts';
import { commitCarrying } from './pipelined-begin.ts';

let installed = false;

interface SessionInternals {
  client: pg.Pool | pg.PoolClient;
  dialect: unknown;
  schema: unknown;
  options: unknown;
}

export function releaseConnectionsOnFailedBegin(): void {
  if (installed) return;
  installed = true;
  const proto = NodePgSession.prototype as unknown as {
    transaction: (fn: (tx: unknown) => Promise<unknown>, config?: PgTransactionConfig) => Promise<unknown>;
  };
  proto.transaction = async function (this: SessionInternals, fn, config) {
    const isPool =
      this.client instanceof pg.Pool || Object.getPrototypeOf(this.client).constructor.name.includes('Pool');
    const client = isPool ? await (this.client as pg.Pool).connect() : undefined;
    const Session = NodePgSession as unknown as new (...args: unknown[]) => unknown;
    const Tx = NodePgTransaction as unknown as new (
      ...args: unknown[]
    ) => { execute(q: unknown): Promise<unknown>; getTransactionConfigSQL(c: PgTransactionConfig): unknown };
    const session = client ? new Session(client, this.dialect, this.schema, this.options) : this;
    const tx = new Tx(this.dialect, session, this.schema);
    const conn = client ?? this.client;
    // BEGIN rides with the transaction's first statement (pipelined-begin.ts); a transaction
    // that ran none and deferred none never began, and has nothing to end. One with an
    // isolation level or access mode sends its BEGIN on its own.
    const pending = !config && isPipelined(conn) ? beginWithNextStatement(conn) : undefined;
    let broken: Error | undefined;
    try {
      if (!pending) await tx.execute(sql`begin${config ? sql` ${tx.getTransactionConfigSQL(config)}` : undefined}`);
      let result: unknown;
      try {
        result = await fn(tx);
      } catch (error) {
        // A ROLLBACK fails only on a broken connection, which PostgreSQL rolls back as it
        // closes it: the transaction's outcome is still the error that ended it (a refusal
        // stays a refusal, a lost connection a retryable error), never the ROLLBACK's (once
        // "Received unexpected parseComplete message from backend.", a 500 in the chaos
        // campaign). The connection is discarded, not pooled again.
        if (pending?.withdraw() !== false) {
          try {
            await tx.execute(sql`rollback`);
          } catch (rollbackError) {
            broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
          }
        }
        throw error;
      }
      const carried = pending?.commit();
      if (pending && !carried) return result;
      try {
        // A COMMIT that carries deferred statements (a group's last write) goes with them.
        if (carried?.deferred.length) await commitCarrying(conn, carried);
        else await tx.execute(sql`commit`);
      } catch (error) {
        // An error PostgreSQL sent means it rolled back; a lost answer leaves the outcome unknown.
        throw commitError(error);
      }
      return result;
    } finally {
      // pg-pool discards a released connection that is no longer queryable, or released with an error.
      client?.release(broken);
    }
  };
}
