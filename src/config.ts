// The only module that reads the environment. Everything else receives a Config.
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { tokenProblem } from './crypto/tokens.ts';

export type Environment = 'sandbox' | 'live';
export type ListenerName = 'api' | 'card' | 'pay' | 'admin' | 'console';
export const LISTENER_NAMES: readonly ListenerName[] = ['api', 'card', 'pay', 'admin', 'console'];

export interface ListenerConfig {
  port: number;
  /** Public address used in links, without a trailing slash. */
  publicUrl: string;
}

export interface Config {
  environment: Environment;
  host: string;
  listeners: Record<ListenerName, ListenerConfig>;
  /** Which listeners this process starts (all by default). */
  enabledListeners: ListenerName[];
  /** PostgreSQL URL; undefined means embedded PGlite in dataDir. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Named (server-side) prepared statements on the hot paths; off behind a pooler that cannot keep them (docs/scaling.md). */
  databasePreparedStatements: boolean;
  /** PostgreSQL's timeouts on every connection of the pool (0: none). */
  databaseTimeouts: DatabaseTimeouts;
  dataDir: string;
  /** Undefined in sandbox until resolved from DATA_DIR (see secrets.ts). */
  adminToken: string | undefined;
  cardEncryptionKey: Buffer | undefined;
  /** Earlier CARD_ENCRYPTION_KEYs: values sealed with them still open (key rotation). */
  cardEncryptionOldKeys: Buffer[];
  widgetSigningKey: Buffer | undefined;
  /** Where the admin listener binds: loopback unless told otherwise, whatever `host` is. */
  adminHost: string;
  rateLimit: {
    /** API listener, per source address. */
    perMinute: number;
    /** How often each process shares its counts through PostgreSQL. */
    syncIntervalMs: number;
    /** API listener, per merchant (Client-ID, once authenticated). */
    perClientPerMinute: number;
    /** Secure card, widget host and admin listeners, per source address. */
    cardPerMinute: number;
    payPerMinute: number;
    adminPerMinute: number;
    /** The widget host's user check: per source address, and per wallet. */
    userCheckPerMinute: number;
    userCheckPerWalletPerHour: number;
  };
  /** How long a process trusts a cached client record before reading it again. */
  authCacheTtlMs: number;
  bodyLimitBytes: number;
  /** Whose X-Forwarded-For is believed: nobody's, anybody's (sandbox only), or the listed proxies'. */
  trustProxy: boolean | TrustedProxies;
  /** Whole-request timeout; slow clients are cut off after this. */
  requestTimeoutMs: number;
  /** A connection whose client stops reading a response this long is reset (src/http/connections.ts). */
  writeTimeoutMs: number;
  /** Requests a connection may have waiting behind the one being answered (pipelined); one more closes it. */
  maxPipelinedRequests: number;
  logLevel: string;
  /** Background jobs (KYC decisions, expiry sweeps, webhook delivery). */
  workersEnabled: boolean;
  /**
   * How long past the card processor's latency an open authorization belongs to its process;
   * after that it is presumed dead and taken over (crash recovery).
   */
  authorizationLeaseMarginMs: number;
  webhooks: {
    /** A receiver must answer within this (docs/adr/0006-events-in-an-outbox.md: 15 s). */
    timeoutMs: number;
    /** Delays before each retry, in seconds (by default the schedule of docs/adr/0006-events-in-an-outbox.md). */
    retryDelaysS: number[];
    /** How often the worker looks for due deliveries when idle. */
    pollMs: number;
    /** Deliveries in flight at once per process. */
    concurrency: number;
    /** Events (with their deliveries and attempts) are dropped by the week once the whole week is older than this (EVENT_RETENTION_DAYS). */
    eventRetentionDays: number;
  } & WebhookGuards;
  /** The outside providers' adapters (docs/providers.md); see loadProviderConfig. */
  providers: ProviderConfig;
  /** Prometheus metrics and OpenTelemetry traces (docs/operations.md#metrics). */
  observability: ObservabilityConfig;
  /** The web console and the API request log it shows (docs/operations.md#the-console). */
  console: ConsoleConfig;
}

