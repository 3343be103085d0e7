// Idempotency keys (docs/adr/0004-idempotency-in-the-database.md) for operations that run entirely in the database (deposit,
// withdraw, reward, refund). Scope: (client, operation, key). Everything happens inside the
// operation's own transaction:
//   1. one query takes a transaction-level advisory lock on the key's hash (without waiting)
//      and then reads the stored outcome, if any, with a snapshot taken after the lock;
//   2. lock not taken: another request with this key is running → 409 IdempotencyKeyInUse;
//      a stored outcome with another fingerprint → 409 IdempotencyKeyReused; with the same
//      fingerprint → its status and body, byte for byte (Idempotent-Replayed: true);
//   3. otherwise the operation runs and its outcome is stored in the same transaction.
// A failure or a crash rolls everything back together, and the lock ends with the
// transaction: a retry simply runs again. No lease, no separate commit per request.
import { hash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { FastifyReply } from 'fastify';
import type { Clock } from '../clock.ts';
import { rowsOf, type Db, type Tx } from '../db/open.ts';
import { WriteBatch, type WritePart } from '../db/batch.ts';
import { run as runStatement, shiftParams, statement } from '../db/statements.ts';
import { apiError } from './errors.ts';
import { JSONAPI } from './schemas.ts';
import { idempotentReplays } from '../observability/metrics.ts';

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

export interface StoredOutcome {
  status: number;
  /** The serialized body, exactly as first sent. */
  body: string;
  /** True when this is a replay of an earlier request's outcome. */
  replayed: boolean;
  /** An authorize's 402 that asks the user to act (link an account), not a decline (metrics only). */
  requiresAction?: true;
}

/** A stable hash of any JSON value (object keys sorted at every level). */
export function fingerprintOf(value: unknown): string {
  return hash('sha256', canonical(value));
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

/** Sends an outcome: the same bytes every time, marked when replayed. */
export function sendOutcome(reply: FastifyReply, o: StoredOutcome): FastifyReply {
  if (o.replayed) {
    idempotentReplays.inc();
    reply.header('idempotent-replayed', 'true');
  }
  return reply.code(o.status).type(JSONAPI).send(o.body);
}

// The lock and the read are one database function (migration 0007): the read must use a
// snapshot taken after the lock, which a single statement cannot give.
const CHECK_KEY_SQL = `select c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at
   from idempotency_check($1, $2, $3, $4) c`;

/**
 * A read the operation needs first, run in the same statement as the key check (one round trip
 * less): a SELECT of at most one row with its own $1..$n parameters. Its columns must not be
 * named like the check's (locked, fingerprint, status_code, response_body, expires_at).
 *
 * A preflight that locks rows writes `{{gate}}` into its WHERE clause: it becomes true only
 * when the operation will run (this request holds the key and nothing is stored under it), so
 * a replay or a request refused with 409 never takes the locks. Without a key it is `true`.
 */
export interface Preflight {
  name: string;
  text: string;
  params: unknown[];
}

const GATE = '{{gate}}';

function checkStatement(preflight?: Preflight) {
  if (!preflight) return statement('idempotency_check', CHECK_KEY_SQL);
  // A gated preflight gets the time as $5 (a key past its retention counts as absent).
  const text = preflight.text.includes(GATE)
    ? shiftParams(preflight.text, 5).replaceAll(
        GATE,
        '(c.locked and (c.fingerprint is null or c.expires_at <= $5::timestamptz))',
      )
    : shiftParams(preflight.text, 4);
  return statement(
    `idempotency_check_${preflight.name}`,
    `${CHECK_KEY_SQL.replace('select c.locked', 'select p.*, c.locked')} left join lateral (${text}) p on true`,
  );
}

/** Runs a preflight on its own (the operation was called without a key). */
export async function runPreflight(tx: Tx, preflight: Preflight): Promise<Record<string, unknown> | undefined> {
  const [row] = await runStatement<Record<string, unknown>>(
    tx,
    statement(`preflight_${preflight.name}`, preflight.text.replaceAll(GATE, 'true')),
    preflight.params,
  );
  return row;
}

// A key past its retention is overwritten (a live one is never reached: the check replays it).
const ON_KEY_CONFLICT = `on conflict (client_id, operation, key) do update set fingerprint = excluded.fingerprint,
     status_code = excluded.status_code, response_body = excluded.response_body, created_at = excluded.created_at, expires_at = excluded.expires_at`;

const STORE_KEY_SQL = `insert into idempotency_keys (client_id, operation, key, fingerprint, status_code, response_body, created_at, expires_at)
   values ($1, $2, $3, $4, $5, $6, $7, $8)
   ${ON_KEY_CONFLICT}`;

export interface KeyCheck {
  locked: boolean;
  fingerprint: string | null;
  status_code: number | null;
  response_body: string | null;
  expires_at: string | Date | null;
}

export type KeyState = { kind: 'new' } | { kind: 'replay'; outcome: StoredOutcome };

/**
 * In the caller's transaction: takes the key's advisory lock (409 IdempotencyKeyInUse when
 * another request holds it) and reads its stored outcome (409 IdempotencyKeyReused when the
 * fingerprint differs). With a preflight, also returns its row.
 */
export async function checkKey(
  tx: Tx,
  scope: IdempotencyScope,
  now: Date,
  preflight?: Preflight,
): Promise<{ state: KeyState; preflight?: Record<string, unknown> }> {
  const [check] = await runStatement<KeyCheck & Record<string, unknown>>(tx, checkStatement(preflight), [
    lockKeyOf(scope),
    scope.clientId,
    scope.operation,
    scope.key,
    ...(preflight?.text.includes(GATE) ? [now] : []),
    ...(preflight?.params ?? []),
  ]);
  return { ...interpretKeyCheck(check, scope, now), preflight: preflight ? check : undefined };
}

/**
 * What a key's check row means for this request: 409 IdempotencyKeyInUse when another request
 * holds the key, 409 IdempotencyKeyReused for other attributes, a replay of the stored outcome,
 * or new (nothing stored, or stored past its retention).
 */
export function interpretKeyCheck(
  check: KeyCheck | undefined,
  scope: IdempotencyScope,
  now: Date,
): { state: KeyState } {
  if (!check?.locked) throw keyInUse();
  const live = check.fingerprint !== null && new Date(check.expires_at!) > now;
  if (live) {
    if (check.fingerprint !== scope.fingerprint) {
      throw apiError(
        'IdempotencyKeyReused',
        `This idempotencyKey was used with different attributes for ${scope.operation}; use a new key.`,
        {
          pointer: '/data/attributes/idempotencyKey',
        },
      );
    }
    return {
      state: { kind: 'replay', outcome: { status: check.status_code!, body: check.response_body!, replayed: true } },
    };
  }
  return { state: { kind: 'new' } };
}

/** 409: another request with this key is in flight. */
const keyInUse = () =>
  apiError(
    'IdempotencyKeyInUse',
    'A request with this idempotencyKey is still running; retry the same request shortly.',
    { headers: { 'retry-after': '1' } },
  );

/** The advisory lock key of an idempotency key (the same string on every path). */
export const lockKeyOf = (scope: IdempotencyScope) => `${scope.clientId}:${scope.operation}:${scope.key}`;

/**
 * The members of a group with the same key as an earlier member of it left out and refused
 * 409 IdempotencyKeyInUse: the later is concurrent with the first, which is in flight (and one
 * statement could not store both outcomes). `scopeOf` is undefined for a member without a key.
 */
export function withoutRepeatedKeys<M extends { reject(err: unknown): void }>(
  members: M[],
  scopeOf: (m: M) => IdempotencyScope | undefined,
): M[] {
  const keys = new Set<string>();
  return members.filter((m) => {
    const scope = scopeOf(m);
    if (!scope) return true;
    const key = lockKeyOf(scope);
    if (!keys.has(key)) return keys.add(key);
    m.reject(keyInUse());
    return false;
  });
}

/** A scope whose key is optional (withdrawals, direct payments). */
export type OptionalKeyScope = Omit<IdempotencyScope, 'key'> & { key: string | undefined };

/** The scope of an optional key, or undefined without one. */
export const keyedScope = (scope: OptionalKeyScope): IdempotencyScope | undefined =>
  scope.key === undefined
    ? undefined
    : { clientId: scope.clientId, operation: scope.operation, key: scope.key, fingerprint: scope.fingerprint };

/**
 * A group check's lock key and key (idempotency_check). Without a key both are null:
 * pg_try_advisory_xact_lock(null) is null, so the check takes no lock and finds nothing. A fresh
 * object, which callers extend with Object.assign rather than copy with a spread (such a spread
 * made V8 build a map for every member: `node --log-maps`).
 */
export const checkedKeyOf = (scope: IdempotencyScope | undefined) => ({
  lockKey: scope ? lockKeyOf(scope) : null,
  key: scope?.key ?? null,
});

/** The stored outcome a group member replays, if any (interpretKeyCheck); nothing without a key. */
export function replayOf(
  check: KeyCheck | undefined,
  scope: IdempotencyScope | undefined,
  now: Date,
): StoredOutcome | undefined {
  if (!scope) return undefined;
  const { state } = interpretKeyCheck(check, scope, now);
  return state.kind === 'replay' ? state.outcome : undefined;
}

/** The write that stores an outcome under its key (a part of the caller's batch). */
export function storeOutcomePart(
  scope: IdempotencyScope,
  status: number,
  body: string,
  now: Date,
  expiresAt: Date,
): WritePart {
  return {
    name: 'idempotency_store',
    text: STORE_KEY_SQL,
    params: [scope.clientId, scope.operation, scope.key, scope.fingerprint, status, body, now, expiresAt],
    merge: {
      key: 'idempotency_store',
      item: keyRow({ scope, status, body, now, expiresAt }),
      combine: (rows) => storeRowsPart(rows as KeyRow[]),
    },
  };
}

// The rows travel as one JSON document: JSON.stringify escapes the response bodies natively,
// where an array parameter's elements are escaped one by one in JavaScript by the driver.
const STORE_KEYS_SQL = `insert into idempotency_keys (client_id, operation, key, fingerprint, status_code, response_body, created_at, expires_at)
   select * from json_to_recordset($1::json) as r(client_id uuid, operation text, key text, fingerprint text, status_code int,
     response_body text, created_at timestamptz, expires_at timestamptz)
   ${ON_KEY_CONFLICT}`;

interface StoredKey {
  scope: IdempotencyScope;
  status: number;
  body: string;
  now: Date;
  /** Default: the retention from now. */
  expiresAt?: Date;
}

type KeyRow = ReturnType<typeof keyRow>;

const keyRow = (o: StoredKey) => ({
  client_id: o.scope.clientId,
  operation: o.scope.operation,
  key: o.scope.key,
  fingerprint: o.scope.fingerprint,
  status_code: o.status,
  response_body: o.body,
  created_at: o.now,
  expires_at: o.expiresAt ?? new Date(o.now.getTime() + RETENTION_MS),
});

const storeRowsPart = (rows: KeyRow[]): WritePart => ({
  name: 'idempotency_store_many',
  text: STORE_KEYS_SQL,
  params: [JSON.stringify(rows)],
});

/** Stores many outcomes in one write (keys must differ: one statement cannot upsert a row twice). */
export const storeOutcomesPart = (outcomes: StoredKey[]): WritePart => storeRowsPart(outcomes.map(keyRow));

/**
 * Runs `run` at most once per key and returns its outcome, or the stored outcome of the
 * request that ran. The body is serialized with the route's response schema for `reply`.
 */
export async function idempotent(
  reply: FastifyReply,
  scope: IdempotencyScope,
  opts: { db: Db; clock: Clock },
  run: (tx: Tx, batch: WriteBatch, preflight: Record<string, unknown> | undefined) => Promise<Outcome>,
  preflight?: Preflight,
): Promise<StoredOutcome> {
  const now = opts.clock.now();
  return opts.db.transaction(async (tx) => {
    const checked = await checkKey(tx, scope, now, preflight);
    if (checked.state.kind === 'replay') return checked.state.outcome;
    // The operation may hand its writes to the batch; they and the stored response go to the
    // database as one statement.
    const batch = new WriteBatch();
    const outcome = await run(tx, batch, checked.preflight);
    const serialize = reply.getSerializationFunction(String(outcome.status), JSONAPI) ?? JSON.stringify;
    const body = serialize(outcome.body);
    // A key past its retention is simply overwritten.
    batch.add(storeOutcomePart(scope, outcome.status, body, now, new Date(now.getTime() + RETENTION_MS)));
    await batch.flush(tx);
    return { status: outcome.status, body, replayed: false };
  });
}

/**
 * A write whose idempotency key is optional: with a key, idempotent(); without one, the same
 * preflight, run and batch in a plain transaction (the writes go out as one statement), its
 * body serialized as the route's response.
 */
export async function keyedOrPlain(
  reply: FastifyReply,
  scope: OptionalKeyScope,
  opts: Parameters<typeof idempotent>[2],
  run: (tx: Tx, batch: WriteBatch, preflight: Record<string, unknown> | undefined) => Promise<Outcome>,
  preflight?: Preflight,
): Promise<StoredOutcome> {
  if (scope.key !== undefined) return idempotent(reply, { ...scope, key: scope.key }, opts, run, preflight);
  return opts.db.transaction(async (tx) => {
    const batch = new WriteBatch();
    const outcome = await run(tx, batch, preflight ? await runPreflight(tx, preflight) : undefined);
    await batch.flush(tx);
    const serialize = reply.getSerializationFunction(String(outcome.status), JSONAPI) ?? JSON.stringify;
    return { status: outcome.status, body: serialize(outcome.body), replayed: false };
  });
}

/** The most keys one purge deletes; a full batch makes the job run again at once. */
export const KEY_PURGE_BATCH = 5_000;

/**
 * Job: forgets keys past their retention, a batch at a time (in the order of
 * idempotency_keys_expiry_idx), so one run never holds a long transaction over a day's keys.
 * The table is not partitioned (docs/internals.md#retention-by-partitions): its primary key
 * is what makes a key unique.
 */
export async function purgeExpiredKeys(db: Db, now: Date, batch = KEY_PURGE_BATCH): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`with gone as (
        delete from idempotency_keys k using (
          select client_id, operation, key from idempotency_keys where expires_at <= ${now} order by expires_at limit ${batch}
        ) x where k.client_id = x.client_id and k.operation = x.operation and k.key = x.key and k.expires_at <= ${now}
        returning 1)
      select count(*)::int as n from gone`),
  );
  return rows[0]?.n ?? 0;
}
