// Rate limit: N requests per minute per source IP over every API route, 429
// RateLimitExceeded with Retry-After and RateLimit-* headers, counted across processes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TestClock } from '../clock.ts';
import { createTestApp, randomIp as ip, type Merchant, type TestApp } from '../test/harness.ts';

describe('rate limit', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
    m = await t.createMerchant();
  });
  after(() => t.close());

  const hit = (app: TestApp, from: string, url = '/api/v1/users') =>
    app.api.inject({ method: 'GET', url, headers: m.headers, remoteAddress: from });

  test('the request after the limit is 429 RateLimitExceeded with Retry-After and RateLimit-* headers', async () => {
    const from = ip();
    for (let i = 0; i < 5; i++) {
      const ok = await hit(t, from);
      assert.equal(ok.statusCode, 200, `request ${i + 1}`);
      assert.equal(ok.headers['ratelimit-limit'], '5');
      assert.equal(ok.headers['ratelimit-remaining'], String(4 - i));
    }
    const res = await hit(t, from);
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['content-type'], 'application/vnd.api+json');
    assert.equal(res.headers['retry-after'], '60');
    assert.equal(res.headers['ratelimit-remaining'], '0');
    assert.ok(res.headers['x-request-id']);
    const [e] = res.json().errors;
    assert.equal(e.status, '429');
    assert.equal(e.code, 'RateLimitExceeded');
  });

  test('every route counts, including unauthenticated calls, errors and unknown paths', async () => {
    const from = ip();
    await t.api.inject({ method: 'GET', url: '/api/v1/users', remoteAddress: from }); // 401
    await t.api.inject({ method: 'GET', url: '/api/v1/nowhere', headers: m.headers, remoteAddress: from }); // 404
    await t.api.inject({ method: 'GET', url: '/health', remoteAddress: from });
    await hit(t, from, '/api/v1/users?page[limit]=zero'); // 400
    await hit(t, from);
    assert.equal((await hit(t, from)).statusCode, 429);
  });

  test('addresses are counted separately', async () => {
    const a = ip();
    for (let i = 0; i < 6; i++) await hit(t, a);
    assert.equal((await hit(t, a)).statusCode, 429);
    assert.equal((await hit(t, ip())).statusCode, 200);
  });

  test('the count starts again in the next minute', async () => {
    const from = ip();
    for (let i = 0; i < 6; i++) await hit(t, from);
    assert.equal((await hit(t, from)).statusCode, 429);
    t.clock.advance(60_000);
    assert.equal((await hit(t, from)).statusCode, 200);
  });

  test('two server processes on one database share the count', async () => {
    const clock = new TestClock(new Date('2026-07-01T00:00:10Z'));
    const a = await createTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '10' } });
    const b = await createTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '10' } });
    try {
      const from = ip();
      for (let i = 0; i < 6; i++) assert.equal((await hit(a, from)).statusCode, 200);
      // Each process shares its counts on its sync timer; run the syncs now instead of waiting.
      await a.rateLimitStore.sync();
      await b.rateLimitStore.sync();
      const results: number[] = [];
      for (let i = 0; i < 6; i++) results.push((await hit(b, from)).statusCode);
      assert.deepEqual(results, [200, 200, 200, 200, 429, 429], 'B admits only what A left over');
      await b.rateLimitStore.sync();
      await a.rateLimitStore.sync();
      assert.equal((await hit(a, from)).statusCode, 429, 'and A now sees what B admitted');
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('rate limit behind a proxy', () => {
  test('with TRUST_PROXY the client address comes from X-Forwarded-For; without it, from the peer', async () => {
    const proxied = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' } });
    const direct = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '2' } });
    try {
      const m = await proxied.createMerchant();
      const viaProxy = (app: TestApp, client: string, peer: string) =>
        app.api.inject({
          method: 'GET',
          url: '/api/v1/users',
          headers: { ...m.headers, 'x-forwarded-for': client },
          remoteAddress: peer,
        });
      const lb = '127.0.0.1';
      const peerA = ip();
      for (let i = 0; i < 2; i++) assert.equal((await viaProxy(proxied, peerA, lb)).statusCode, 200);
      assert.equal((await viaProxy(proxied, peerA, lb)).statusCode, 429);
      assert.equal(
        (await viaProxy(proxied, ip(), lb)).statusCode,
        200,
        'another client behind the same proxy has its own count',
      );
      // Without TRUST_PROXY the header is ignored: a client cannot pick a fresh address per request.
      const peer = ip();
      for (let i = 0; i < 2; i++) await viaProxy(direct, ip(), peer);
      assert.equal((await viaProxy(direct, ip(), peer)).statusCode, 429);
    } finally {
      await proxied.close();
      await direct.close();
    }
  });
});

describe('rate limits of the other listeners, and per merchant', () => {
  let t: TestApp;
  /** Without the low limits: creates the merchants. */
  let setup: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({
      env: {
        CARD_RATE_LIMIT_PER_MINUTE: '2',
        PAY_RATE_LIMIT_PER_MINUTE: '2',
        ADMIN_RATE_LIMIT_PER_MINUTE: '2',
        CLIENT_RATE_LIMIT_PER_MINUTE: '3',
        RATE_LIMIT_PER_MINUTE: '100',
      },
    });
    setup = await createTestApp();
    m = await setup.createMerchant();
  });
  after(async () => {
    await t.close();
    await setup.close();
  });

  test('the secure card, widget host and admin listeners each count per address', async () => {
    for (const [name, app] of [
      ['card', t.card],
      ['pay', t.pay],
      ['admin', t.admin],
    ] as const) {
      const from = ip();
      // Anything counts: a health check, an unauthenticated call.
      assert.equal((await app.inject({ method: 'GET', url: '/health', remoteAddress: from })).statusCode, 200, name);
      assert.notEqual(
        (
          await app.inject({
            method: 'GET',
            url: name === 'admin' ? '/admin/v1/clients' : '/main.js',
            remoteAddress: from,
          })
        ).statusCode,
        429,
        name,
      );
      const res = await app.inject({ method: 'GET', url: '/health', remoteAddress: from });
      assert.equal(res.statusCode, 429, name);
      assert.equal(res.json().errors[0].code, 'RateLimitExceeded', name);
      assert.ok(Number(res.headers['retry-after']) > 0, name);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/health', remoteAddress: ip() })).statusCode,
        200,
        `${name}: another address`,
      );
    }
    // The admin token does not lift the admin limit.
    const from = ip();
    const admin = () =>
      t.admin.inject({
        method: 'GET',
        url: '/admin/v1/clients',
        remoteAddress: from,
        headers: { authorization: `Bearer ${t.ctx.config.adminToken}` },
      });
    assert.equal((await admin()).statusCode, 200);
    assert.equal((await admin()).statusCode, 200);
    assert.equal((await admin()).statusCode, 429);
  });

  test('the API counts per merchant too, from any address; the address headers stay', async () => {
    const get = (as: Merchant) =>
      t.api.inject({ method: 'GET', url: '/api/v1/users', headers: as.headers, remoteAddress: ip() });
    for (let i = 0; i < 3; i++) {
      const ok = await get(m);
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['ratelimit-limit'], '100', 'the per-address headers');
    }
    const refused = await get(m);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().errors[0].code, 'RateLimitExceeded');
    assert.match(refused.json().errors[0].detail, /More than 3 requests in a minute for this client/);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal((await get(await setup.createMerchant())).statusCode, 200, 'another merchant has its own count');
    t.clock.advance(60_000);
    assert.equal((await get(m)).statusCode, 200, 'and the next minute starts again');
  });
});
