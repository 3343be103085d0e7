// Merchant authentication: Client-ID + Bearer secret, 401/403, hashed secrets, rotation.
import assert from 'node:assert/strict';
import crypto, { createHash } from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import { ADMIN_TOKEN, createTestApp, errorsOf, type Merchant, type TestApp } from '../test/harness.ts';

describe('client authentication', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const get = (headers: Record<string, string>) => t.request('GET', '/api/v1/users', { headers });

  test('valid Client-ID and secret pass', async () => {
    assert.equal((await get(m.headers)).status, 200);
    assert.equal(
      (await get({ 'client-id': m.clientId.toUpperCase(), authorization: `bearer ${m.secret}` })).status,
      200,
    );
  });

  test('missing, malformed, unknown or mismatched credentials are 401 Unauthorized', async () => {
    const cases: [string, Record<string, string>][] = [
      ['no headers', {}],
      ['no secret', { 'client-id': m.clientId }],
      ['no client id', { authorization: `Bearer ${m.secret}` }],
      ['client id not a uuid', { 'client-id': 'merchant-1', authorization: `Bearer ${m.secret}` }],
      ['not a bearer token', { 'client-id': m.clientId, authorization: `Basic ${m.secret}` }],
      ['empty bearer', { 'client-id': m.clientId, authorization: 'Bearer ' }],
      ['unknown client', { 'client-id': '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', authorization: `Bearer ${m.secret}` }],
      ['wrong secret', { 'client-id': m.clientId, authorization: `Bearer ${m.secret}x` }],
      ["another client's secret", { 'client-id': m.clientId, authorization: `Bearer ${other.secret}` }],
    ];
    for (const [label, headers] of cases) {
      const res = await get(headers);
      assert.equal(res.status, 401, label);
      const [e] = errorsOf(res);
      assert.equal(e!.code, 'Unauthorized', label);
      assert.equal(e!.status, '401', label);
    }
  });

  test('authentication is checked before the body is looked at', async () => {
    const res = await t.request('POST', '/api/v1/users', {
      headers: { 'content-type': 'application/json' },
      rawBody: '{broken',
    });
    assert.equal(res.status, 401);
  });

  test('secrets are 32+ random bytes and only their SHA-256 is stored', async () => {
    assert.match(m.secret, /^sk_sandbox_[A-Za-z0-9_-]{43}$/);
    assert.ok(Buffer.from(m.secret.slice('sk_sandbox_'.length), 'base64url').length >= 32);
    const rows = rowsOf<{ hash: Buffer; hint: string }>(
      await t.ctx.db.execute(sql`select hash, hint from client_secrets where client_id = ${m.clientId}`),
    );
    assert.equal(rows.length, 1);
    assert.deepEqual(Buffer.from(rows[0]!.hash), createHash('sha256').update(m.secret).digest());
    assert.equal(rows[0]!.hint, m.secret.slice(-4));
    // The plain secret appears in no table.
    const dump = rowsOf<{ t: string }>(
      await t.ctx.db.execute(
        sql`select row_to_json(c)::text as t from clients c union all select row_to_json(s)::text from client_secrets s`,
      ),
    );
    assert.ok(dump.every((r) => !r.t.includes(m.secret)));
  });

  test('a disabled client is 403 ClientDisabled; enabling it again restores access', async () => {
    const d = await t.createMerchant();
    const off = await t.adminRequest('PATCH', `/admin/v1/clients/${d.clientId}`, {
      body: { data: { type: 'Client', attributes: { disabled: true } } },
    });
    assert.equal(off.status, 200);
    const res = await get(d.headers);
    assert.equal(res.status, 403);
    assert.equal(errorsOf(res)[0]!.code, 'ClientDisabled');
    // A wrong secret is still 401: being disabled is not revealed to strangers.
    assert.equal((await get({ ...d.headers, authorization: 'Bearer nope' })).status, 401);
    await t.adminRequest('PATCH', `/admin/v1/clients/${d.clientId}`, {
      body: { data: { type: 'Client', attributes: { disabled: false } } },
    });
    assert.equal((await get(d.headers)).status, 200);
  });

  test('rotation: several secrets are valid at once until one is deleted', async () => {
    const r = await t.createMerchant();
    const rot = await t.adminRequest('POST', `/admin/v1/clients/${r.clientId}/secrets`);
    assert.equal(rot.status, 201);
    const second = rot.body.data.attributes.secret as string;
    assert.notEqual(second, r.secret);
    assert.equal((await get(r.headers)).status, 200);
    assert.equal((await get({ 'client-id': r.clientId, authorization: `Bearer ${second}` })).status, 200);
    const del = await t.adminRequest('DELETE', `/admin/v1/clients/${r.clientId}/secrets/${r.secretId}`);
    assert.equal(del.status, 204);
    assert.equal((await get(r.headers)).status, 401);
    assert.equal((await get({ 'client-id': r.clientId, authorization: `Bearer ${second}` })).status, 200);
  });

  test('with a long auth cache, admin changes in this process still apply at once', async () => {
    const cached = await createTestApp({ env: { AUTH_CACHE_TTL_MS: '600000' } });
    try {
      const c = await cached.createMerchant();
      const get2 = (h: Record<string, string>) => cached.request('GET', '/api/v1/users', { headers: h });
      assert.equal((await get2(c.headers)).status, 200);
      await cached.adminRequest('PATCH', `/admin/v1/clients/${c.clientId}`, {
        body: { data: { type: 'Client', attributes: { disabled: true } } },
      });
      assert.equal((await get2(c.headers)).status, 403);
      await cached.adminRequest('PATCH', `/admin/v1/clients/${c.clientId}`, {
        body: { data: { type: 'Client', attributes: { disabled: false } } },
      });
      await cached.adminRequest('DELETE', `/admin/v1/clients/${c.clientId}/secrets/${c.secretId}`);
      assert.equal((await get2(c.headers)).status, 401);
    } finally {
      await cached.close();
    }
  });

  test('the admin token does not open the merchant API, nor a merchant secret the admin API', async () => {
    assert.equal((await get({ 'client-id': m.clientId, authorization: `Bearer ${ADMIN_TOKEN}` })).status, 401);
    const res = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/clients',
      headers: { authorization: `Bearer ${m.secret}` },
    });
    assert.equal(res.statusCode, 401);
  });
});

