// Every environment variable Coffer reads, declared once: its type, default, bounds and meaning.
// src/config.ts reads them through this list (an undeclared name is a programming error), and
// `npm run docs:config` writes the README's configuration table and .env.example from it.

export interface Setting {
  name: string;
  type: 'integer' | 'boolean' | 'text';
  /** The value when unset, as it would be written in the environment; undefined: unset. */
  default?: string;
  /** How the README shows the default when it is not a plain value ("generated (sandbox)"). */
  shownDefault?: string;
  /** Bounds of an integer, inclusive. */
  min?: number;
  max?: number;
  /** One sentence in Markdown: what it does, and what live requires of it. */
  meaning: string;
  /** Read by the `coffer` CLI, the reference adapter or the example shop rather than the server. */
  tool?: 'cli' | 'adapter' | 'example';
}

const int = (name: string, def: number, min: number, max: number, meaning: string): Setting => ({
  name,
  type: 'integer',
  default: String(def),
  min,
  max,
  meaning,
});
const bool = (name: string, def: boolean, meaning: string): Setting => ({
  name,
  type: 'boolean',
  default: String(def),
  meaning,
});
const text = (name: string, def: string | undefined, meaning: string, shownDefault?: string): Setting => ({
  name,
  type: 'text',
  ...(def === undefined ? {} : { default: def }),
  ...(shownDefault === undefined ? {} : { shownDefault }),
  meaning,
});

const DAY_MS = 86_400_000;
const MANY = 100_000_000;
const providerUrl = (name: string, what: string): Setting =>
  text(
    name,
    undefined,
    `the ${what} adapter ([docs/providers.md](docs/providers.md)); required in live`,
    'built in (sandbox)',
  );

