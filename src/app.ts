// Builds the application context: database, authenticator, providers and background jobs.
// main.ts uses it for the server, the test harness for every test.
import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { resealOldValues } from './crypto/reseal.ts';
import { Sealer } from './crypto/sealer.ts';
import { foldListCounts } from './db/list-counts.ts';
import { deliveryQueueVacuum, maintainTables, needsTableMaintenance } from './db/maintenance.ts';
import { openDatabase, type Database } from './db/open.ts';
import { JobRunner } from './jobs/runner.ts';
import { ClientAuthenticator } from './modules/clients/authenticate.ts';
import { WebhookDispatcher } from './modules/events/dispatcher.ts';
import { maintainEventPartitions, RETENTION_BATCH } from './modules/events/partitions.ts';
import { checkDueTransfers, STATUS_BATCH } from './modules/bank-transfers/domain.ts';
import { decideDueKycApplications } from './modules/kyc/domain.ts';
import { KEY_PURGE_BATCH, purgeExpiredKeys } from './http/idempotency.ts';
import { retryDeactivations } from './modules/linked-accounts/domain.ts';
import { recoverAttempts } from './modules/payment-intents/authorize.ts';
import { expireIntents } from './modules/payment-intents/domain.ts';
import { authorizeDeps, renderContext } from './modules/payment-intents/routes.ts';
import {
  expireAuthorizations,
  PAYMENT_PULL_BATCH,
  sendPaymentPulls,
  SETTLE_BATCH,
  settlementJob,
} from './modules/payments/domain.ts';
import { foldPaymentRollup } from './modules/payments/sql.ts';
import { EXPIRY_BATCH, expireRewardClaims } from './modules/rewards/domain.ts';
import { PULL_BATCH, sendPendingPulls } from './modules/transactions/domain.ts';
import { PUSH_BATCH, sendPendingPushes } from './modules/withdrawals/domain.ts';
import { PAYOUT_BATCH, sendPendingPayouts } from './modules/counterparties/payouts.ts';
import { createProviders, type Providers } from './providers/index.ts';
import { runDueLedgerCheck } from './observability/ledger-check.ts';
import { RequestLogBuffer } from './modules/request-log/record.ts';
import { maintainRequestLog, REQUEST_LOG_PURGE_BATCH } from './modules/request-log/retention.ts';

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

/** Delta rows folded per run of console-payment-rollup (a full batch runs the next at once). */
const ROLLUP_BATCH = 10_000;
/** Delta rows folded per run of list-count-fold (a full batch runs the next at once). */
const LIST_COUNT_BATCH = 10_000;

