// Idempotency keys (decisions §4). Scope: (client, operation, key). The key row is committed
// "in flight" with a lease before the operation runs; the operation's changes and its stored
// response commit in one transaction. So:
//   - the same key and fingerprint after completion replays the stored status and body, byte
//     for byte, with Idempotent-Replayed: true;
//   - while the first request runs, the same key is 409 IdempotencyKeyInUse;
//   - a different fingerprint is 409 IdempotencyKeyReused;
//   - an operation that fails (validation, business rule, crash) stores nothing: the key is
//     released, or after a crash its lease runs out, and a retry runs the operation afresh;
//     since changes and response commit together, nothing was half done.
import { createHash, randomUUID } from 'node:crypto';
import { and, eq, lte, sql } from 'drizzle-orm';
import type { FastifyReply } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/open.ts';
import { idempotencyKeys } from '../db/schema.ts';
import { apiError } from './errors.ts';
import { JSONAPI } from './schemas.ts';

export const RETENTION_MS = 48 * 3600_000;

export interface IdempotencyScope {
  clientId: string;
  operation: string;
  key: string;
  /** What the key promises to mean: the path's resource id and the attributes that matter. */
  fingerprint: string;
}

export interface Outcome {
  status: number;
  body: unknown;
}

/** A stable hash of any JSON value (object keys sorted at every level). */
export function fingerprintOf(value: unknown): string {
  return createHash('sha256').update(canonical(value)).digest('hex');
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export interface IdempotencyOptions {
  db: Db;
  clock: Clock;
  /** How long a running request owns its key before a retry may take over (crash recovery). */
  leaseMs?: number;
}

export interface StoredOutcome {
  status: number;
  /** The serialized body, exactly as first sent. */
  body: string;
  /** True when this is a replay of an earlier request's outcome. */
  replayed: boolean;
}

/** Sends an outcome: the same bytes every time, marked when replayed. */
export function sendOutcome(reply: FastifyReply, o: StoredOutcome): FastifyReply {
  if (o.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(o.status).type(JSONAPI).send(o.body);
}

/**
 * Runs `run` at most once per key, in one transaction with its stored outcome, and returns
 * the outcome (or the stored one, for a replay). The body is serialized with the route's
 * response schema for `reply`.
 */
export async function idempotent(
  reply: FastifyReply,
  scope: IdempotencyScope,
  opts: IdempotencyOptions,
  run: (tx: Tx) => Promise<Outcome>,
): Promise<StoredOutcome> {
  const { db, clock } = opts;
  const leaseMs = opts.leaseMs ?? 30_000;
  const owner = randomUUID();
  const claimed = await claim(db, scope, owner, clock.now(), leaseMs);
  if (claimed.kind === 'replay') return { status: claimed.status, body: claimed.body, replayed: true };
  try {
    const { status, body } = await db.transaction(async (tx) => {
      const outcome = await run(tx);
      const serialize = reply.getSerializationFunction(String(outcome.status), JSONAPI) ?? JSON.stringify;
      const text = serialize(outcome.body);
      const updated = await tx
        .update(idempotencyKeys)
        .set({ state: 'completed', statusCode: outcome.status, responseBody: text, lockedUntil: null, owner: null })
        .where(and(keyWhere(scope), eq(idempotencyKeys.owner, owner)))
        .returning({ key: idempotencyKeys.key });
      // Our lease ran out and another request took the key over: let that one decide.
      if (updated.length === 0) throw apiError('IdempotencyKeyInUse');
      return { status: outcome.status, body: text };
    });
    return { status, body, replayed: false };
  } catch (err) {
    // Nothing was committed: release the key so a corrected retry runs again.
    await db.delete(idempotencyKeys).where(and(keyWhere(scope), eq(idempotencyKeys.owner, owner))).catch(() => {});
    throw err;
  }
}

function keyWhere(s: IdempotencyScope) {
  return and(eq(idempotencyKeys.clientId, s.clientId), eq(idempotencyKeys.operation, s.operation), eq(idempotencyKeys.key, s.key));
}

type Claim = { kind: 'run' } | { kind: 'replay'; status: number; body: string };

async function claim(db: Db, scope: IdempotencyScope, owner: string, now: Date, leaseMs: number): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insert(idempotencyKeys)
      .values({
        ...scope,
        state: 'in_flight',
        owner,
        lockedUntil: new Date(now.getTime() + leaseMs),
        createdAt: now,
        expiresAt: new Date(now.getTime() + RETENTION_MS),
      })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (inserted.length > 0) return { kind: 'run' };

    const [row] = await db.select().from(idempotencyKeys).where(keyWhere(scope));
    if (!row) continue; // released meanwhile: try to claim again
    if (row.expiresAt <= now) {
      // Past retention the key means nothing any more.
      await db.delete(idempotencyKeys).where(and(keyWhere(scope), lte(idempotencyKeys.expiresAt, now)));
      continue;
    }
    if (row.fingerprint !== scope.fingerprint) {
      throw apiError('IdempotencyKeyReused', `This idempotencyKey was used with different attributes for ${scope.operation}; use a new key.`, {
        pointer: '/data/attributes/idempotencyKey',
      });
    }
    if (row.state === 'completed') return { kind: 'replay', status: row.statusCode!, body: row.responseBody! };
    // In flight. A lease that ran out means its request died: take the key over.
    const taken = await db
      .update(idempotencyKeys)
      .set({ owner, lockedUntil: new Date(now.getTime() + leaseMs) })
      .where(and(keyWhere(scope), eq(idempotencyKeys.state, 'in_flight'), sql`${idempotencyKeys.lockedUntil} <= ${now}`))
      .returning({ key: idempotencyKeys.key });
    if (taken.length > 0) return { kind: 'run' };
    throw apiError('IdempotencyKeyInUse', 'A request with this idempotencyKey is still running; retry the same request shortly.', {
      headers: { 'retry-after': '1' },
    });
  }
  throw apiError('IdempotencyKeyInUse', undefined, { headers: { 'retry-after': '1' } });
}

/** Job: forgets keys past their retention. */
export async function purgeExpiredKeys(db: Db, now: Date): Promise<number> {
  const rows = await db.delete(idempotencyKeys).where(lte(idempotencyKeys.expiresAt, now)).returning({ key: idempotencyKeys.key });
  return rows.length;
}
