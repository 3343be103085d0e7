// Opens the database: PostgreSQL through `pg` when a URL is given, otherwise embedded PGlite
// in a data folder. Both run the same Drizzle code and the same migrations.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { markUnnamed, nameRepeatedStatements } from './statements.ts';
import { dbQueryDuration } from '../observability/metrics.ts';
import { trackCommits } from './commit-hooks.ts';
import { endSpan, SpanKind, startChildSpan, tracing, type Span } from '../observability/tracing.ts';
import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from '../config.ts';

export type { Db, Executor, Tx } from './executor.ts';
import type { Db } from './executor.ts';

/** Rows of a raw `db.execute(sql...)` (both drivers return `{ rows }`). */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

/** UUIDs as one array parameter's literal, each once (a JS array in Drizzle's sql is a list of parameters). */
export function uuidArray(ids: Iterable<string>): string {
  return `{${[...new Set(ids)].join(',')}}`;
}

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Connections busy and requests waiting for one, for the metrics (PGlite: one session). */
  poolStats(): { inUse: number; waiting: number };
  close(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL('./migrations', import.meta.url));
const INT8 = 20;
const NUMERIC = 1700;

/**
 * int8 arrives as a string from `pg` and as a number or bigint from PGlite. Amounts are cents
 * and counts, far below 2^53, so both become exact JavaScript integers; anything larger is a
 * bug and fails loudly rather than rounding.
 */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${value} exceeds the safe integer range`);
  return n;
}

export interface OpenOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolSize: number;
  /** Run migrations after connecting (default true). */
  migrate?: boolean;
  /** PGlite only: keep the database in memory instead of dataDir (tests). */
  inMemory?: boolean;
  /** PostgreSQL only: named prepared statements on the hot paths (default true; false behind a transaction-mode pooler that cannot keep them). */
  preparedStatements?: boolean;
  /** PostgreSQL only: each pooled connection's timeouts (DATABASE_*_TIMEOUT_MS; the defaults when omitted). */
  timeouts?: DatabaseTimeouts;
}

/**
 * JIT off: it pays only for long analytical queries, and a short statement whose plan's
 * estimated cost passes jit_above_cost compiled itself on every execution (13 ms of a 15 ms
 * statement, seen with auto_explain).
 */
const SESSION_OPTIONS = '-c jit=off';

/**
 * The startup `options` of the pool's connections: set by PostgreSQL as each session starts, so
 * no statement is spent on them and nothing outlives a transaction behind a pooler. PgBouncer
 * does not pass `options` on: there they are set on the server side (docs/scaling.md).
 */
function poolOptions(t: DatabaseTimeouts): string {
  return `${SESSION_OPTIONS} -c statement_timeout=${t.statementMs} -c lock_timeout=${t.lockMs} -c idle_in_transaction_session_timeout=${t.idleInTransactionMs}`;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const database = opts.databaseUrl
    ? await openPostgres(
        opts.databaseUrl,
        opts.poolSize,
        opts.preparedStatements ?? true,
        opts.timeouts ?? DEFAULT_DATABASE_TIMEOUTS,
      )
    : await openPglite(opts);
  if (opts.migrate !== false) {
    try {
      await runMigrations(database);
    } catch (err) {
      await database.close();
      throw err;
    }
  }
  return database;
}

async function openPostgres(
  url: string,
  poolSize: number,
  preparedStatements: boolean,
  timeouts: DatabaseTimeouts,
): Promise<Database> {
  const { default: pg } = await import('pg');
  const { drizzle } = await import('drizzle-orm/node-postgres');
  const { releaseConnectionsOnFailedBegin } = await import('./pg-transaction.ts');
  const { pipelineBegin } = await import('./pipelined-begin.ts');
  releaseConnectionsOnFailedBegin();
  // Process-wide: Drizzle passes its own per-query parsers that fall back to pg's global ones,
  // so a pool-level parser would not reach raw `db.execute` results.
  pg.types.setTypeParser(INT8, parseInt8);
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    idleTimeoutMillis: 30_000,
    options: poolOptions(timeouts),
  });
  // A connection lost to a server restart must not crash the process. An idle client's error
  // reaches the pool, which drops it. A checked-out client (inside a transaction, between two
  // statements) emits the error on itself with no listener of the pool's, which Node would
  // throw; this listener keeps it quiet, the next statement on it fails as retryable (a 503),
  // and the pool discards it on release because it is no longer queryable.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    pipelineBegin(client);
    instrumentQueries(client as unknown as Queryable);
    if (preparedStatements) nameRepeatedStatements(client as unknown as Queryable);
    else markUnnamed(client);
  });
  if (!preparedStatements) markUnnamed(pool);
  const client = await pool.connect(); // fail fast on a bad URL
  client.release();
  const db = drizzle({ client: pool }) as unknown as Db;
  trackCommits(db);
  return {
    db,
    kind: 'postgres',
    poolStats: () => ({ inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };
}

async function openPglite(opts: OpenOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  let release: (() => Promise<void>) | undefined;
  let dataDir: string | undefined;
  if (!opts.inMemory) {
    dataDir = path.join(opts.dataDir, 'pglite');
    await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
    release = await lockDataDir(opts.dataDir);
  }
  const client = new PGlite({
    ...(dataDir ? { fs: await ownerOnlyFs(dataDir) } : {}),
    parsers: { [INT8]: (v: string) => parseInt8(v), [NUMERIC]: (v: string) => v },
  });
  try {
    await client.waitReady;
  } catch (err) {
    await release?.();
    throw err;
  }
  const busy = instrumentQueries(client as unknown as Queryable);
  // A transaction's statements run on the handle it is given: time those too.
  const transaction = client.transaction.bind(client);
  client.transaction = ((fn: (tx: unknown) => Promise<unknown>) =>
    transaction((tx) => {
      instrumentQueries(tx as unknown as Queryable, busy);
      return fn(tx) as never;
    })) as typeof client.transaction;
  const db = drizzle({ client }) as unknown as Db;
  trackCommits(db);
  return {
    db,
    kind: 'pglite',
    poolStats: () => ({ inUse: busy.n > 0 ? 1 : 0, waiting: Math.max(0, busy.n - 1) }),
    close: async () => {
      await client.close();
      await release?.();
    },
  };
}

interface Queryable {
  query(...args: unknown[]): unknown;
}

/**
 * Times every statement of a connection (coffer_db_query_duration_seconds) and, with tracing on,
 * makes it a child span of the request or call it serves. `pg` takes a callback (pg-pool's
 * query) or returns a promise; PGlite returns a promise. `inFlight` counts statements running.
 */
function instrumentQueries(conn: Queryable, inFlight: { n: number } = { n: 0 }): { n: number } {
  const query = conn.query;
  // No closure is made in this function: see afterStatement.
  conn.query = function instrumented(this: unknown, ...args: unknown[]) {
    const first = args[0] as { text?: string; submit?: unknown } | string;
    // A Submittable (cursor, stream) reports through its own events: passed through untimed.
    if (typeof first === 'object' && first !== null && typeof first.submit === 'function')
      return query.apply(this, args);
    const timer = new StatementTimer(inFlight, tracing.enabled ? statementSpan(first) : undefined);
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = afterStatement(timer, last as StatementCallback);
      return query.apply(this, args);
    }
    let answer: Promise<unknown>;
    try {
      answer = query.apply(this, args) as Promise<unknown>;
    } catch (err) {
      timer.done(err);
      throw err;
    }
    return timedAnswer(timer, answer);
  };
  return inFlight;
}

/** One statement's time (coffer_db_query_duration_seconds), its span and the count of those running. */
class StatementTimer {
  readonly #inFlight: { n: number };
  readonly #span: Span | undefined;
  readonly #started = performance.now();

  constructor(inFlight: { n: number }, span: Span | undefined) {
    this.#inFlight = inFlight;
    this.#span = span;
    inFlight.n++;
  }

  done(err?: unknown): void {
    this.#inFlight.n--;
    dbQueryDuration.observe((performance.now() - this.#started) / 1000);
    if (this.#span) endSpan(this.#span, err ?? undefined);
  }
}

type StatementCallback = (err: unknown, res: unknown) => void;

/**
 * pg-pool's callback for one statement, timed. Made here and not as an arrow inside
 * `instrumented`: there it shared that call's scope, and under load every statement's result
 * rows then lived through young-generation collections into the old generation
 * (docs/benchmarks.md#garbage-collection).
 */
function afterStatement(timer: StatementTimer, callback: StatementCallback): StatementCallback {
  return (err, res) => {
    timer.done(err ?? undefined);
    callback(err, res);
  };
}

/** A statement's answer (pg's promise, or PGlite's), timed; made here for the same reason. */
function timedAnswer(timer: StatementTimer, answer: Promise<unknown>): Promise<unknown> {
  return answer.then(
    (res) => {
      timer.done();
      return res;
    },
    (err: unknown) => {
      timer.done(err);
      throw err;
    },
  );
}

/** A database statement's span: its text (parameters are never included), not its values. */
function statementSpan(q: { text?: string } | string): Span | undefined {
  const text = typeof q === 'string' ? q : (q?.text ?? '');
  return startChildSpan('db.query', SpanKind.CLIENT, {
    'db.system.name': 'postgresql',
    'db.query.text': text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text,
  });
}

/**
 * PGlite's files on disk, readable by this user only. PostgreSQL's own file modes are 0600, but
 * PGlite's emscripten file system sets 0666 on every file it creates (a chmod after the create,
 * which the process umask does not reach); this makes those chmods owner-only.
 */
async function ownerOnlyFs(dataDir: string) {
  const { NodeFS } = await import('@electric-sql/pglite/nodefs');
  type Opts = Parameters<InstanceType<typeof NodeFS>['init']>[1];
  return new (class extends NodeFS {
    override async init(pg: Parameters<InstanceType<typeof NodeFS>['init']>[0], opts: Opts) {
      const out = await super.init(pg, opts);
      const preRun = [out.emscriptenOpts.preRun ?? []].flat();
      out.emscriptenOpts.preRun = [
        ...preRun,
        (mod: { FS: { chmod: (path: unknown, mode: number, dontFollow?: boolean) => void } }) => {
          const chmod = mod.FS.chmod.bind(mod.FS);
          mod.FS.chmod = (path, mode, dontFollow) => chmod(path, mode & ~0o077, dontFollow);
        },
      ] as never;
      return out;
    }
  })(dataDir);
}

/**
 * Two processes opening one PGlite folder corrupt it (a write was lost when tried), so the
 * folder is locked for the life of the process. The lock goes stale if its holder dies, so a
 * restart after a crash takes it over after a few seconds.
 */
async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const { default: lockfile } = await import('proper-lockfile');
  try {
    return await lockfile.lock(dir, {
      lockfilePath: path.join(dir, 'coffer.lock'),
      stale: 5_000,
      update: 1_000,
      retries: { retries: 6, minTimeout: 1_000, maxTimeout: 1_000 },
      realpath: false,
      onCompromised: (err) => {
        // Another process took the folder: continuing would corrupt it.
        console.error(`coffer: lost the lock on ${dir}: ${err.message}`);
        process.exit(70);
      },
    });
  } catch (err) {
    throw new DataDirInUseError(
      `${dir} is in use by another Coffer process (${(err as Error).message}): stop that one (is npm start running in another terminal?), or give this one a DATA_DIR of its own`,
    );
  }
}

/**
 * Runs the migrations not yet applied (`folder`: another set of them, for tests of a data
 * migration), after refusing a database that a newer build has migrated past this one's last.
 */
export async function runMigrations(database: Database, folder = MIGRATIONS): Promise<void> {
  if (database.kind === 'pglite') {
    await refuseNewerSchema(database, folder);
    const { migrate } = await import('drizzle-orm/pglite/migrator');
    await migrate(database.db as never, { migrationsFolder: folder });
    return;
  }
  const { migrate } = await import('drizzle-orm/node-postgres/migrator');
  // Several processes may start at once against one server: one migrates, the others wait. The
  // check runs under the lock too, so a newer build migrating meanwhile is seen once it is done.
  await withMigrationLock(database.db, async (migrator) => {
    await refuseNewerSchema(database, folder);
    await migrate(migrator as never, { migrationsFolder: folder });
  });
}

/** The database holds a migration this build does not know: a newer build migrated it. */
export class SchemaTooNewError extends Error {
  constructor(applied: number, known: { when: number; tag: string }) {
    super(
      `the database was migrated by a newer Coffer (a migration dated ${new Date(applied).toISOString()}; this build's last is ${known.tag}, ` +
        `dated ${new Date(known.when).toISOString()}). An older build would write rows the newer schema does not expect (webhook deliveries ` +
        'without their queue rows, for one): run the newer build, or restore the database from before its upgrade',
    );
  }
}

