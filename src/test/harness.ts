// Test harness: real listeners (Fastify inject) on a real database. All tests of one process
// share one database (PGlite starts in ~3 s and takes ~800 MB, so one instance serves every
// file); isolation comes from each test creating its own merchant, since every row is scoped
// by merchant. With DATABASE_URL set, a fresh database is created on that server for the run
// and dropped at the end.
import { Writable } from 'node:stream';
import { randomBytes, randomInt } from 'node:crypto';
import { after } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { createContext, type ContextOptions } from '../app.ts';
import { TestClock, type Clock } from '../clock.ts';
import { loadConfig, PROVIDER_URL_VARIABLES, type Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { openDatabase, type Database } from '../db/open.ts';
import { buildAdminListener } from '../listeners/admin.ts';
import { buildApiListener } from '../listeners/api.ts';
import { buildCardListener } from '../listeners/card.ts';
import { buildPayListener } from '../listeners/pay.ts';
import type { SharedRateLimitStore } from '../http/rate-limit.ts';
import type { App } from '../http/server.ts';
import type { ClientSettingsInput } from '../modules/clients/settings.ts';
import { createLogger } from '../log.ts';
import { closeProviders } from '../providers/index.ts';
import { recorded } from './responses.ts';

export const ADMIN_TOKEN = 'cft_cGoGW7p5oil4eLUS_k76M5si-xhPxPuhEIf_iZdVll4MFp5J';
export const JSONAPI = 'application/vnd.api+json';

const serverUrl = loadConfig(process.env).databaseUrl;
export const dbKind: 'pglite' | 'postgres' = serverUrl ? 'postgres' : 'pglite';

let shared: Promise<{ database: Database; url?: string }> | undefined;

// A test file run alone drops the run's databases when its tests end. The whole suite (all.ts,
// which sets COFFER_TEST_SUITE) registers that hook itself once it has imported every file: a
// root hook registered sooner, as this one would be at the first file's import, runs when the
// tests registered so far have ended, before the later files' tests create their databases.
// Only under the test runner (NODE_TEST_CONTEXT is set in the process it runs a file in): a
// script that borrows the harness (sdk-generate.ts) closes it itself.
if (process.env.NODE_TEST_CONTEXT && !process.env.COFFER_TEST_SUITE) after(closeTestDatabase);

/** The run's database, created on first use. */
export function testDatabase(): Promise<{ database: Database; url?: string }> {
  shared ??= (async () => {
    if (!serverUrl) {
      return { database: await openDatabase({ databaseUrl: undefined, dataDir: '', poolSize: 1, inMemory: true }) };
    }
    const name = `coffer_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const database = await openDatabase({ databaseUrl: url.toString(), dataDir: '', poolSize: 20 });
    const close = database.close;
    database.close = async () => {
      await close();
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`).catch(() => {});
      await c.end();
    };
    return { database, url: url.toString() };
  })();
  return shared;
}

const extraDatabases: string[] = [];

/**
 * For tests that start their own server processes: a separate fresh database on the
 * PostgreSQL server (dropped at the end), or undefined on PGlite (use a fresh DATA_DIR).
 */