export interface ObservabilityConfig {
  /** A bearer token that reads GET /metrics on the admin listener besides ADMIN_TOKEN (a scraper needs no admin rights). */
  metricsToken: string | undefined;
  /** How often the deployment checks the ledger's invariants (once, in whichever worker process finds it due); 0: never (the admin API still can). */
  ledgerCheckIntervalMs: number;
  /** OTLP/HTTP base URL (`/v1/traces` is appended); undefined: tracing off. */
  otlpEndpoint: string | undefined;
  /** `service.name` of the spans. */
  serviceName: string;
}

export interface ConsoleConfig {
  /** How long a console session lasts after sign-in. */
  sessionTtlMs: number;
  /** Sign-in attempts per source address per minute (wrong ones count too). */
  signInPerMinute: number;
  /** Console pages per source address per minute. */
  perMinute: number;
  /**
   * The operator signs in on the console with ADMIN_TOKEN (off unless CONSOLE_OPERATOR_SIGN_IN=true):
   * the console listens on HOST, where merchants reach it, and the token belongs on ADMIN_HOST.
   */
  operatorSignIn: boolean;
  /** API requests are recorded for the console's request log (off: nothing is recorded). */
  requestLog: boolean;
  /** Days the request log keeps a request. */
  requestLogRetentionDays: number;
}

/**
 * What a connection may wait or run for, in milliseconds (0: no limit). A frozen process keeps
 * its row locks only until idleInTransactionMs ends its session; a request waiting on a lock
 * answers a retryable 503 after lockMs (docs/operations.md#database-timeouts).
 */
export interface DatabaseTimeouts {
  statementMs: number;
  lockMs: number;
  idleInTransactionMs: number;
}

/** The defaults of DATABASE_STATEMENT_TIMEOUT_MS, DATABASE_LOCK_TIMEOUT_MS and DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS. */
export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = {
  // A request's statement never needs a minute; the ledger check sets its own (ledger/invariants.ts).
  statementMs: 60_000,
  // Far past any wait for a running transaction's row (milliseconds), short of a client's patience.
  lockMs: 10_000,
  // Coffer's transactions never wait on anything outside the database: idle this long, the process is stuck.
  idleInTransactionMs: 15_000,
};

/** What keeps webhook receivers from reaching inside the network or from holding up other merchants. */
export interface WebhookGuards {
  /** Receivers on loopback, private and other non-public addresses are allowed (sandbox, local development only). */
  allowPrivate: boolean;
  /** Webhooks one merchant may have (deleted ones do not count). */
  maxPerMerchant: number;
  /** Attempts of one merchant in flight at once per process. */
  merchantConcurrency: number;
  /** How long connecting to a receiver (TCP and TLS) may take, apart from the answer's timeout. */
  connectTimeoutMs: number;
  /** Consecutive unreachable attempts (no answer: connect failures, timeouts) that open a host's circuit breaker. */
  breakerFailures: number;
  /** How long an open breaker holds the host's deliveries before one probe goes through. */
  breakerCooldownMs: number;
}

