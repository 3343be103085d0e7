// Builds the application context: database, authenticator, providers and background jobs.
// main.ts uses it for the server, the test harness for every test.
import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { resealOldValues } from './db/reseal.ts';
import { Sealer } from './crypto/sealer.ts';
import { foldListCounts } from './db/list-counts.ts';
import { maintainTables, needsTableMaintenance } from './db/maintenance.ts';
import { openDatabase, type Database } from './db/open.ts';
import { JobRunner } from './jobs/runner.ts';
import { MODULES } from './modules/index.ts';
import { ClientAuthenticator } from './modules/clients/authenticate.ts';
import { WebhookDispatcher } from './modules/events/dispatcher.ts';
import { KEY_PURGE_BATCH, purgeExpiredKeys } from './http/idempotency.ts';
import { createProviders, type Providers } from './providers/index.ts';
import { runDueLedgerCheck } from './ledger/scheduled-check.ts';
import { RequestLogBuffer } from './modules/request-log/record.ts';

export interface ContextOptions {
  log: FastifyBaseLogger;
  clock?: Clock;
  /** Replaces some of the providers (tests; sandbox only). */
  providers?: Partial<Providers>;
  /** An already open database (tests share one across apps). */
  database?: Database;
  /** Replaces DNS resolution for webhook receivers (tests). */
  webhookLookup?: ConstructorParameters<typeof WebhookDispatcher>[0]['lookup'];
  /** Replaces the test of a public address for webhook receivers (tests). */
  webhookIsPublicAddress?: ConstructorParameters<typeof WebhookDispatcher>[0]['isPublicAddress'];
}

export async function createContext(config: Config, opts: ContextOptions): Promise<AppContext> {
  const database =
    opts.database ??
    (await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolSize: config.databasePoolSize,
      preparedStatements: config.databasePreparedStatements,
      timeouts: config.databaseTimeouts,
    }));
  const clock = opts.clock ?? systemClock;
  if (!config.cardEncryptionKey)
    throw new Error('CARD_ENCRYPTION_KEY is not set (the sandbox generates one in DATA_DIR at start)');
  const sealer = new Sealer(config.cardEncryptionKey, config.cardEncryptionOldKeys);
  const ctx: AppContext = {
    config,
    database,
    db: database.db,
    clock,
    log: opts.log,
    auth: new ClientAuthenticator(database.db, config.authCacheTtlMs, config.environment),
    jobs: new JobRunner(opts.log),
    providers: createProviders(config, database.db, opts.providers),
    sealer,
    webhooks: new WebhookDispatcher({
      db: database.db,
      clock,
      log: opts.log,
      sealer,
      ...config.webhooks,
      lookup: opts.webhookLookup,
      isPublicAddress: opts.webhookIsPublicAddress,
    }),
    requestLog: new RequestLogBuffer({ clock, enabled: config.console.requestLog, log: opts.log }),
  };
  if (config.webhooks.allowPrivate) {
    opts.log.warn(
      'WEBHOOK_ALLOW_PRIVATE is on: webhooks may reach loopback and private addresses (local development only)',
    );
  }
  const maintenance = await needsTableMaintenance(database);
  if (maintenance && database.kind === 'postgres') {
    opts.log.warn(
      'PostgreSQL autovacuum is off: Coffer vacuums and analyzes its own tables every minute instead (docs/operations.md). Turn autovacuum on.',
    );
  }
  registerJobs(ctx, { maintenance });
  return ctx;
}

/** Delta rows folded per run of list-count-fold (a full batch runs the next at once). */
const LIST_COUNT_BATCH = 10_000;

/** Every module's jobs (modules/index.ts), then the platform's own. */
function registerJobs(ctx: AppContext, opts: { maintenance: boolean }): void {
  for (const m of MODULES) for (const job of m.jobs?.(ctx) ?? []) ctx.jobs.register(job);
  // PGlite has no autovacuum, and a PostgreSQL server may have it off (db/maintenance.ts): the
  // same thresholds, checked every minute.
  if (opts.maintenance)
    ctx.jobs.register({ name: 'table-maintenance', intervalMs: 60_000, run: () => maintainTables(ctx.db) });
  ctx.jobs.register({
    name: 'idempotency-purge',
    intervalMs: 600_000,
    batch: KEY_PURGE_BATCH,
    run: () => purgeExpiredKeys(ctx.db, ctx.clock.now()),
  });
  // Key rotation: values sealed with an earlier key (or format) move to the current key. Values
  // sealed from now on are current, so once a pass finds nothing the job stays idle.
  let sealedValuesCurrent = false;
  ctx.jobs.register({
    name: 'reseal',
    intervalMs: 60_000,
    run: async () => {
      if (sealedValuesCurrent) return 0;
      const { resealed } = await resealOldValues(ctx.db, { sealer: ctx.sealer, log: ctx.log });
      sealedValuesCurrent = resealed === 0;
      return resealed;
    },
  });
  // The ledger's invariants (ledger/invariants.ts), their result and time in the metrics. The
  // check reads the whole ledger: once per interval for the whole deployment, by whichever
  // process finds it due (ledger/scheduled-check.ts). Each process looks every minute (or
  // interval, if shorter), which shows the latest check in its metrics; the first look is at
  // start, so a new deployment's empty ledger is checked then, and a restarted process checks
  // only when no other did in the interval.
  const ledgerCheckMs = ctx.config.observability.ledgerCheckIntervalMs;
  if (ledgerCheckMs > 0) {
    ctx.jobs.register({
      name: 'ledger-check',
      intervalMs: Math.min(ledgerCheckMs, 60_000),
      firstRunMs: 0,
      run: () => runDueLedgerCheck(ctx.db, { log: ctx.log, now: () => ctx.clock.now(), intervalMs: ledgerCheckMs }),
    });
  }
  // The API lists' totals: what statements changed (appended by triggers) folded into
  // list_counts; a total reads both, so this keeps the deltas each total sums few, not totals exact.
  ctx.jobs.register({
    name: 'list-count-fold',
    intervalMs: 1_000,
    batch: LIST_COUNT_BATCH,
    run: () => foldListCounts(ctx.db, LIST_COUNT_BATCH),
  });
}
