// The only module that reads the environment. Everything else receives a Config.
import path from 'node:path';
import { tokenProblem } from './crypto/tokens.ts';
import { isLoopbackHost, parseTrustProxy, type TrustedProxies } from './addresses.ts';
import { setting } from './settings.ts';

export type Environment = 'sandbox' | 'live';
export type ListenerName = 'api' | 'card' | 'pay' | 'admin' | 'console';
const LISTENER_NAMES: readonly ListenerName[] = ['api', 'card', 'pay', 'admin', 'console'];

interface ListenerConfig {
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
  /** `pretty` for a person at a terminal, `json` for a collector; `auto`: pretty when stdout is a terminal. */
  logFormat: 'auto' | 'pretty' | 'json';
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

interface ObservabilityConfig {
  /** A bearer token that reads GET /metrics on the admin listener besides ADMIN_TOKEN (a scraper needs no admin rights). */
  metricsToken: string | undefined;
  /** How often the deployment checks the ledger's invariants (once, in whichever worker process finds it due); 0: never (the admin API still can). */
  ledgerCheckIntervalMs: number;
  /** OTLP/HTTP base URL (`/v1/traces` is appended); undefined: tracing off. */
  otlpEndpoint: string | undefined;
  /** `service.name` of the spans. */
  serviceName: string;
}

interface ConsoleConfig {
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
  statementMs: Number(setting('DATABASE_STATEMENT_TIMEOUT_MS').default),
  lockMs: Number(setting('DATABASE_LOCK_TIMEOUT_MS').default),
  idleInTransactionMs: Number(setting('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS').default),
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

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reads declared settings (src/settings.ts) from an environment, noting each bad value in `problems`. */
function reader(env: Env, problems: string[]) {
  const read = (name: string): string | undefined => {
    setting(name);
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (name: string): number => {
    const { default: def, min = 0, max = Number.MAX_SAFE_INTEGER } = setting(name);
    const fallback = Number(def);
    const raw = read(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  };
  const bool = (name: string): boolean => {
    const fallback = setting(name).default === 'true';
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  /** A text setting, or its declared default. */
  const text = (name: string): string | undefined => read(name) ?? setting(name).default;
  return { read, int, bool, text, problems };
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const r = reader(env, problems);
  const { read, int, bool, text } = r;
  const key32 = (name: string) => readKey32(r, name);
  const delays = (name: string) => readDelays(r, name);

  const envName = text('COFFER_ENV')!;
  if (envName !== 'sandbox' && envName !== 'live')
    problems.push(`COFFER_ENV must be sandbox or live (got "${envName}")`);
  const environment: Environment = envName === 'live' ? 'live' : 'sandbox';

  const host = text('HOST')!;
  const { listeners, enabledListeners } = readListeners(r);

  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }

  const adminToken = read('ADMIN_TOKEN');
  const adminTokenProblem = adminToken === undefined ? undefined : tokenProblem('ADMIN_TOKEN', adminToken);
  if (adminTokenProblem) problems.push(adminTokenProblem);

  // ----- webhook receivers: address policy and per-merchant limits (docs/webhooks.md) -----
  const webhookGuards: WebhookGuards = {
    allowPrivate: bool('WEBHOOK_ALLOW_PRIVATE'),
    maxPerMerchant: int('WEBHOOK_MAX_PER_MERCHANT'),
    // A merchant's deliveries per process run at most this many per answer time, and under load
    // the answer time includes the process's own queue: with 32, a merchant alone on a fully
    // loaded process has its events delivered as fast as they are written (the soak;
    // docs/internals.md#webhook-delivery).
    merchantConcurrency: int('WEBHOOK_MERCHANT_CONCURRENCY'),
    connectTimeoutMs: int('WEBHOOK_CONNECT_TIMEOUT_MS'),
    breakerFailures: int('WEBHOOK_BREAKER_FAILURES'),
    breakerCooldownMs: int('WEBHOOK_BREAKER_COOLDOWN_MS'),
  };
  if (environment === 'live' && webhookGuards.allowPrivate) {
    problems.push(
      'WEBHOOK_ALLOW_PRIVATE is for local development in the sandbox; live delivers only to public addresses',
    );
  }

  // ---- Admin listener: its own bind address (docs/going-live.md).
  const adminHost = text('ADMIN_HOST')!;

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
    databasePoolSize: int('DATABASE_POOL_SIZE'),
    databasePreparedStatements: bool('DATABASE_PREPARED_STATEMENTS'),
    databaseTimeouts: {
      statementMs: int('DATABASE_STATEMENT_TIMEOUT_MS'),
      lockMs: int('DATABASE_LOCK_TIMEOUT_MS'),
      idleInTransactionMs: int('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS'),
    },
    dataDir: path.resolve(text('DATA_DIR')!),
    adminToken,
    cardEncryptionKey: key32('CARD_ENCRYPTION_KEY'),
    cardEncryptionOldKeys,
    widgetSigningKey: key32('WIDGET_SIGNING_KEY'),
    adminHost,
    rateLimit: {
      perMinute: int('RATE_LIMIT_PER_MINUTE'),
      syncIntervalMs: int('RATE_LIMIT_SYNC_MS'),
      perClientPerMinute: int('CLIENT_RATE_LIMIT_PER_MINUTE'),
      cardPerMinute: int('CARD_RATE_LIMIT_PER_MINUTE'),
      payPerMinute: int('PAY_RATE_LIMIT_PER_MINUTE'),
      adminPerMinute: int('ADMIN_RATE_LIMIT_PER_MINUTE'),
      userCheckPerMinute: int('USER_CHECK_RATE_LIMIT_PER_MINUTE'),
      userCheckPerWalletPerHour: int('USER_CHECK_WALLET_LIMIT_PER_HOUR'),
    },
    authCacheTtlMs: int('AUTH_CACHE_TTL_MS'),
    bodyLimitBytes: int('BODY_LIMIT_BYTES'),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS'),
    writeTimeoutMs: int('WRITE_TIMEOUT_MS'),
    maxPipelinedRequests: int('MAX_PIPELINED_REQUESTS'),
    trustProxy: parseTrustProxy(read('TRUST_PROXY'), environment, problems),
    logLevel: text('LOG_LEVEL')!,
    logFormat: logFormat(read('LOG_FORMAT'), problems),
    workersEnabled: bool('WORKERS'),
    authorizationLeaseMarginMs: int('AUTHORIZATION_LEASE_MARGIN_MS'),
    webhooks: {
      timeoutMs: int('WEBHOOK_TIMEOUT_MS'),
      retryDelaysS: delays('WEBHOOK_RETRY_DELAYS'),
      pollMs: int('WEBHOOK_POLL_MS'),
      // Eight merchants' worth of WEBHOOK_MERCHANT_CONCURRENCY (docs/internals.md#webhook-delivery).
      concurrency: int('WEBHOOK_CONCURRENCY'),
      eventRetentionDays: int('EVENT_RETENTION_DAYS'),
      ...webhookGuards,
    },
    providers: loadProviderConfig({ read, int, bool, text, environment, problems }),
    observability: loadObservabilityConfig({ read, int, bool, text, environment, problems }),
    console: {
      sessionTtlMs: int('CONSOLE_SESSION_HOURS') * 3_600_000,
      signInPerMinute: int('CONSOLE_SIGN_IN_RATE_LIMIT_PER_MINUTE'),
      perMinute: int('CONSOLE_RATE_LIMIT_PER_MINUTE'),
      operatorSignIn: bool('CONSOLE_OPERATOR_SIGN_IN'),
      requestLog: bool('REQUEST_LOG'),
      requestLogRetentionDays: int('REQUEST_LOG_RETENTION_DAYS'),
    },
  };

  checkAcross(config, r);

  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

type Reader = ReturnType<typeof reader>;

/** A 32-byte key in base64, or undefined when unset. */
function readKey32(r: Reader, name: string): Buffer | undefined {
  const raw = r.read(name);
  if (raw === undefined) return undefined;
  const buf = Buffer.from(raw, 'base64');
  if (buf.length !== 32) {
    r.problems.push(`${name} must be 32 bytes encoded as base64`);
    return undefined;
  }
  return buf;
}

/** A comma-separated list of delays in seconds (the webhook retry schedule). */
function readDelays(r: Reader, name: string): number[] {
  const fallback = r.text(name)!.split(',').map(Number);
  const raw = r.read(name);
  if (raw === undefined) return fallback;
  const list = raw.split(',').map((x) => Number(x.trim()));
  if (list.length === 0 || list.length > 50 || list.some((n) => !Number.isFinite(n) || n <= 0 || n > 7 * 86_400)) {
    r.problems.push(`${name} must be a comma-separated list of positive delays in seconds (got "${raw}")`);
    return fallback;
  }
  return list;
}

/** Each listener's port and public address, and which of them this process starts. */
function readListeners(r: Reader): {
  listeners: Record<ListenerName, ListenerConfig>;
  enabledListeners: ListenerName[];
} {
  const { read, int, problems } = r;
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
  const apiPort = int('PORT');
  const cardPort = int('CARD_PORT');
  const payPort = int('PAY_PORT');
  const adminPort = int('ADMIN_PORT');
  const consolePort = int('CONSOLE_PORT');
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
  return { listeners, enabledListeners };
}

/** Rules between settings, and what live requires: real money gets no embedded database or generated secrets. */
function checkAcross(config: Config, r: Reader): void {
  const { read, problems } = r;
  // An event must outlive its last retry, or a delivery still due would lose its event.
  const retrySpanS = config.webhooks.retryDelaysS.reduce((a, b) => a + b, 0);
  if (config.webhooks.eventRetentionDays * 86_400 <= retrySpanS) {
    problems.push(
      `EVENT_RETENTION_DAYS must be longer than the webhook retry schedule (${Math.ceil(retrySpanS / 86_400)} days)`,
    );
  }

  // Live handles real money: no embedded database and no generated secrets.
  if (config.environment === 'live') {
    if (config.databaseUrl === undefined)
      problems.push('live requires DATABASE_URL (embedded PGlite is for the sandbox only)');
    if (config.adminToken === undefined) problems.push('live requires ADMIN_TOKEN');
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
}

function logFormat(raw: string | undefined, problems: string[]): Config['logFormat'] {
  if (raw === undefined) return 'auto';
  if (raw === 'pretty' || raw === 'json') return raw;
  problems.push(`LOG_FORMAT must be pretty or json (got "${raw}")`);
  return 'auto';
}

// ----- metrics and traces (docs/operations.md#metrics, #traces) ------------------------------

function loadObservabilityConfig(
  c: ReturnType<typeof reader> & { environment: Environment; problems: string[] },
): ObservabilityConfig {
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
  const seconds = c.int('LEDGER_CHECK_INTERVAL_S');
  if (seconds > 0 && seconds < 60)
    problems.push(`LEDGER_CHECK_INTERVAL_S must be 0 (off) or at least 60 (got "${seconds}")`);
  return {
    metricsToken,
    ledgerCheckIntervalMs: seconds * 1000,
    otlpEndpoint,
    serviceName: c.text('OTEL_SERVICE_NAME')!,
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
function loadProviderConfig(
  c: ReturnType<typeof reader> & { environment: Environment; problems: string[] },
): ProviderConfig {
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
  return { urls, signingSecret, timeoutMs: c.int('PROVIDER_TIMEOUT_MS') };
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
  const { read, int, text } = reader(env, problems);
  const signingSecret = read('PROVIDER_SIGNING_SECRET');
  if (signingSecret === undefined) problems.push("PROVIDER_SIGNING_SECRET is required (the same secret as Coffer's)");
  const config = {
    host: text('ADAPTER_HOST')!,
    port: int('ADAPTER_PORT'),
    signingSecret: signingSecret ?? '',
    settleMs: int('ADAPTER_SETTLE_MS'),
    kycDecisionMs: int('ADAPTER_KYC_DECISION_MS'),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

export interface CliConfig {
  adminUrl: string;
  adminToken: string | undefined;
  dataDir: string;
}

/** What the `coffer` CLI needs: where the admin listener is and the token to call it. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const { read, text } = reader(env, []);
  return {
    adminUrl: (
      read('COFFER_ADMIN_URL') ?? `http://127.0.0.1:${read('ADMIN_PORT') ?? setting('ADMIN_PORT').default}`
    ).replace(/\/+$/, ''),
    adminToken: read('ADMIN_TOKEN'),
    dataDir: path.resolve(text('DATA_DIR')!),
  };
}