export async function freshDatabaseUrl(): Promise<string | undefined> {
  if (!serverUrl) return undefined;
  const name = `coffer_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  extraDatabases.push(name);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A database of the test file's own, for tests that drop or create what the suite's shared one
 * must keep (weeks of partitions): a fresh database on the PostgreSQL server under test (`url`,
 * for a second session of its own), or an in-memory PGlite.
 */
export async function ownDatabase(): Promise<{ database: Database; url: string | undefined }> {
  const url = await freshDatabaseUrl();
  return {
    database: await openDatabase({ databaseUrl: url, dataDir: '', poolSize: url ? 10 : 1, inMemory: !url }),
    url,
  };
}

export async function closeTestDatabase(): Promise<void> {
  if (serverUrl && extraDatabases.length > 0) {
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    for (const name of extraDatabases.splice(0))
      await c.query(`drop database if exists ${name} with (force)`).catch(() => {});
    await c.end();
  }
  if (!shared) return;
  const { database } = await shared;
  shared = undefined;
  await database.close();
}

/**
 * Configuration for tests: fixed secrets, jobs off (tests run them), quiet logs, and the default
 * webhook address policy (tests that deliver to a receiver on loopback pass LOCAL_RECEIVERS).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    COFFER_ENV: 'sandbox',
    ADMIN_TOKEN,
    CARD_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    WIDGET_SIGNING_KEY: Buffer.alloc(32, 9).toString('base64'),
    BASE_URL: 'http://api.test',
    SECURE_URL: 'http://card.test',
    PAY_URL: 'http://pay.test',
    WORKERS: 'false',
    LOG_LEVEL: 'silent',
    AUTH_CACHE_TTL_MS: '0',
    // Live needs an adapter for every provider: tests of live that call none get addresses that refuse connections.
    ...(env.COFFER_ENV === 'live' ? UNREACHABLE_PROVIDERS : {}),
    // Every app of the run counts in one window (the clock stands still) from one address: the
    // limits are out of reach unless a test of them sets its own.
    CARD_RATE_LIMIT_PER_MINUTE: '100000000',
    PAY_RATE_LIMIT_PER_MINUTE: '100000000',
    ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
    USER_CHECK_RATE_LIMIT_PER_MINUTE: '100000',
    USER_CHECK_WALLET_LIMIT_PER_HOUR: '100000',
    ...env,
  });
}

/** A signing secret for tests (Standard Webhooks format, 32 bytes). */
export const PROVIDER_SIGNING_SECRET = `whsec_${Buffer.alloc(32, 11).toString('base64')}`;

/** Every provider URL set to `url` (one adapter serves every port), with the tests' signing secret. */
export function providerEnv(url: string): Record<string, string> {
  return Object.fromEntries([
    ...Object.values(PROVIDER_URL_VARIABLES).map((name) => [name, url]),
    ['PROVIDER_SIGNING_SECRET', PROVIDER_SIGNING_SECRET],
  ]);
}

const UNREACHABLE_PROVIDERS = providerEnv('http://127.0.0.1:9');

/** Environment for tests whose webhook receivers run on loopback (local development's opt-in). */
export const LOCAL_RECEIVERS = { WEBHOOK_ALLOW_PRIVATE: 'true' } as const;

export interface Merchant {
  clientId: string;
  secret: string;
  secretId: string;
  headers: Record<string, string>;
}

export interface Response<T = any> {
  status: number;
  headers: LightMyRequestResponse['headers'];
  body: T;
  raw: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Authenticate as this merchant (omit for no auth headers). */
  as?: Merchant;
  headers?: Record<string, string>;
  /** Send the body as-is (a string) instead of JSON-encoding it. */
  rawBody?: string;
}

/** A log destination for createTestApp that keeps every line written, in order (for tests of the log). */
export function logCapture(): { stream: NodeJS.WritableStream; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { stream, lines };
}

export interface TestApp {
  ctx: AppContext;
  rateLimitStore: SharedRateLimitStore;
  clock: TestClock;
  api: App;
  admin: App;
  card: App;
  pay: App;
  request<T = any>(method: string, url: string, opts?: RequestOptions): Promise<Response<T>>;
  adminRequest<T = any>(method: string, url: string, opts?: Omit<RequestOptions, 'as'>): Promise<Response<T>>;
  createMerchant(settings?: ClientSettingsInput): Promise<Merchant>;
  close(): Promise<void>;
}

async function inject(
  app: App,
  method: string,
  url: string,
  opts: RequestOptions,
  auth: Record<string, string>,
  record = false,
): Promise<Response> {
  const headers: Record<string, string> = { ...auth, ...opts.headers };
  let payload: string | undefined;
  if (opts.rawBody !== undefined) payload = opts.rawBody;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= JSONAPI;
  }
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  if (record)
    recorded.push({
      method,
      url,
      status: res.statusCode,
      contentType: res.headers['content-type'] as string | undefined,
      body: res.body,
    });
  let body: unknown;
  if (res.body.length > 0) {
    try {
      body = JSON.parse(res.body);
    } catch {
      body = res.body;
    }
  }
  return { status: res.statusCode, headers: res.headers, body, raw: res.body };
}

/** Where every test app's clock starts unless the test gives one. */
export const SUITE_CLOCK_START = new Date('2026-06-01T12:00:00Z');

/**
 * A clock start years before SUITE_CLOCK_START. A job's run takes the due work of every merchant
 * in the suite's shared database; at these times no other file's work is due, so a test that
 * counts a job's runs counts its own rows alone.
 */
export const BEFORE_THE_SUITE = new Date('2020-01-01T12:00:00Z');

/**
 * Runs a job until a run finds nothing (at most 100 runs) and returns what the runs handled. A
 * run takes the oldest due work of every merchant, a batch at a time, and the suite's files
 * share one database: one run need not reach a test's own rows, and a run's count is the test's
 * own only after this.
 */
export async function drainJob(t: TestApp, job: string): Promise<number> {
  let total = 0;
  for (let n = await t.ctx.jobs.runOnce(job), runs = 1; n > 0; n = await t.ctx.jobs.runOnce(job), runs++) {
    if (runs >= 100) throw new Error(`${job} still finds work after 100 runs`);
    total += n;
  }
  return total;
}

export async function createTestApp(
  opts: {
    env?: Record<string, string>;
    clock?: Clock;
    providers?: ContextOptions['providers'];
    logStream?: NodeJS.WritableStream;
    webhookLookup?: ContextOptions['webhookLookup'];
    webhookIsPublicAddress?: ContextOptions['webhookIsPublicAddress'];
    /** A database of the test's own (its caller closes it) instead of the run's shared one. */
    database?: Database;
  } = {},
): Promise<TestApp> {
  const database = opts.database ?? (await testDatabase()).database;
  const config = testConfig(opts.env);
  // Tests that use the system clock never call clock.advance.
  const clock = (opts.clock ?? new TestClock(SUITE_CLOCK_START)) as TestClock;
  const log = opts.logStream
    ? createLogger({ ...config, logLevel: 'info' }, opts.logStream as never)
    : pino({ level: 'silent' });
  // The harness shares one database between apps: closing an app must not close it.
  const ctx = await createContext(config, {
    log,
    clock,
    providers: opts.providers,
    webhookLookup: opts.webhookLookup,
    webhookIsPublicAddress: opts.webhookIsPublicAddress,
    database: { ...database, close: async () => {} },
  });
  const { app: api, rateLimitStore } = await buildApiListener(ctx);
  const admin = await buildAdminListener(ctx);
  const card = await buildCardListener(ctx);
  const pay = await buildPayListener(ctx);
  await Promise.all([api.ready(), admin.ready(), card.ready(), pay.ready()]);

  const t: TestApp = {
    ctx,
    rateLimitStore,
    clock,
    api,
    admin,
    card,
    pay,
    request: (method, url, o = {}) => inject(api, method, url, o, o.as?.headers ?? {}, true) as never,
    adminRequest: (method, url, o = {}) =>
      inject(admin, method, url, o, { authorization: `Bearer ${ADMIN_TOKEN}` }) as never,
    async createMerchant(settings) {
      const res = await t.adminRequest('POST', '/admin/v1/clients', {
        body: {
          data: {
            type: 'Client',
            attributes: { name: `Merchant ${randomBytes(3).toString('hex')}`, ...(settings ? { settings } : {}) },
          },
        },
      });
      if (res.status !== 201) throw new Error(`createMerchant failed: ${res.status} ${res.raw}`);
      const a = res.body.data.attributes;
      const clientId = res.body.data.id as string;
      return {
        clientId,
        secret: a.secret,
        secretId: a.secretId,
        headers: { 'client-id': clientId, authorization: `Bearer ${a.secret}` },
      };
    },
    async close() {
      await Promise.all([api.close(), admin.close(), card.close(), pay.close()]);
      await ctx.jobs.stop();
      await ctx.webhooks.close();
      await closeProviders(ctx.providers);
    },
  };
  return t;
}

// ----- small helpers used across test files ---------------------------------------------

let phoneSeq = Math.floor(Math.random() * 1e6);
/** A unique E.164 phone number. */
export function phone(): string {
  phoneSeq += 1;
  return `+1415${String(phoneSeq % 1e7).padStart(7, '0')}`;
}

/** A random source address (10.x.x.x), so rate-limit tests never share counters. */
export function randomIp(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}.${randomBytes(4).toString('hex')}@example.com`;
}

/** Creates a user through the API and returns its resource. */
export async function createUser(t: TestApp, as: Merchant, attributes: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/api/v1/users', {
    as,
    body: { data: { type: 'User', attributes: { phoneNumber: phone(), ...attributes } } },
  });
  if (res.status !== 201) throw new Error(`createUser failed: ${res.status} ${res.raw}`);
  return res.body.data as { id: string; attributes: Record<string, any> };
}

/** Asserts a JSON:API error response and returns its error objects. */
export function errorsOf(res: Response): {
  status: string;
  id: string;
  code: string;
  title: string;
  detail: string;
  source?: { pointer?: string; parameter?: string; header?: string };
  links?: { about?: string };
  meta: Record<string, unknown>;
}[] {
  if (!res.body || !Array.isArray(res.body.errors))
    throw new Error(`expected an error document, got ${res.status} ${res.raw}`);
  return res.body.errors;
}