/** Retry delays after each failed attempt (docs/adr/0006-events-in-an-outbox.md): about three days in all. */
export const DEFAULT_WEBHOOK_RETRY_DELAYS_S = [5, 10, 30, 120, 600, 1800, 3600, 10800, 21600, 43200, 86400, 86400];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  const key32 = (name: string): Buffer | undefined => {
    const raw = read(name);
    if (raw === undefined) return undefined;
    const buf = Buffer.from(raw, 'base64');
    if (buf.length !== 32) {
      problems.push(`${name} must be 32 bytes encoded as base64`);
      return undefined;
    }
    return buf;
  };

  const delays = (name: string, fallback: number[]): number[] => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    const list = raw.split(',').map((x) => Number(x.trim()));
    if (list.length === 0 || list.length > 50 || list.some((n) => !Number.isFinite(n) || n <= 0 || n > 7 * 86_400)) {
      problems.push(`${name} must be a comma-separated list of positive delays in seconds (got "${raw}")`);
      return fallback;
    }
    return list;
  };

  const envName = read('COFFER_ENV') ?? 'sandbox';
  if (envName !== 'sandbox' && envName !== 'live')
    problems.push(`COFFER_ENV must be sandbox or live (got "${envName}")`);
  const environment: Environment = envName === 'live' ? 'live' : 'sandbox';

  const host = read('HOST') ?? '127.0.0.1';
  const port = (name: string, fallback: number) => int(name, fallback, 0, 65535);
  const url = (name: string, p: number): string => {
    const raw = read(name);
    if (raw === undefined) return `http://localhost:${p}`;
    try {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      return raw.replace(/\/+$/, '');
    } catch {
      problems.push(`${name} must be an http(s) URL (got "${raw}")`);
      return `http://localhost:${p}`;
    }
  };
  const apiPort = port('PORT', 3000);
  const cardPort = port('CARD_PORT', 3001);
  const payPort = port('PAY_PORT', 3002);
  const adminPort = port('ADMIN_PORT', 3003);
  const consolePort = port('CONSOLE_PORT', 3004);
  const listeners: Record<ListenerName, ListenerConfig> = {
    api: { port: apiPort, publicUrl: url('BASE_URL', apiPort) },
    card: { port: cardPort, publicUrl: url('SECURE_URL', cardPort) },
    pay: { port: payPort, publicUrl: url('PAY_URL', payPort) },
    admin: { port: adminPort, publicUrl: `http://localhost:${adminPort}` },
    console: { port: consolePort, publicUrl: url('CONSOLE_URL', consolePort) },
  };

  let enabledListeners: ListenerName[] = [...LISTENER_NAMES];
  const rawListeners = read('LISTENERS');
  if (rawListeners !== undefined) {
    const names = rawListeners
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = names.filter((n) => !LISTENER_NAMES.includes(n as ListenerName));
    if (unknown.length > 0 || names.length === 0) {
      problems.push(
        `LISTENERS must be a comma-separated subset of ${LISTENER_NAMES.join(',')} (got "${rawListeners}")`,
      );
    } else {
      enabledListeners = [...new Set(names)] as ListenerName[];
    }
  }

  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }

  const adminToken = read('ADMIN_TOKEN');
  const adminTokenProblem = adminToken === undefined ? undefined : tokenProblem('ADMIN_TOKEN', adminToken);
  if (adminTokenProblem) problems.push(adminTokenProblem);

  // ----- webhook receivers: address policy and per-merchant limits (docs/webhooks.md) -----
  const webhookGuards: WebhookGuards = {
    allowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', false),
    maxPerMerchant: int('WEBHOOK_MAX_PER_MERCHANT', 16, 1, 10_000),
    // A merchant's deliveries per process run at most this many per answer time, and under load
    // the answer time includes the process's own queue: with 32, a merchant alone on a fully
    // loaded process has its events delivered as fast as they are written (the soak;
    // docs/internals.md#webhook-delivery).
    merchantConcurrency: int('WEBHOOK_MERCHANT_CONCURRENCY', 32, 1, 1024),
    connectTimeoutMs: int('WEBHOOK_CONNECT_TIMEOUT_MS', 3_000, 50, 60_000),
    breakerFailures: int('WEBHOOK_BREAKER_FAILURES', 5, 1, 1000),
    breakerCooldownMs: int('WEBHOOK_BREAKER_COOLDOWN_MS', 60_000, 1_000, 86_400_000),
  };
  if (environment === 'live' && webhookGuards.allowPrivate) {
    problems.push(
      'WEBHOOK_ALLOW_PRIVATE is for local development in the sandbox; live delivers only to public addresses',
    );
  }

  // ---- Admin listener: its own bind address (docs/going-live.md).
  const adminHost = read('ADMIN_HOST') ?? '127.0.0.1';

  // ---- Encryption key rotation: earlier keys, comma-separated, still open what they sealed.
  const oldKeys = (read('CARD_ENCRYPTION_OLD_KEYS') ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const cardEncryptionOldKeys = oldKeys.map((k) => Buffer.from(k, 'base64'));
  if (cardEncryptionOldKeys.some((k) => k.length !== 32))
    problems.push('CARD_ENCRYPTION_OLD_KEYS must be a comma-separated list of 32-byte keys encoded as base64');

  const config: Config = {
    environment,
    host,
    listeners,
    enabledListeners,
    databaseUrl,
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 1000),
    databasePreparedStatements: bool('DATABASE_PREPARED_STATEMENTS', true),
    databaseTimeouts: {
      statementMs: int('DATABASE_STATEMENT_TIMEOUT_MS', DEFAULT_DATABASE_TIMEOUTS.statementMs, 0, 86_400_000),
      lockMs: int('DATABASE_LOCK_TIMEOUT_MS', DEFAULT_DATABASE_TIMEOUTS.lockMs, 0, 86_400_000),
      idleInTransactionMs: int(
        'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS',
        DEFAULT_DATABASE_TIMEOUTS.idleInTransactionMs,
        0,
        86_400_000,
      ),
    },
    dataDir: path.resolve(read('DATA_DIR') ?? './.coffer/data'),
    adminToken,
    cardEncryptionKey: key32('CARD_ENCRYPTION_KEY'),
    cardEncryptionOldKeys,
    widgetSigningKey: key32('WIDGET_SIGNING_KEY'),
    adminHost,
    rateLimit: {
      perMinute: int('RATE_LIMIT_PER_MINUTE', 10_000, 1, 100_000_000),
      syncIntervalMs: int('RATE_LIMIT_SYNC_MS', 500, 10, 60_000),
      perClientPerMinute: int('CLIENT_RATE_LIMIT_PER_MINUTE', 60_000, 1, 100_000_000),
      cardPerMinute: int('CARD_RATE_LIMIT_PER_MINUTE', 1_000, 1, 100_000_000),
      payPerMinute: int('PAY_RATE_LIMIT_PER_MINUTE', 1_000, 1, 100_000_000),
      adminPerMinute: int('ADMIN_RATE_LIMIT_PER_MINUTE', 600, 1, 100_000_000),
      userCheckPerMinute: int('USER_CHECK_RATE_LIMIT_PER_MINUTE', 30, 1, 100_000),
      userCheckPerWalletPerHour: int('USER_CHECK_WALLET_LIMIT_PER_HOUR', 10, 1, 100_000),
    },
    authCacheTtlMs: int('AUTH_CACHE_TTL_MS', 5_000, 0, 3_600_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 256 * 1024, 1024, 50 * 1024 * 1024),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 90_000, 1_000, 600_000),
    writeTimeoutMs: int('WRITE_TIMEOUT_MS', 10_000, 1_000, 600_000),
    maxPipelinedRequests: int('MAX_PIPELINED_REQUESTS', 32, 1, 1_000),
    trustProxy: parseTrustProxy(read('TRUST_PROXY'), environment, problems),
    logLevel: read('LOG_LEVEL') ?? 'info',
    workersEnabled: bool('WORKERS', true),
    authorizationLeaseMarginMs: int('AUTHORIZATION_LEASE_MARGIN_MS', 15_000, 100, 600_000),
    webhooks: {
      timeoutMs: int('WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
      retryDelaysS: delays('WEBHOOK_RETRY_DELAYS', DEFAULT_WEBHOOK_RETRY_DELAYS_S),
      pollMs: int('WEBHOOK_POLL_MS', 250, 10, 60_000),
      // Eight merchants' worth of WEBHOOK_MERCHANT_CONCURRENCY (docs/internals.md#webhook-delivery).
      concurrency: int('WEBHOOK_CONCURRENCY', 256, 1, 1024),
      eventRetentionDays: int('EVENT_RETENTION_DAYS', 30, 1, 3650),
      ...webhookGuards,
    },
    providers: loadProviderConfig({ read, int, environment, problems }),
    observability: loadObservabilityConfig({ read, int, environment, problems }),
    console: {
      sessionTtlMs: int('CONSOLE_SESSION_HOURS', 12, 1, 24 * 30) * 3_600_000,
      signInPerMinute: int('CONSOLE_SIGN_IN_RATE_LIMIT_PER_MINUTE', 10, 1, 100_000),
      perMinute: int('CONSOLE_RATE_LIMIT_PER_MINUTE', 600, 1, 100_000_000),
      operatorSignIn: bool('CONSOLE_OPERATOR_SIGN_IN', false),
      requestLog: bool('REQUEST_LOG', true),
      requestLogRetentionDays: int('REQUEST_LOG_RETENTION_DAYS', 7, 1, 3650),
    },
  };

  // An event must outlive its last retry, or a delivery still due would lose its event.
  const retrySpanS = config.webhooks.retryDelaysS.reduce((a, b) => a + b, 0);
  if (config.webhooks.eventRetentionDays * 86_400 <= retrySpanS) {
    problems.push(
      `EVENT_RETENTION_DAYS must be longer than the webhook retry schedule (${Math.ceil(retrySpanS / 86_400)} days)`,
    );
  }

  // Live handles real money: no embedded database and no generated secrets.
  if (environment === 'live') {
    if (databaseUrl === undefined)
      problems.push('live requires DATABASE_URL (embedded PGlite is for the sandbox only)');
    if (adminToken === undefined) problems.push('live requires ADMIN_TOKEN');
    if (config.cardEncryptionKey === undefined && read('CARD_ENCRYPTION_KEY') === undefined) {
      problems.push('live requires CARD_ENCRYPTION_KEY (32 bytes, base64)');
    }
    if (config.widgetSigningKey === undefined && read('WIDGET_SIGNING_KEY') === undefined) {
      problems.push('live requires WIDGET_SIGNING_KEY (32 bytes, base64)');
    }
    // `true` takes every client's X-Forwarded-For at its word: anyone could pick the address the
    // rate limits count.
    if (config.trustProxy === true)
      problems.push(
        "live refuses TRUST_PROXY=true: give your proxies' addresses or CIDRs (TRUST_PROXY=10.0.0.0/8,...)",
      );
    // Over plain http the console's cookies lose Secure and the __Host- prefix.
    const consoleUrl = new URL(config.listeners.console.publicUrl);
    if (consoleUrl.protocol !== 'https:' && !isLoopbackHost(consoleUrl.hostname))
      problems.push(
        `live refuses CONSOLE_URL=${config.listeners.console.publicUrl}: give the console's https:// address (plain http only on loopback), so its cookies are Secure`,
      );
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

// ----- metrics and traces (docs/operations.md#metrics, #traces) ------------------------------

function loadObservabilityConfig(c: {
  read: (name: string) => string | undefined;
  int: (name: string, fallback: number, min: number, max: number) => number;
  environment: Environment;
  problems: string[];
}): ObservabilityConfig {
  const { read, problems } = c;
  const metricsToken = read('METRICS_TOKEN');
  const metricsTokenProblem = metricsToken === undefined ? undefined : tokenProblem('METRICS_TOKEN', metricsToken);
  if (metricsTokenProblem) problems.push(metricsTokenProblem);
  let otlpEndpoint = read('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (otlpEndpoint !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(otlpEndpoint);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      otlpEndpoint = otlpEndpoint.replace(/\/+$/, '');
    } catch {
      problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL (got "${otlpEndpoint}")`);
      otlpEndpoint = undefined;
    }
    // Spans carry request paths and ids, and the collector's credentials (in the URL or
    // OTEL_EXPORTER_OTLP_HEADERS) go with them: in clear only to this host.
    if (u && otlpEndpoint && c.environment === 'live' && u.protocol === 'http:' && !isLoopbackHost(u.hostname)) {
      problems.push(
        `live refuses OTEL_EXPORTER_OTLP_ENDPOINT=${u.protocol}//${u.host}: give the collector's https:// address (plain http only on loopback, to a collector beside the process)`,
      );
    }
  }
  const seconds = c.int('LEDGER_CHECK_INTERVAL_S', 3600, 0, 7 * 86_400);
  if (seconds > 0 && seconds < 60)
    problems.push(`LEDGER_CHECK_INTERVAL_S must be 0 (off) or at least 60 (got "${seconds}")`);
  return {
    metricsToken,
    ledgerCheckIntervalMs: seconds * 1000,
    otlpEndpoint,
    serviceName: read('OTEL_SERVICE_NAME') ?? 'coffer',
  };
}

