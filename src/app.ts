// Builds the application context: database, authenticator, providers and background jobs.
// main.ts uses it for the server, the test harness for every test.
import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { openDatabase, type Database } from './db/open.ts';
import { JobRunner } from './jobs/runner.ts';
import { ClientAuthenticator } from './modules/clients/authenticate.ts';
import { decideDueKycApplications } from './modules/kyc/domain.ts';
import { retryDeactivations } from './modules/linked-accounts/domain.ts';
import { sandboxProviders, type Providers } from './providers/index.ts';

export interface ContextOptions {
  log: FastifyBaseLogger;
  clock?: Clock;
  providers?: Providers;
  /** An already open database (tests share one across apps). */
  database?: Database;
}

export async function createContext(config: Config, opts: ContextOptions): Promise<AppContext> {
  const database =
    opts.database ??
    (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize }));
  const clock = opts.clock ?? systemClock;
  const ctx: AppContext = {
    config,
    database,
    db: database.db,
    clock,
    log: opts.log,
    auth: new ClientAuthenticator(database.db, config.authCacheTtlMs),
    jobs: new JobRunner(opts.log),
    providers: opts.providers ?? sandboxProviders(),
  };
  registerJobs(ctx);
  return ctx;
}

function registerJobs(ctx: AppContext): void {
  const now = () => ctx.clock.now();
  ctx.jobs.register({
    name: 'kyc-decisions',
    intervalMs: 200,
    run: () => decideDueKycApplications(ctx.db, { provider: ctx.providers.kyc, now }),
  });
  ctx.jobs.register({
    name: 'linked-account-deactivations',
    intervalMs: 30_000,
    run: () => retryDeactivations(ctx.db, { provider: ctx.providers.bankLinking, now }),
  });
}