/**
 * The byte lengths of both inputs of every crypto.timingSafeEqual call made while `fn` runs
 * (the ESM binding the server imported is updated through syncBuiltinESMExports).
 */
async function comparisons(fn: () => Promise<unknown>): Promise<string[]> {
  const original = crypto.timingSafeEqual;
  const calls: string[] = [];
  crypto.timingSafeEqual = ((a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    calls.push(`${a.byteLength}=${b.byteLength}`);
    return original(a, b);
  }) as typeof original;
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  }
  return calls;
}

describe('credentials are compared in constant time', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('a merchant secret is checked against every stored hash, equal lengths, whichever is right or wrong', async () => {
    const r = await t.createMerchant();
    const second = (await t.adminRequest('POST', `/admin/v1/clients/${r.clientId}/secrets`)).body.data.attributes
      .secret as string;
    const third = (await t.adminRequest('POST', `/admin/v1/clients/${r.clientId}/secrets`)).body.data.attributes
      .secret as string;
    const as = (secret: string) => () =>
      t.request('GET', '/api/v1/users', { headers: { 'client-id': r.clientId, authorization: `Bearer ${secret}` } });
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const cases = {
      'the oldest secret': r.secret,
      'the newest secret': third,
      'a middle secret': second,
      'wrong in its first character': flip(r.secret, 0),
      'wrong in its last character': flip(r.secret, r.secret.length - 1),
      'one character': 'x',
      '500 characters': 'y'.repeat(500),
    };
    for (const [name, secret] of Object.entries(cases)) {
      assert.deepEqual(await comparisons(as(secret)), ['32=32', '32=32', '32=32'], name);
    }
    // An unknown client still costs a comparison, against a dummy hash.
    const unknown = await comparisons(() =>
      t.request('GET', '/api/v1/users', {
        headers: { 'client-id': crypto.randomUUID(), authorization: `Bearer ${r.secret}` },
      }),
    );
    assert.deepEqual(unknown, ['32=32']);
  });

  test('the admin token: one comparison of equal-length digests, right or wrong', async () => {
    const admin = (token: string) => () =>
      t.admin.inject({ method: 'GET', url: '/admin/v1/clients', headers: { authorization: `Bearer ${token}` } });
    for (const token of [ADMIN_TOKEN, `${ADMIN_TOKEN.slice(0, -1)}X`, 'x', 'z'.repeat(1000)]) {
      assert.deepEqual(await comparisons(admin(token)), ['32=32'], token);
    }
  });
});

describe('secrets and environments', () => {
  test('a sandbox secret is refused by a live process and a live secret by a sandbox one, on one database', async () => {
    const sandbox = await createTestApp();
    const live = await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' } });
    try {
      const s = await sandbox.createMerchant();
      const l = await live.createMerchant();
      assert.match(s.secret, /^sk_sandbox_/);
      assert.match(l.secret, /^sk_live_/);
      const get = (app: TestApp, as: Merchant) => app.request('GET', '/api/v1/users', { as });
      assert.equal((await get(sandbox, s)).status, 200);
      assert.equal((await get(live, l)).status, 200);
      const refused = await get(live, s);
      assert.equal(refused.status, 401);
      assert.match(errorsOf(refused)[0]!.detail, /live environment: use a sk_live_… secret/);
      assert.equal((await get(sandbox, l)).status, 401);
      // On the card listener too.
      const card = await live.card.inject({
        method: 'GET',
        url: `/api/v1/payments/${crypto.randomUUID()}/card`,
        headers: s.headers,
      });
      assert.equal(card.statusCode, 401);
    } finally {
      await sandbox.close();
      await live.close();
    }
  });
});
