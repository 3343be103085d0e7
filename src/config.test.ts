// Configuration rules (decisions §1). The process-level refusals are in main.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

const STRONG_TOKEN = 'Zq3Vn0xPB1r9Jk+7sLwC2yTfHm6uDgE4aR8oXiQ5bNcW/eYtKpMvS1hUjO3dGlIz';

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

  test('live needs DATABASE_URL, ADMIN_TOKEN, CARD_ENCRYPTION_KEY and WIDGET_SIGNING_KEY', () => {
    assert.throws(() => loadConfig({ COFFER_ENV: 'live' }), (err: ConfigError) => err.problems.length === 4);
    const ok = loadConfig({
      COFFER_ENV: 'live',
      DATABASE_URL: 'postgres://db/coffer',
      ADMIN_TOKEN: STRONG_TOKEN,
      CARD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32).toString('base64'),
    });
    assert.equal(ok.environment, 'live');
    assert.equal(ok.cardEncryptionKey?.length, 32);
  });

  test('ADMIN_TOKEN needs an estimated 128 bits of entropy; generated-looking tokens pass', () => {
    const problem = (token: string) => {
      try {
        loadConfig({ ADMIN_TOKEN: token });
        return undefined;
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
    };
    for (const weak of [
      'a'.repeat(40),
      'abcdefghijklmnopqrstuvwxyzabcdefgh',
      '0123456789012345678901234567890123',
      'password-password-password-password',
      'correct horse battery staple now!',
      'test-admin-token-0123456789abcdef0123456789',
      'e3b0c44298fc1c149afbf4c8996fb924', // 32 hex characters: 128 bits at best, estimated below
    ]) {
      assert.match(problem(weak) ?? 'accepted', /too guessable.*openssl rand -base64 48/, weak);
    }
    assert.match(problem('short') ?? '', /at least 32 characters/);
    for (const strong of [STRONG_TOKEN, 'adm_t0GQm2bL9xV4sKcY7rWfJ1nE8hUzPd3oAi6MgNqXZ5k', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855']) {
      assert.equal(problem(strong), undefined, strong);
    }
  });

  test('ADMIN_HOST is loopback by default, whatever HOST is', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).adminHost, '127.0.0.1');
    assert.equal(loadConfig({ HOST: '0.0.0.0', ADMIN_HOST: '10.1.2.3' }).adminHost, '10.1.2.3');
  });

  test("live refuses TRUST_PROXY=true; the proxies' addresses are accepted", () => {
    const live = {
      COFFER_ENV: 'live',
      DATABASE_URL: 'postgres://db/coffer',
      ADMIN_TOKEN: STRONG_TOKEN,
      CARD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32).toString('base64'),
    };
    assert.throws(() => loadConfig({ ...live, TRUST_PROXY: 'true' }), (err: ConfigError) => /refuses TRUST_PROXY=true/.test(err.problems.join()));
    assert.equal(loadConfig({ ...live, TRUST_PROXY: '10.0.0.0/8, 192.168.1.7' }).trustProxy, '10.0.0.0/8, 192.168.1.7');
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true, 'the sandbox may trust any proxy');
  });
});