/**
 * Drizzle's migrator only applies what is dated after the database's last migration and says
 * nothing of migrations it does not know, so an older build (a rollback, a process left
 * running through a deploy and restarted) would start against a newer schema.
 */
async function refuseNewerSchema(database: Database, folder: string): Promise<void> {
  const journal = JSON.parse(await fs.readFile(path.join(folder, 'meta', '_journal.json'), 'utf8')) as {
    entries: { when: number; tag: string }[];
  };
  const known = journal.entries.at(-1);
  if (!known) return;
  // A new database has no migrations table yet.
  const [table] = rowsOf<{ found: boolean }>(
    await database.db.execute(sql`select to_regclass('drizzle.__drizzle_migrations') is not null as found`),
  );
  if (!table?.found) return;
  const [row] = rowsOf<{ applied: string | null }>(
    await database.db.execute(sql`select max(created_at)::text as applied from drizzle.__drizzle_migrations`),
  );
  const applied = row?.applied ? Number(row.applied) : 0;
  if (applied > known.when) throw new SchemaTooNewError(applied, known);
}

/**
 * Holds an advisory lock on a connection of its own while `fn` migrates on another, neither of
 * them the pool's nor bound by its timeouts: a migration may run longer than any request's
 * statement, and a process waits for another's migration however long it takes. The lock is a
 * transaction's, held by a transaction left open until `fn` ends: a session-level lock would
 * stay behind on whichever server connection a transaction-mode pooler (PgBouncer) gave the
 * lock statement, while an open transaction keeps its server connection until it ends (and its
 * `set local`s reach that connection whatever the pooler's server-side timeouts). Not a pooled
 * connection: with DATABASE_POOL_SIZE=1 the lock held the pool's only one, and the migrations
 * waited for it forever.
 */
async function withMigrationLock<T>(db: Db, fn: (migrator: unknown) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const { drizzle } = await import('drizzle-orm/node-postgres');
  const pool = (db as unknown as { $client: import('pg').Pool & { options: import('pg').PoolConfig } }).$client;
  const connect = async () => {
    const conn = new pg.Client({ ...pool.options, options: SESSION_OPTIONS });
    conn.on('error', () => {});
    await conn.connect();
    return conn;
  };
  const lock = await connect();
  try {
    await lock.query('begin');
    await lock.query(
      'set local statement_timeout = 0; set local lock_timeout = 0; set local idle_in_transaction_session_timeout = 0',
    );
    await lock.query(`select pg_advisory_xact_lock(hashtext('coffer:migrations'))`);
    const conn = await connect();
    try {
      return await fn(drizzle({ client: conn }));
    } finally {
      await conn.end().catch(() => {});
    }
  } finally {
    await lock.query('commit').catch(() => {});
    await lock.end().catch(() => {});
  }
}

/** DATA_DIR is locked by another process: starting on it would corrupt the embedded database. */
export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
}