// ----- provider adapters (docs/providers.md) ------------------------------------------------

/** Each provider port and the variable naming its adapter's base URL. */
export const PROVIDER_URL_VARIABLES = {
  kyc: 'KYC_PROVIDER_URL',
  bankLinking: 'BANK_LINKING_PROVIDER_URL',
  bankTransfers: 'BANK_TRANSFERS_PROVIDER_URL',
  cardIssuer: 'CARD_ISSUER_PROVIDER_URL',
  cardProcessor: 'CARD_PROCESSOR_PROVIDER_URL',
} as const;
export type ProviderPort = keyof typeof PROVIDER_URL_VARIABLES;
const PROVIDER_LABELS: Record<ProviderPort, string> = {
  kyc: 'KYC',
  bankLinking: 'bank-linking',
  bankTransfers: 'bank-transfers',
  cardIssuer: 'card-issuer',
  cardProcessor: 'card-processor',
};
export const PROVIDER_PORTS = Object.keys(PROVIDER_URL_VARIABLES) as ProviderPort[];

export interface ProviderConfig {
  /** The operator's adapter for each port; a port without one uses the sandbox's own (sandbox only). */
  urls: Partial<Record<ProviderPort, string>>;
  /** Standard Webhooks secret (`whsec_` + base64) signing requests to the adapters and their answers. */
  signingSecret: string | undefined;
  /** A call to an adapter that has not answered in full by then has failed (and is retried later). */
  timeoutMs: number;
}

