// Configuration rules (docs/adr/0010-one-process-five-listeners.md). The process-level refusals are in main.test.ts.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig, PROVIDER_URL_VARIABLES } from './config.ts';
import { generateToken } from './crypto/tokens.ts';
import { envExample, SETTINGS, setting, withSettingsTable } from './settings.ts';
import { PROVIDER_SIGNING_SECRET, providerEnv } from './test/harness.ts';

const STRONG_TOKEN = 'cft_GNKp2K3ZB7xk4-iRxrFrFUA6bWzQOgJPHQA93mIZ_0vwwdK3';

describe('configuration', () => {
  test('defaults: sandbox, 127.0.0.1, ports 3000-3003, links on localhost, PGlite in ./.coffer/data', () => {
    const c = loadConfig({});
    assert.equal(c.environment, 'sandbox');
    assert.equal(c.host, '127.0.0.1');
    assert.deepEqual(Object.fromEntries(Object.entries(c.listeners).map(([k, v]) => [k, [v.port, v.publicUrl]])), {
      api: [3000, 'http://localhost:3000'],
      card: [3001, 'http://localhost:3001'],
      pay: [3002, 'http://localhost:3002'],
      admin: [3003, 'http://localhost:3003'],
      console: [3004, 'http://localhost:3004'],
    });
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.databasePreparedStatements, true);
    assert.match(c.dataDir, /\.coffer\/data$/);
    assert.equal(c.rateLimit.perMinute, 10_000);
    assert.deepEqual(c.enabledListeners, ['api', 'card', 'pay', 'admin', 'console']);
  });

  test('DATABASE_PREPARED_STATEMENTS=false sends the hot statements unnamed (behind PgBouncer before 1.21)', () => {
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements, false);
  });

  test('public URLs, listeners and limits come from the environment', () => {
    const c = loadConfig({
      BASE_URL: 'https://api.example.com/',
      SECURE_URL: 'https://cards.example.com',
      LISTENERS: 'api,admin',
      RATE_LIMIT_PER_MINUTE: '50',
      HOST: '0.0.0.0',
    });
    assert.equal(c.listeners.api.publicUrl, 'https://api.example.com');
    assert.equal(c.listeners.card.publicUrl, 'https://cards.example.com');
    assert.deepEqual(c.enabledListeners, ['api', 'admin']);
    assert.equal(c.rateLimit.perMinute, 50);
    assert.equal(c.host, '0.0.0.0');
  });

  test('every bad value is reported at once', () => {
    try {
      loadConfig({
        COFFER_ENV: 'staging',
        PORT: 'x',
        BASE_URL: 'ftp://x',
        LISTENERS: 'api,web',
        DATABASE_URL: 'mysql://x',
        ADMIN_TOKEN: 'short',
        RATE_LIMIT_PER_MINUTE: '0',
      });
      assert.fail('should throw');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 7, err.problems.join('\n'));
    }
  });

  test('webhook receivers: public addresses only, 16 webhooks and 16 attempts in flight per merchant, a 3 s connect timeout, events kept 30 days', () => {
    const c = loadConfig({});
    assert.deepEqual(
      { ...c.webhooks, retryDelaysS: undefined },
      {
        timeoutMs: 15_000,
        retryDelaysS: undefined,
        pollMs: 250,
        concurrency: 256,
        eventRetentionDays: 30,
        allowPrivate: false,
        maxPerMerchant: 16,
        merchantConcurrency: 32,
        connectTimeoutMs: 3_000,
        breakerFailures: 5,
        breakerCooldownMs: 60_000,
      },
    );
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks.allowPrivate, true);
  });

  test('WEBHOOK_ALLOW_PRIVATE is refused in live', () => {
    const live = { ...LIVE, ...providerEnv('https://adapter.internal') };
    assert.throws(
      () => loadConfig({ ...live, WEBHOOK_ALLOW_PRIVATE: 'true' }),
      (err: ConfigError) => /WEBHOOK_ALLOW_PRIVATE/.test(err.problems.join()),
    );
    assert.equal(loadConfig({ ...live, WEBHOOK_ALLOW_PRIVATE: 'false' }).webhooks.allowPrivate, false);
  });

  test('live needs DATABASE_URL, ADMIN_TOKEN, CARD_ENCRYPTION_KEY, WIDGET_SIGNING_KEY, an adapter for every provider and the signing secret', () => {
    assert.throws(
      () => loadConfig({ COFFER_ENV: 'live' }),
      (err: ConfigError) => {
        assert.equal(err.problems.length, 10, err.problems.join('\n'));
        for (const name of [...Object.values(PROVIDER_URL_VARIABLES), 'PROVIDER_SIGNING_SECRET'])
          assert.ok(
            err.problems.some((p) => p.startsWith(`live requires ${name}`)),
            name,
          );
        return true;
      },
    );
    const ok = loadConfig({ ...LIVE, ...providerEnv('https://adapter.internal') });
    assert.equal(ok.environment, 'live');
    assert.equal(ok.cardEncryptionKey?.length, 32);
    assert.equal(ok.providers.urls.cardProcessor, 'https://adapter.internal');
    assert.equal(ok.providers.timeoutMs, 10_000);
  });

  test('provider adapters: https in live (plain http to localhost only), a signing secret with any URL, a well-formed secret', () => {
    assert.deepEqual(problemsOf({ ...LIVE, ...providerEnv('http://127.0.0.1:4100') }), []);
    assert.deepEqual(
      problemsOf({ ...LIVE, ...providerEnv('http://adapter.internal'), KYC_PROVIDER_URL: 'https://kyc.internal/' }),
      [
        'BANK_LINKING_PROVIDER_URL must be an https:// URL in live (plain http only to localhost)',
        'BANK_TRANSFERS_PROVIDER_URL must be an https:// URL in live (plain http only to localhost)',
        'CARD_ISSUER_PROVIDER_URL must be an https:// URL in live (plain http only to localhost)',
        'CARD_PROCESSOR_PROVIDER_URL must be an https:// URL in live (plain http only to localhost)',
      ],
    );
    // The sandbox may use an adapter for some ports (its own providers for the rest), never unsigned.
    assert.deepEqual(problemsOf({ KYC_PROVIDER_URL: 'http://adapter.internal' }), [
      'PROVIDER_SIGNING_SECRET is required when a provider URL is set',
    ]);
    const sandbox = loadConfig({
      KYC_PROVIDER_URL: 'http://adapter.internal/',
      PROVIDER_SIGNING_SECRET: PROVIDER_SIGNING_SECRET,
      PROVIDER_TIMEOUT_MS: '500',
    });
    assert.deepEqual(sandbox.providers.urls, { kyc: 'http://adapter.internal' });
    assert.equal(sandbox.providers.timeoutMs, 500);
    for (const secret of ['secret', `whsec_${Buffer.alloc(16).toString('base64')}`]) {
      assert.deepEqual(problemsOf({ ...LIVE, ...providerEnv('https://a.internal'), PROVIDER_SIGNING_SECRET: secret }), [
        'PROVIDER_SIGNING_SECRET must be whsec_ followed by at least 32 random bytes in base64',
      ]);
    }
    assert.deepEqual(problemsOf({ KYC_PROVIDER_URL: 'ftp://x', PROVIDER_SIGNING_SECRET: PROVIDER_SIGNING_SECRET }), [
      'KYC_PROVIDER_URL must be an http(s) URL (got "ftp://x")',
    ]);
  });

  test('ADMIN_TOKEN and METRICS_TOKEN must be generated tokens: chosen phrases and plain random strings are refused', () => {
    const problem = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return undefined;
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
    };
    const generated = generateToken();
    assert.match(generated, /^cft_[A-Za-z0-9_-]{48}$/);
    assert.notEqual(generateToken(), generated);
    // The body's last character changed: the checksum no longer matches.
    const altered = `${generated.slice(0, -1)}${generated.endsWith('A') ? 'B' : 'A'}`;
    for (const name of ['ADMIN_TOKEN', 'METRICS_TOKEN']) {
      for (const refused of [
        'P@ssw0rd-P@ssw0rd-2024-Coffer-Admin-Token',
        'CofferAdminToken2024ProductionSecretKey!',
        'correct horse battery staple now!',
        'short',
        `cft_${'CofferAdminToken2024ProductionSecretKey'.repeat(2)}`,
        altered,
        // Random, but not in the format: `openssl rand -base64 48`, and the sandbox's older `adm_` tokens (kept only in DATA_DIR/secrets.json).
        'Zq3Vn0xPB1r9Jk+7sLwC2yTfHm6uDgE4aR8oXiQ5bNcW/eYtKpMvS1hUjO3dGlIz',
        'adm_t0GQm2bL9xV4sKcY7rWfJ1nE8hUzPd3oAi6MgNqXZ5k',
      ]) {
        assert.match(
          problem({ [name]: refused }) ?? 'accepted',
          new RegExp(`^${name} must be a generated token .*npx coffer token`),
          `${name}=${refused}`,
        );
      }
      assert.equal(problem({ [name]: generated }), undefined, name);
    }
    // More random bytes than 32 are accepted too, checksum last.
    const random = randomBytes(48);
    const longer = `cft_${Buffer.concat([random, createHash('sha256').update(random).digest().subarray(0, 4)]).toString('base64url')}`;
    assert.equal(problem({ ADMIN_TOKEN: longer }), undefined);
  });

  test('ADMIN_HOST is loopback by default, whatever HOST is', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).adminHost, '127.0.0.1');
    assert.equal(loadConfig({ HOST: '0.0.0.0', ADMIN_HOST: '10.1.2.3' }).adminHost, '10.1.2.3');
  });

  test("live refuses TRUST_PROXY=true; the proxies' addresses are accepted", () => {
    const live = { ...LIVE, ...providerEnv('https://adapter.internal') };
    assert.throws(
      () => loadConfig({ ...live, TRUST_PROXY: 'true' }),
      (err: ConfigError) => /refuses TRUST_PROXY=true/.test(err.problems.join()),
    );
    const proxies = loadConfig({ ...live, TRUST_PROXY: '10.0.0.0/8, 192.168.1.7' }).trustProxy;
    assert.ok(typeof proxies === 'object');
    assert.deepEqual(proxies.ranges, ['10.0.0.0/8', '192.168.1.7/32']);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true, 'the sandbox may trust any proxy');
  });

  test('TRUST_PROXY is parsed once into ranges; live refuses IPv4 ranges wider than /8 and IPv6 wider than /32', () => {
    const live = { ...LIVE, ...providerEnv('https://adapter.internal') };
    // Together, everyone: each half is refused.
    assert.deepEqual(problemsOf({ ...live, TRUST_PROXY: '0.0.0.0/1,128.0.0.0/1' }), [
      "live refuses TRUST_PROXY range 0.0.0.0/1: IPv4 ranges wider than /8 trust more than your proxies, so any client could pick the address the rate limits count; list your proxies' own addresses or subnets",
      "live refuses TRUST_PROXY range 128.0.0.0/1: IPv4 ranges wider than /8 trust more than your proxies, so any client could pick the address the rate limits count; list your proxies' own addresses or subnets",
    ]);
    for (const wide of ['0.0.0.0/0', '10.0.0.0/7', '::/0', '2001:db8::/31', '::ffff:0.0.0.0/96']) {
      assert.match(problemsOf({ ...live, TRUST_PROXY: wide }).join('\n'), /live refuses TRUST_PROXY range/, wide);
    }
    for (const bad of [
      '10.0.0.0/33',
      '10.0.0.0/',
      '10.1',
      '0x0a000001',
      'proxy.internal',
      '10.0.0.1,,10.0.0.2',
      '::1/129',
    ]) {
      assert.match(
        problemsOf({ TRUST_PROXY: bad }).join('\n'),
        /^TRUST_PROXY must be true, false or a comma-separated list of proxy addresses or CIDR ranges/,
        bad,
      );
    }
    const c = loadConfig({ ...live, TRUST_PROXY: '10.0.0.0/8, 2001:db8::/32, ::ffff:192.168.0.0/112, 172.16.0.5' });
    assert.ok(typeof c.trustProxy === 'object');
    assert.deepEqual(c.trustProxy.ranges, ['10.0.0.0/8', '2001:db8::/32', '192.168.0.0/16', '172.16.0.5/32']);
    const { trusts } = c.trustProxy;
    for (const a of ['10.1.2.3', '::ffff:10.1.2.3', '2001:db8:1::7', '192.168.4.5', '172.16.0.5'])
      assert.ok(trusts(a), a);
    for (const a of ['11.0.0.1', '2001:db9::1', '172.16.0.6', '127.0.0.1', 'unknown', '']) assert.ok(!trusts(a), a);
    // The sandbox may trust everyone, as with TRUST_PROXY=true.
    const everyone = loadConfig({ TRUST_PROXY: '0.0.0.0/0' }).trustProxy;
    assert.ok(typeof everyone === 'object' && everyone.trusts('203.0.113.9'));
  });

  test('live refuses a plain-http CONSOLE_URL or OpenTelemetry endpoint off loopback', () => {
    const live = { ...LIVE, ...providerEnv('https://adapter.internal') };
    assert.deepEqual(problemsOf({ ...live, CONSOLE_URL: 'http://console.example.com' }), [
      "live refuses CONSOLE_URL=http://console.example.com: give the console's https:// address (plain http only on loopback), so its cookies are Secure",
    ]);
    assert.deepEqual(problemsOf({ ...live, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:secret@collector:4318' }), [
      "live refuses OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318: give the collector's https:// address (plain http only on loopback, to a collector beside the process)",
    ]);
    assert.equal(problemsOf({ ...live, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://10.0.0.9:4318' }).length, 1);
    for (const ok of <Record<string, string>[]>[
      { CONSOLE_URL: 'https://console.example.com' },
      { CONSOLE_URL: 'http://localhost:3004' },
      { CONSOLE_URL: 'http://127.0.0.1:3004' },
      { CONSOLE_URL: 'http://[::1]:3004' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' },
    ])
      assert.deepEqual(problemsOf({ ...live, ...ok }), [], JSON.stringify(ok));
    // The sandbox keeps plain http anywhere.
    assert.deepEqual(
      problemsOf({ CONSOLE_URL: 'http://console.test', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
      [],
    );
  });

  test('database timeouts: 60 s statements, 10 s lock waits, 15 s idle in a transaction, each configurable (0: none)', () => {
    assert.deepEqual(loadConfig({}).databaseTimeouts, {
      statementMs: 60_000,
      lockMs: 10_000,
      idleInTransactionMs: 15_000,
    });
    assert.deepEqual(
      loadConfig({
        DATABASE_STATEMENT_TIMEOUT_MS: '5000',
        DATABASE_LOCK_TIMEOUT_MS: '0',
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '2500',
      }).databaseTimeouts,
      { statementMs: 5_000, lockMs: 0, idleInTransactionMs: 2_500 },
    );
    assert.throws(
      () => loadConfig({ DATABASE_LOCK_TIMEOUT_MS: '-1' }),
      (err: ConfigError) => /DATABASE_LOCK_TIMEOUT_MS must be an integer between 0 and/.test(err.problems.join()),
    );
  });

  test('observability: metrics token, ledger check interval, tracing off unless an OTLP endpoint is given', () => {
    const d = loadConfig({}).observability;
    assert.deepEqual(d, {
      metricsToken: undefined,
      ledgerCheckIntervalMs: 3_600_000,
      otlpEndpoint: undefined,
      serviceName: 'coffer',
    });
    const set = loadConfig({
      METRICS_TOKEN: STRONG_TOKEN,
      LEDGER_CHECK_INTERVAL_S: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_SERVICE_NAME: 'coffer-eu',
    }).observability;
    assert.deepEqual(set, {
      metricsToken: STRONG_TOKEN,
      ledgerCheckIntervalMs: 0,
      otlpEndpoint: 'http://collector:4318',
      serviceName: 'coffer-eu',
    });
    assert.match(
      problemsOf({ LEDGER_CHECK_INTERVAL_S: '5' }).join('\n'),
      /LEDGER_CHECK_INTERVAL_S must be 0 \(off\) or at least 60/,
    );
    assert.match(
      problemsOf({ LEDGER_CHECK_INTERVAL_S: 'often' }).join('\n'),
      /LEDGER_CHECK_INTERVAL_S must be an integer/,
    );
    assert.match(
      problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }).join('\n'),
      /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/,
    );
  });
});

/** What loadConfig refuses of `env`, one problem each (none when it accepts it). */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
}

const LIVE = {
  COFFER_ENV: 'live',
  DATABASE_URL: 'postgres://db/coffer',
  ADMIN_TOKEN: STRONG_TOKEN,
  CARD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
  WIDGET_SIGNING_KEY: Buffer.alloc(32).toString('base64'),
};

describe('the settings schema (src/settings.ts)', () => {
  test('the README table and .env.example are generated from it and current (npm run docs:config)', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    assert.equal(readme, withSettingsTable(readme), 'README.md: run npm run docs:config');
    const example = await readFile(new URL('../.env.example', import.meta.url), 'utf8');
    assert.equal(example, envExample(), '.env.example: run npm run docs:config');
    for (const s of SETTINGS) assert.ok(example.includes(`# ${s.name}=`), s.name);
  });

  test('each integer setting is bounded by its declared range and defaults to its declared value', () => {
    const server = SETTINGS.filter((s) => s.type === 'integer' && !s.tool);
    assert.ok(server.length > 30);
    for (const s of server) {
      assert.throws(
        () => loadConfig({ [s.name]: String(s.max! + 1) }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(`${s.name} must be an integer between`),
        s.name,
      );
      try {
        loadConfig({ [s.name]: String(s.min) });
      } catch (e) {
        // The minimum may break a rule between settings (events outliving retries), never its range.
        assert.ok(!String(e).includes(`${s.name} must be an integer`), s.name);
      }
    }
    const c = loadConfig({});
    assert.equal(c.webhooks.timeoutMs, Number(setting('WEBHOOK_TIMEOUT_MS').default));
    assert.equal(c.databasePoolSize, Number(setting('DATABASE_POOL_SIZE').default));
    assert.deepEqual(c.webhooks.retryDelaysS, setting('WEBHOOK_RETRY_DELAYS').default!.split(',').map(Number));
  });

  test('every declared setting is read by the code, and reading an undeclared one is a bug', async () => {
    const sources = await Promise.all(
      ['./config.ts', './cli/main.ts', '../examples/merchant/run.ts'].map((f) =>
        readFile(new URL(f, import.meta.url), 'utf8'),
      ),
    );
    const code = sources.join('\n');
    for (const s of SETTINGS) assert.ok(code.includes(`'${s.name}'`), `${s.name} is declared but not read`);
    assert.throws(() => setting('NOT_A_SETTING'), /not declared in src\/settings.ts/);
  });

  test('LOG_FORMAT is pretty or json; unset, logs are pretty only on a terminal', () => {
    assert.equal(loadConfig({}).logFormat, 'auto');
    assert.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'xml' }), /LOG_FORMAT must be pretty or json/);
  });
});
