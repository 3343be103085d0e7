// Configuration rules (decisions §1). The process-level refusals are in main.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

describe('configuration', () => {
  test('defaults: sandbox, 127.0.0.1, ports 3000-3003, links on localhost, PGlite in ./.coffer/data', () => {
    const c = loadConfig({});
    assert.equal(c.environment, 'sandbox');
    assert.equal(c.host, '127.0.0.1');
    assert.deepEqual(
      Object.fromEntries(Object.entries(c.listeners).map(([k, v]) => [k, [v.port, v.publicUrl]])),
      { api: [3000, 'http://localhost:3000'], card: [3001, 'http://localhost:3001'], pay: [3002, 'http://localhost:3002'], admin: [3003, 'http://localhost:3003'] },
    );
    assert.equal(c.databaseUrl, undefined);
    assert.match(c.dataDir, /\.coffer\/data$/);
    assert.equal(c.rateLimit.perMinute, 10_000);
    assert.deepEqual(c.enabledListeners, ['api', 'card', 'pay', 'admin']);
  });

  test('public URLs, listeners and limits come from the environment', () => {
    const c = loadConfig({ BASE_URL: 'https://api.example.com/', SECURE_URL: 'https://cards.example.com', LISTENERS: 'api,admin', RATE_LIMIT_PER_MINUTE: '50', HOST: '0.0.0.0' });
    assert.equal(c.listeners.api.publicUrl, 'https://api.example.com');
    assert.equal(c.listeners.card.publicUrl, 'https://cards.example.com');
    assert.deepEqual(c.enabledListeners, ['api', 'admin']);
    assert.equal(c.rateLimit.perMinute, 50);
    assert.equal(c.host, '0.0.0.0');
  });

  test('every bad value is reported at once', () => {
    try {
      loadConfig({ COFFER_ENV: 'staging', PORT: 'x', BASE_URL: 'ftp://x', LISTENERS: 'api,web', DATABASE_URL: 'mysql://x', ADMIN_TOKEN: 'short', RATE_LIMIT_PER_MINUTE: '0' });
      assert.fail('should throw');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 7, err.problems.join('\n'));
    }
  });

  test('webhook receivers: public addresses only, 16 webhooks and 16 attempts in flight per merchant, a 3 s connect timeout', () => {
    const c = loadConfig({});
    assert.deepEqual(
      { ...c.webhooks, retryDelaysS: undefined },
      {
        timeoutMs: 15_000,
        retryDelaysS: undefined,
        pollMs: 250,
        concurrency: 128,
        allowPrivate: false,
        maxPerMerchant: 16,
        merchantConcurrency: 16,
        connectTimeoutMs: 3_000,
        breakerFailures: 5,
        breakerCooldownMs: 60_000,
      },
    );
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks.allowPrivate, true);
  });

  test('WEBHOOK_ALLOW_PRIVATE is refused in live', () => {
    const live = {
      COFFER_ENV: 'live',
      DATABASE_URL: 'postgres://db/coffer',
      ADMIN_TOKEN: 'a'.repeat(40),
      CARD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32).toString('base64'),
    };
    assert.throws(() => loadConfig({ ...live, WEBHOOK_ALLOW_PRIVATE: 'true' }), (err: ConfigError) => /WEBHOOK_ALLOW_PRIVATE/.test(err.problems.join()));
    assert.equal(loadConfig({ ...live, WEBHOOK_ALLOW_PRIVATE: 'false' }).webhooks.allowPrivate, false);
  });

  test('live needs DATABASE_URL, ADMIN_TOKEN, CARD_ENCRYPTION_KEY and WIDGET_SIGNING_KEY', () => {
    assert.throws(() => loadConfig({ COFFER_ENV: 'live' }), (err: ConfigError) => err.problems.length === 4);
    const ok = loadConfig({
      COFFER_ENV: 'live',
      DATABASE_URL: 'postgres://db/coffer',
      ADMIN_TOKEN: 'a'.repeat(40),
      CARD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32).toString('base64'),
    });
    assert.equal(ok.environment, 'live');
    assert.equal(ok.cardEncryptionKey?.length, 32);
  });
});