/** The smallest signing secret accepted, in bytes (Standard Webhooks secrets are 24 to 64). */
const MIN_SIGNING_SECRET_BYTES = 32;

/**
 * The provider adapters: live refuses to start unless every port has one and the signing secret
 * is set, so a live deployment can never fall back to a sandbox provider.
 */
function loadProviderConfig(c: {
  read: (name: string) => string | undefined;
  int: (name: string, fallback: number, min: number, max: number) => number;
  environment: Environment;
  problems: string[];
}): ProviderConfig {
  const { read, problems } = c;
  const live = c.environment === 'live';
  const urls: Partial<Record<ProviderPort, string>> = {};
  for (const port of PROVIDER_PORTS) {
    const name = PROVIDER_URL_VARIABLES[port];
    const raw = read(name);
    if (raw === undefined) {
      if (live) problems.push(`live requires ${name} (the ${PROVIDER_LABELS[port]} adapter; docs/providers.md)`);
      continue;
    }
    let u: URL;
    try {
      u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      problems.push(`${name} must be an http(s) URL (got "${raw}")`);
      continue;
    }
    // Card numbers and applicants' data travel on these calls: outside this machine, only over TLS.
    if (live && u.protocol !== 'https:' && !isLoopbackHost(u.hostname)) {
      problems.push(`${name} must be an https:// URL in live (plain http only to localhost)`);
      continue;
    }
    urls[port] = raw.replace(/\/+$/, '');
  }
  const signingSecret = read('PROVIDER_SIGNING_SECRET');
  if (signingSecret === undefined) {
    if (live) problems.push('live requires PROVIDER_SIGNING_SECRET (signs every call to the provider adapters)');
    else if (Object.keys(urls).length > 0)
      problems.push('PROVIDER_SIGNING_SECRET is required when a provider URL is set');
  } else if (
    !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(signingSecret) ||
    Buffer.from(signingSecret.slice(6), 'base64').length < MIN_SIGNING_SECRET_BYTES
  ) {
    problems.push(
      `PROVIDER_SIGNING_SECRET must be whsec_ followed by at least ${MIN_SIGNING_SECRET_BYTES} random bytes in base64`,
    );
  }
  return { urls, signingSecret, timeoutMs: c.int('PROVIDER_TIMEOUT_MS', 10_000, 100, 60_000) };
}

