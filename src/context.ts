// What every route and job is given: configuration, the database, the clock, the logger and
// the shared services. Built once by main.ts (or by the test harness).
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Sealer } from './crypto/sealer.ts';
import type { Database, Db } from './db/open.ts';
import type { JobRunner } from './jobs/runner.ts';
import type { ClientAuthenticator } from './modules/clients/authenticate.ts';
import type { WebhookDispatcher } from './modules/events/dispatcher.ts';
import type { RequestLogBuffer } from './modules/request-log/record.ts';
import type { Providers } from './providers/index.ts';

export interface AppContext {
  config: Config;
  database: Database;
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  auth: ClientAuthenticator;
  jobs: JobRunner;
  providers: Providers;
  /** Encrypts values kept at rest that must be read back (webhook secrets, card data). */
  sealer: Sealer;
  webhooks: WebhookDispatcher;
  /** API requests waiting to be written to the console's request log. */
  requestLog: RequestLogBuffer;
}
