// Composition: config → database → listeners → jobs, and an orderly shutdown.
import { inspect } from 'node:util';
import closeWithGrace from 'close-with-grace';
import { createContext } from './app.ts';
import { banner } from './banner.ts';
import { ensureDemoMerchant, resolveSandboxSecrets, secureDataDir } from './bootstrap.ts';
import { ConfigError, loadConfig } from './config.ts';
import { claimDatabaseEnvironment, EnvironmentMismatchError } from './db/deployment.ts';
import { DataDirInUseError, SchemaTooNewError } from './db/open.ts';
import { buildListeners, closeListeners, listen, PortInUseError } from './listeners/index.ts';
import { createLogger } from './log.ts';
import { closeProviders } from './providers/index.ts';
import { startTracing, stopTracing } from './observability/tracing.ts';

/**
 * The errors that mean this process must not start as it is set up: the configuration, a
 * database migrated by a newer build, a database claimed by the other environment, a data
 * folder or a port another process holds.
 */
const REFUSALS = [ConfigError, SchemaTooNewError, EnvironmentMismatchError, DataDirInUseError, PortInUseError];

/** Runs a step of the start; a refusal ends the process with one line and exit code 78 (EX_CONFIG), no stack. */
async function orRefuse<T>(step: () => Promise<T>, cleanup?: () => Promise<void>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!REFUSALS.some((kind) => err instanceof kind)) throw err;
    process.stderr.write(`coffer: ${(err as Error).message}\n`);
    await cleanup?.();
    process.exit(78);
  }
}

async function main(): Promise<void> {
  // Everything this process writes (DATA_DIR: PGlite's files, the lock, the sandbox's secrets)
  // is for this user only: files 0600, folders 0700.
  process.umask(0o077);
  const { config, generatedAdminToken } = await orRefuse(async () => {
    const fromEnv = loadConfig(process.env);
    if (fromEnv.environment === 'sandbox' || fromEnv.databaseUrl === undefined) await secureDataDir(fromEnv.dataDir);
    return { config: await resolveSandboxSecrets(fromEnv), generatedAdminToken: fromEnv.adminToken === undefined };
  });
  const log = createLogger(config);
  // Before anything that makes spans: the listeners add their hooks only with tracing on.
  const otlp = config.observability.otlpEndpoint;
  if (otlp)
    await startTracing({
      endpoint: otlp,
      serviceName: config.observability.serviceName,
      environment: config.environment,
    });
  if (config.trustProxy === true) {
    // Live refuses it (config.ts); the sandbox only warns.
    log.warn(
      "TRUST_PROXY=true believes any client's X-Forwarded-For, so a client can pick the address the rate limits count: give the proxies' addresses or CIDRs instead",
    );
  }
  const ctx = await orRefuse(() => createContext(config, { log }));
  await orRefuse(
    () => claimDatabaseEnvironment(ctx.db, { environment: config.environment, now: ctx.clock.now() }),
    () => ctx.database.close(),
  );
  const demo = await ensureDemoMerchant(ctx);
  const listeners = await buildListeners(ctx);
  const bound = await orRefuse(
    () => listen(ctx, listeners),
    async () => {
      await closeListeners(listeners);
      await ctx.database.close();
    },
  );
  if (config.workersEnabled) ctx.jobs.start();
  log.info({ listeners: bound, database: ctx.database.kind, environment: config.environment }, 'coffer started');

  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, stop jobs, close the database.
  closeWithGrace({ delay: 30_000 }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    await closeListeners(listeners);
    await ctx.jobs.stop();
    await ctx.requestLog
      .flush(ctx.db)
      .catch((err: unknown) => log.warn({ err }, 'the request log could not be written'));
    await ctx.webhooks.close();
    await closeProviders(ctx.providers);
    await ctx.database.close();
    await stopTracing().catch((err: unknown) => log.warn({ err }, 'could not send the last spans'));
    log.flush();
  });
  // After the handlers: a supervisor may signal as soon as it reads the banner, and a signal
  // that arrives before them kills the process outright.
  process.stdout.write(banner(config, ctx.database.kind, demo, { showAdminToken: generatedAdminToken }));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `coffer: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : inspect(err)}\n`,
  );
  process.exit(1);
});