export interface ReferenceAdapterConfig {
  host: string;
  port: number;
  signingSecret: string;
  /** How long after acceptance a bank transfer settles (or fails). */
  settleMs: number;
  /** How long after submission a KYC application is decided. */
  kycDecisionMs: number;
}

/** What `npm run provider-adapter` (src/providers/http/reference-adapter.ts) needs. */
export function loadReferenceAdapterConfig(env: Env = process.env): ReferenceAdapterConfig {
  const problems: string[] = [];
  const read = (name: string) => env[name]?.trim() || undefined;
  const int = (name: string, fallback: number, max: number) => {
    const raw = read(name);
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > max)
      problems.push(`${name} must be an integer between 0 and ${max} (got "${raw}")`);
    return n;
  };
  const signingSecret = read('PROVIDER_SIGNING_SECRET');
  if (signingSecret === undefined) problems.push("PROVIDER_SIGNING_SECRET is required (the same secret as Coffer's)");
  const config = {
    host: read('ADAPTER_HOST') ?? '127.0.0.1',
    port: int('ADAPTER_PORT', 4100, 65535),
    signingSecret: signingSecret ?? '',
    settleMs: int('ADAPTER_SETTLE_MS', 1_000, 86_400_000),
    kycDecisionMs: int('ADAPTER_KYC_DECISION_MS', 500, 86_400_000),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

// ----- addresses: the proxies in TRUST_PROXY, loopback hosts ---------------------------------

/** The proxies TRUST_PROXY lists, parsed once: Fastify asks `trusts` of each hop of each request. */
export interface TrustedProxies {
  /** Each range in CIDR notation (an address alone is a /32 or /128). */
  ranges: string[];
  /** Whether an address (the TCP peer, then each X-Forwarded-For hop from the right) is a proxy's. */
  trusts: (address: string) => boolean;
}

/**
 * Live's shortest prefixes in TRUST_PROXY. A wider range holds addresses that are not the
 * operator's proxies (0.0.0.0/1 and 128.0.0.0/1 together are everyone), and any client there
 * could pick the address the rate limits count with X-Forwarded-For. /8 is the widest private
 * IPv4 network (10.0.0.0/8); /32 an IPv6 allocation to one organisation.
 */
export const MIN_PROXY_PREFIX = { ipv4: 8, ipv6: 32 } as const;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An IP address in its usual notation (IPv4 only as four decimal parts), IPv4-mapped IPv6 as IPv4. */
function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const v6 = ipaddr.IPv6.parse(text);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/** `10.0.0.0/8`, `2001:db8::/32` or an address alone; undefined when it is neither. */
function parseRange(text: string): [Address, number] | undefined {
  const [addressText = '', bitsText, ...rest] = text.split('/');
  if (rest.length > 0) return undefined;
  let address: Address;
  if (ipaddr.IPv4.isValidFourPartDecimal(addressText)) address = ipaddr.IPv4.parse(addressText);
  else if (ipaddr.IPv6.isValid(addressText)) address = ipaddr.IPv6.parse(addressText);
  else return undefined;
  const max = address.kind() === 'ipv4' ? 32 : 128;
  const bits = bitsText === undefined ? max : /^[0-9]{1,3}$/.test(bitsText) ? Number(bitsText) : -1;
  if (bits < 0 || bits > max) return undefined;
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps: addresses are compared as IPv4.
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && bits >= 96)
    return [address.toIPv4Address(), bits - 96];
  return [address, bits];
}