function registerJobs(ctx: AppContext, opts: { maintenance: boolean }): void {
  const now = () => ctx.clock.now();
  const base = ctx.config.listeners.api.publicUrl;
  ctx.jobs.register({
    name: 'kyc-decisions',
    intervalMs: 200,
    // A change's events are written in the change's transaction (modules/kyc/events.ts).
    run: () => decideDueKycApplications(ctx.db, { provider: ctx.providers.kyc, now, baseUrl: base, log: ctx.log }),
  });
  ctx.jobs.register({
    name: 'webhook-delivery',
    intervalMs: ctx.config.webhooks.pollMs,
    run: () => ctx.webhooks.runOnce(),
  });
  const bank = ctx.providers.bankTransfers;
  ctx.jobs.register({
    name: 'bank-pulls',
    intervalMs: 250,
    batch: PULL_BATCH,
    run: () => sendPendingPulls(ctx.db, { provider: bank, now, log: ctx.log }),
  });
  ctx.jobs.register({
    name: 'bank-pushes',
    intervalMs: 250,
    batch: PUSH_BATCH,
    run: () => sendPendingPushes(ctx.db, { provider: bank, now, log: ctx.log }),
  });
  ctx.jobs.register({
    name: 'counterparty-payouts',
    intervalMs: 250,
    batch: PAYOUT_BATCH,
    run: () => sendPendingPayouts(ctx.db, { provider: bank, sealer: ctx.sealer, now, log: ctx.log }),
  });
  const rc = renderContext(ctx);
  ctx.jobs.register({
    name: 'payment-intent-expiry',
    intervalMs: 1_000,
    run: () => expireIntents(ctx.db, { rc, now }),
  });
  ctx.jobs.register({
    name: 'authorization-expiry',
    intervalMs: 60_000,
    run: () => expireAuthorizations(ctx.db, { rc, now }),
  });
  ctx.jobs.register({
    name: 'authorization-recovery',
    intervalMs: 5_000,
    run: () => recoverAttempts(authorizeDeps(ctx)),
  });
  ctx.jobs.register({
    name: 'reward-claim-expiry',
    intervalMs: 60_000,
    batch: EXPIRY_BATCH,
    run: () => expireRewardClaims(ctx.db, { baseUrl: base, now }),
  });
  // Captured payments settle at their settlement time, except (with a bank that reports status,
  // as every live one does) those with a bank part: that is pulled, and they settle or fail when
  // the bank reports, as deposits and withdrawals' pushes end (modules/bank-transfers).
  const reported = bank.reportsStatus;
  ctx.jobs.register({
    name: 'payment-settlement',
    intervalMs: 500,
    batch: SETTLE_BATCH,
    run: settlementJob(ctx.db, { rc, now, withoutBankPart: reported }),
  });
  if (reported) {
    ctx.jobs.register({
      name: 'payment-pulls',
      intervalMs: 250,
      batch: PAYMENT_PULL_BATCH,
      run: () => sendPaymentPulls(ctx.db, { provider: bank, now, log: ctx.log }),
    });
    ctx.jobs.register({
      name: 'bank-transfer-status',
      intervalMs: 250,
      batch: STATUS_BATCH,
      run: () => checkDueTransfers(ctx.db, { provider: bank, rc, now, log: ctx.log }),
    });
  }
  // PGlite has no autovacuum, and a PostgreSQL server may have it off (db/maintenance.ts): the
  // same thresholds, checked every minute.
  if (opts.maintenance)
    ctx.jobs.register({ name: 'table-maintenance', intervalMs: 60_000, run: () => maintainTables(ctx.db) });
  ctx.jobs.register({ name: 'webhook-queue-vacuum', intervalMs: 5_000, run: deliveryQueueVacuum(ctx.db) });
  ctx.jobs.register({
    name: 'idempotency-purge',
    intervalMs: 600_000,
    batch: KEY_PURGE_BATCH,
    run: () => purgeExpiredKeys(ctx.db, now()),
  });
  // Weeks of events, deliveries and attempts are created ahead and dropped past the retention
  // (modules/events/partitions.ts). By the real clock, as the ids the weeks are made of.
  const retentionDays = ctx.config.webhooks.eventRetentionDays;
  ctx.jobs.register({
    name: 'event-retention',
    intervalMs: 600_000,
    firstRunMs: 0,
    batch: RETENTION_BATCH,
    run: async () => (await maintainEventPartitions(ctx.db, { now: new Date(), retentionDays })).deleted,
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
  // process finds it due (observability/ledger-check.ts). Each process looks every minute (or
  // interval, if shorter), which shows the latest check in its metrics; the first look is at
  // start, so a new deployment's empty ledger is checked then, and a restarted process checks
  // only when no other did in the interval.
  const ledgerCheckMs = ctx.config.observability.ledgerCheckIntervalMs;
  if (ledgerCheckMs > 0) {
    ctx.jobs.register({
      name: 'ledger-check',
      intervalMs: Math.min(ledgerCheckMs, 60_000),
      firstRunMs: 0,
      run: () => runDueLedgerCheck(ctx.db, { log: ctx.log, now, intervalMs: ledgerCheckMs }),
    });
  }
  // The console's charts: what statements on payments changed (appended by triggers) folded
  // into the hourly rollup; charts read both, so this keeps the deltas short, not the charts exact.
  ctx.jobs.register({
    name: 'console-payment-rollup',
    intervalMs: 1_000,
    batch: ROLLUP_BATCH,
    run: () => foldPaymentRollup(ctx.db, ROLLUP_BATCH),
  });
  // The API lists' totals: what statements changed (appended by triggers) folded into
  // list_counts; a total reads both, so this keeps the deltas each total sums few, not totals exact.
  ctx.jobs.register({
    name: 'list-count-fold',
    intervalMs: 1_000,
    batch: LIST_COUNT_BATCH,
    run: () => foldListCounts(ctx.db, LIST_COUNT_BATCH),
  });
  // The console's request log, kept for its retention: written every 50 ms, so a request's row
  // leaves memory before most young-generation collections find it (each copies every row still buffered).
  ctx.jobs.register({ name: 'request-log-flush', intervalMs: 50, run: () => ctx.requestLog.flush(ctx.db) });
  // Its weeks, as the events' (modules/request-log/retention.ts): by the real clock, as its ids.
  ctx.jobs.register({
    name: 'request-log-retention',
    intervalMs: 600_000,
    firstRunMs: 0,
    batch: REQUEST_LOG_PURGE_BATCH,
    run: async () =>
      (await maintainRequestLog(ctx.db, { now: new Date(), retentionDays: ctx.config.console.requestLogRetentionDays }))
        .deleted,
  });
  ctx.jobs.register({
    name: 'linked-account-deactivations',
    intervalMs: 30_000,
    run: () => retryDeactivations(ctx.db, { provider: ctx.providers.bankLinking, now }),
  });
}