export const SETTINGS: readonly Setting[] = [
  // ----- environment and listeners
  text(
    'COFFER_ENV',
    'sandbox',
    '`sandbox` or `live`. One deployment serves one environment; simulation endpoints exist only in the sandbox',
  ),
  text('HOST', '127.0.0.1', 'address the API, secure card, widget and console listeners bind to'),
  text(
    'ADMIN_HOST',
    '127.0.0.1',
    'address the admin listener binds to, whatever `HOST` is: keep it on loopback or a private network',
  ),
  int('PORT', 3000, 0, 65535, 'the API listener'),
  int('CARD_PORT', 3001, 0, 65535, 'the secure card API listener'),
  int('PAY_PORT', 3002, 0, 65535, 'the widget host listener'),
  int('ADMIN_PORT', 3003, 0, 65535, 'the admin listener (also where the `coffer` CLI looks for it)'),
  int('CONSOLE_PORT', 3004, 0, 65535, "the web console's listener (bound to `HOST`)"),
  text(
    'LISTENERS',
    undefined,
    'comma-separated subset of `api,card,pay,admin,console` to start in this process',
    'all',
  ),
  text('BASE_URL', undefined, "the API's public address, used in links", '`http://localhost:$PORT`'),
  text('SECURE_URL', undefined, "the secure card API's public address", '`http://localhost:$CARD_PORT`'),
  text('PAY_URL', undefined, "the widget host's public address", '`http://localhost:$PAY_PORT`'),
  text(
    'CONSOLE_URL',
    undefined,
    "the console's public address; `https://` makes its cookies `Secure` (live refuses plain `http://` except on loopback; [operations.md](docs/operations.md#the-console))",
    '`http://localhost:$CONSOLE_PORT`',
  ),
  // ----- database
  text(
    'DATABASE_URL',
    undefined,
    'a `postgres://` URL; unset means embedded PGlite in `DATA_DIR` (sandbox only)',
    'unset (PGlite)',
  ),
  int('DATABASE_POOL_SIZE', 10, 1, 1000, 'connections per process (PostgreSQL)'),
  bool(
    'DATABASE_PREPARED_STATEMENTS',
    true,
    'named prepared statements on the hottest paths; `false` behind a transaction-mode pooler that cannot keep them ([scaling.md](docs/scaling.md#behind-pgbouncer))',
  ),
  int(
    'DATABASE_STATEMENT_TIMEOUT_MS',
    60_000,
    0,
    DAY_MS,
    "PostgreSQL's `statement_timeout` on every connection (0: none); a request past it answers a retryable 503 ([operations.md](docs/operations.md#database-timeouts))",
  ),
  int('DATABASE_LOCK_TIMEOUT_MS', 10_000, 0, DAY_MS, "PostgreSQL's `lock_timeout` on every connection (0: none)"),
  int(
    'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS',
    15_000,
    0,
    DAY_MS,
    "PostgreSQL's `idle_in_transaction_session_timeout` on every connection (0: none): a frozen process keeps its locks no longer",
  ),
  text(
    'DATA_DIR',
    './.coffer/data',
    "PGlite's files, and the sandbox's generated secrets and demo merchant (the folder 0700, its files 0600)",
  ),
  // ----- secrets
  text(
    'ADMIN_TOKEN',
    undefined,
    'bearer token of the admin API: a generated token, `cft_` and 48 base64url characters with a checksum (`npx coffer token` prints one; a chosen phrase is refused)',
    'generated (sandbox)',
  ),
  text(
    'CARD_ENCRYPTION_KEY',
    undefined,
    '32 bytes, base64: encrypts card data, webhook secrets and account numbers at rest',
    'generated (sandbox)',
  ),
  text(
    'CARD_ENCRYPTION_OLD_KEYS',
    undefined,
    'earlier `CARD_ENCRYPTION_KEY`s, comma-separated: what they sealed still opens and is re-sealed with the current key (key rotation)',
    'none',
  ),
  text('WIDGET_SIGNING_KEY', undefined, '32 bytes, base64: signs widget payloads', 'generated (sandbox)'),
  // ----- limits
  int('RATE_LIMIT_PER_MINUTE', 10_000, 1, MANY, 'requests per minute per source address on the API listener'),
  int(
    'CLIENT_RATE_LIMIT_PER_MINUTE',
    60_000,
    1,
    MANY,
    'requests per minute per merchant (Client-ID) on the API listener, from any address',
  ),
  int('CARD_RATE_LIMIT_PER_MINUTE', 1_000, 1, MANY, 'requests per minute per source address on the secure card API'),
  int('PAY_RATE_LIMIT_PER_MINUTE', 1_000, 1, MANY, 'requests per minute per source address on the widget host'),
  int('ADMIN_RATE_LIMIT_PER_MINUTE', 600, 1, MANY, 'requests per minute per source address on the admin listener'),
  int('USER_CHECK_RATE_LIMIT_PER_MINUTE', 30, 1, 100_000, "the widget host's user check, per source address"),
  int('USER_CHECK_WALLET_LIMIT_PER_HOUR', 10, 1, 100_000, "the widget host's user check, per wallet"),
  int(
    'RATE_LIMIT_SYNC_MS',
    500,
    10,
    60_000,
    'how often each process shares its rate-limit counts through the database',
  ),
  text(
    'TRUST_PROXY',
    'false',
    "behind a load balancer: the proxies' addresses or CIDRs, so the rate limits key on the client's address from `X-Forwarded-For`; live refuses `true` (trust anyone's header) and ranges wider than IPv4 /8 or IPv6 /32",
  ),
  int(
    'AUTH_CACHE_TTL_MS',
    5_000,
    0,
    3_600_000,
    'how long a process trusts a cached merchant record (admin changes made in the same process apply at once)',
  ),
  int('BODY_LIMIT_BYTES', 256 * 1024, 1024, 50 * 1024 * 1024, 'largest request body (413 above)'),
  int('REQUEST_TIMEOUT_MS', 90_000, 1_000, 600_000, 'whole-request timeout; slow clients are cut off'),
  int(
    'WRITE_TIMEOUT_MS',
    10_000,
    1_000,
    600_000,
    'a connection whose client stops reading a response for this long is reset',
  ),
  int(
    'MAX_PIPELINED_REQUESTS',
    32,
    1,
    1_000,
    'requests a connection may have waiting behind the one being answered; one more resets it',
  ),
  // ----- logs, metrics, traces
  text('LOG_LEVEL', 'info', 'pino level; `info` logs one line per request'),
  text(
    'LOG_FORMAT',
    undefined,
    '`pretty` (coloured, one readable line per entry) or `json` (one JSON object per line, for a log collector)',
    '`pretty` on a terminal, else `json`',
  ),
  text(
    'METRICS_TOKEN',
    undefined,
    "bearer token for `GET /metrics` on the admin listener besides `ADMIN_TOKEN` (opens nothing else; a generated token like `ADMIN_TOKEN`'s; [operations.md](docs/operations.md#metrics))",
  ),
  int(
    'LEDGER_CHECK_INTERVAL_S',
    3600,
    0,
    7 * 86_400,
    "how often the deployment checks the ledger's invariants (once per interval, in one worker process); 0 turns it off, else at least 60",
  ),
  text(
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    undefined,
    'OTLP/HTTP base URL of an OpenTelemetry collector: spans go to `<url>/v1/traces`; live refuses plain `http://` except on loopback ([operations.md](docs/operations.md#traces))',
    'unset (tracing off)',
  ),
  text('OTEL_SERVICE_NAME', 'coffer', "the spans' `service.name`"),
  // ----- background work
  bool(
    'WORKERS',
    true,
    'run background jobs (KYC decisions, bank transfers, settlement, webhook delivery) in this process',
  ),
  int(
    'AUTHORIZATION_LEASE_MARGIN_MS',
    15_000,
    100,
    600_000,
    "how long past the card processor's latency an open authorization belongs to its process before it is presumed dead and taken over",
  ),
  // ----- the console
  int('CONSOLE_SESSION_HOURS', 12, 1, 24 * 30, 'how long a console session lasts after sign-in'),
  int(
    'CONSOLE_SIGN_IN_RATE_LIMIT_PER_MINUTE',
    10,
    1,
    100_000,
    'console sign-in attempts per minute per source address',
  ),
  int('CONSOLE_RATE_LIMIT_PER_MINUTE', 600, 1, MANY, 'console pages per minute per source address'),
  bool(
    'CONSOLE_OPERATOR_SIGN_IN',
    false,
    'the operator signs in on the console with `ADMIN_TOKEN` and gets its pages; only on a console that only operators reach ([operations.md](docs/operations.md#signing-in))',
  ),
  bool('REQUEST_LOG', true, "record merchants' API requests for the console's request log"),
  int('REQUEST_LOG_RETENTION_DAYS', 7, 1, 3650, 'days the request log keeps a request'),
  // ----- webhooks
  int('WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000, 'a receiver must answer within this'),
  text(
    'WEBHOOK_RETRY_DELAYS',
    '5,10,30,120,600,1800,3600,10800,21600,43200,86400,86400',
    'seconds before each retry, comma-separated; after the last the delivery fails',
  ),
  int('WEBHOOK_POLL_MS', 250, 10, 60_000, 'how often a worker looks for due deliveries'),
  int('WEBHOOK_CONCURRENCY', 256, 1, 1024, 'deliveries in flight at once per process'),
  int(
    'WEBHOOK_MERCHANT_CONCURRENCY',
    32,
    1,
    1024,
    "deliveries of one merchant in flight at once per process, so no merchant's receivers take every slot",
  ),
  int(
    'EVENT_RETENTION_DAYS',
    30,
    1,
    3650,
    'events, their deliveries and attempts are dropped by the week once the whole week is older than this; longer than the retry schedule ([operations.md](docs/operations.md#retention))',
  ),
  int(
    'WEBHOOK_MAX_PER_MERCHANT',
    16,
    1,
    10_000,
    'webhooks one merchant may have (one more is 400 `WebhookLimitReached`)',
  ),
  int(
    'WEBHOOK_CONNECT_TIMEOUT_MS',
    3_000,
    50,
    60_000,
    'connecting to a receiver (TCP and TLS) must succeed within this',
  ),
  int(
    'WEBHOOK_BREAKER_FAILURES',
    5,
    1,
    1000,
    "consecutive attempts without an answer after which a merchant's deliveries to that host are held",
  ),
  int(
    'WEBHOOK_BREAKER_COOLDOWN_MS',
    60_000,
    1_000,
    DAY_MS,
    'how long held deliveries wait before one probe goes through',
  ),
  bool(
    'WEBHOOK_ALLOW_PRIVATE',
    false,
    '`true` lets webhooks reach loopback and private addresses, for local development (sandbox only)',
  ),
  // ----- provider adapters
  providerUrl('KYC_PROVIDER_URL', 'KYC'),
  providerUrl('BANK_LINKING_PROVIDER_URL', 'bank-linking'),
  providerUrl('BANK_TRANSFERS_PROVIDER_URL', 'bank-transfers'),
  providerUrl('CARD_ISSUER_PROVIDER_URL', 'card-issuer'),
  providerUrl('CARD_PROCESSOR_PROVIDER_URL', 'card-processor'),
  text(
    'PROVIDER_SIGNING_SECRET',
    undefined,
    '`whsec_` and at least 32 random bytes in base64: signs calls to the adapters and their answers (Standard Webhooks); required in live and with any provider URL',
  ),
  int(
    'PROVIDER_TIMEOUT_MS',
    10_000,
    100,
    60_000,
    'a provider call not answered in full by then has failed and is retried later',
  ),
  // ----- the CLI and the reference adapter
  {
    ...text(
      'COFFER_ADMIN_URL',
      undefined,
      'where the `coffer` CLI finds the admin API (it takes the token from `--token-file FILE`, `ADMIN_TOKEN` or `DATA_DIR/secrets.json`)',
      '`http://127.0.0.1:$ADMIN_PORT`',
    ),
    tool: 'cli',
  },
  {
    ...int(
      'SHOP_PORT',
      4000,
      0,
      65535,
      'the example shop of `npm run example` (its throwaway sandbox takes `PORT` to `CONSOLE_PORT` as `npm start` does; stop a running `npm start` first, or move one of them)',
    ),
    tool: 'example',
  },
  {
    ...text('ADAPTER_HOST', '127.0.0.1', 'where the reference adapter (`npm run provider-adapter`) listens'),
    tool: 'adapter',
  },
  { ...int('ADAPTER_PORT', 4100, 0, 65535, "the reference adapter's port"), tool: 'adapter' },
  {
    ...int('ADAPTER_SETTLE_MS', 1_000, 0, DAY_MS, "how long after acceptance the reference adapter's transfers settle"),
    tool: 'adapter',
  },
  {
    ...int('ADAPTER_KYC_DECISION_MS', 500, 0, DAY_MS, "how long after submission the reference adapter's KYC decides"),
    tool: 'adapter',
  },
];

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

/** The declaration of a setting; reading an undeclared one is a bug in Coffer, not in the environment. */
export function setting(name: string): Setting {
  const s = BY_NAME.get(name);
  if (!s) throw new Error(`${name} is not declared in src/settings.ts`);
  return s;
}

// ----- what `npm run docs:config` writes ------------------------------------------------------

const shown = (s: Setting) => s.shownDefault ?? (s.default === undefined ? 'unset' : `\`${s.default}\``);

/** The README's configuration table. */
function settingsTable(): string {
  const rows = SETTINGS.map((s) => `| \`${s.name}\` | ${shown(s)} | ${s.meaning} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** .env.example: every setting commented out at its default, with its meaning. */
export function envExample(): string {
  const plain = (md: string) => md.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1').replace(/`/g, '');
  const lines = [
    '# Every setting Coffer reads, at its default (generated from src/settings.ts: npm run docs:config).',
    '# Uncomment and change what you need; the process reads the environment, so load this file',
    '# with your process manager or `set -a; . ./.env; set +a` before `npm start`.',
  ];
  for (const s of SETTINGS) {
    const range = s.type === 'integer' ? ` (${s.min}–${s.max})` : '';
    lines.push('', `# ${plain(s.meaning)}${range}.`);
    if (s.default === undefined) lines.push(`# default: ${plain(shown(s))}`, `# ${s.name}=`);
    else lines.push(`# ${s.name}=${s.default}`);
  }
  return `${lines.join('\n')}\n`;
}

const START = '<!-- settings:start -->';
const END = '<!-- settings:end -->';

/** The README with its table between the settings markers made anew. */
export function withSettingsTable(readme: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md lacks the ${START} and ${END} markers`);
  return `${readme.slice(0, a + START.length)}\n${settingsTable()}\n${readme.slice(b)}`;
}