function parseTrustProxy(
  raw: string | undefined,
  environment: Environment,
  problems: string[],
): boolean | TrustedProxies {
  if (raw === undefined || /^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  const ranges: [Address, number][] = [];
  for (const item of raw.split(',').map((s) => s.trim())) {
    const range = parseRange(item);
    if (!range) {
      problems.push(
        `TRUST_PROXY must be true, false or a comma-separated list of proxy addresses or CIDR ranges (TRUST_PROXY=10.0.0.0/8,10.1.2.3); "${item}" is neither`,
      );
      continue;
    }
    const min = MIN_PROXY_PREFIX[range[0].kind()];
    if (environment === 'live' && range[1] < min) {
      problems.push(
        `live refuses TRUST_PROXY range ${item}: ${range[0].kind() === 'ipv4' ? 'IPv4' : 'IPv6'} ranges wider than /${min} trust more than your proxies, so any client could pick the address the rate limits count; list your proxies' own addresses or subnets`,
      );
    }
    ranges.push(range);
  }
  if (ranges.length === 0) return false;
  return {
    ranges: ranges.map(([a, bits]) => `${a.toString()}/${bits}`),
    trusts: (address) => {
      const a = parseAddress(address);
      return a !== undefined && ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
    },
  };
}

/** `localhost` or a loopback address (127.0.0.0/8, ::1): where plain http never leaves the host. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost') return true;
  return parseAddress(host)?.range() === 'loopback';
}

export interface CliConfig {
  adminUrl: string;
  adminToken: string | undefined;
  dataDir: string;
}

/** What the `coffer` CLI needs: where the admin listener is and the token to call it. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const port = env.ADMIN_PORT?.trim() || '3003';
  return {
    adminUrl: (env.COFFER_ADMIN_URL?.trim() || `http://127.0.0.1:${port}`).replace(/\/+$/, ''),
    adminToken: env.ADMIN_TOKEN?.trim() || undefined,
    dataDir: path.resolve(env.DATA_DIR?.trim() || './.coffer/data'),
  };
}
