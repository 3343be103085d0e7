// Widgets (decisions §11): the payload API and the widget host's pages, assets and frame API,
// through HTTP on both databases. The browser half is in browser.test.ts.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, phone, randomIp as ip, type Merchant, type Response, type TestApp } from '../../test/harness.ts';
import { fundedWallet } from '../../test/money.ts';
import { dateLabel } from '../identity/questions.ts';

const MINUTE = 60_000;

describe('widgets', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({ widget: { buttonText: 'Pay with Bean Wallet', textStyle: 'small', togglePosition: 'left', toggleStyle: 'checkbox' } });
    other = await t.createMerchant();
  });
  after(() => t.close());

  const payloadFor = async (walletId: string, as = m, query = '') => {
    const res = await t.request('GET', `/api/v1/widgets/wallet/${walletId}${query}`, { as });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.attributes.payload as string;
  };
  const claimsOf = (payload: string) => {
    const [header, claims] = Buffer.from(payload, 'base64').toString('utf8').split('.');
    return { header: JSON.parse(Buffer.from(header!, 'base64url').toString()), claims: JSON.parse(Buffer.from(claims!, 'base64url').toString()) };
  };
  const host = async (method: string, url: string, opts: { payload?: string; clientId?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> => {
    const res = await t.pay.inject({
      method: method as 'GET',
      url,
      headers: {
        ...(opts.payload ? { authorization: `Widget ${opts.payload}` } : {}),
        ...(opts.clientId ? { 'x-client-id': opts.clientId } : {}),
        ...(opts.body ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      },
      ...(opts.body ? { payload: JSON.stringify(opts.body) } : {}),
    });
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = res.body;
    }
    return { status: res.statusCode, headers: res.headers, body, raw: res.body };
  };

  describe('GET /api/v1/widgets/wallet/{walletId}', () => {
    test('a base64 payload: an HS256 token naming client, wallet and user, valid 15 minutes, with no secret in it', async () => {
      const { wallet, user } = await fundedWallet(t, m, 5_000);
      const res = await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}?purchaseAmount=2500`, { as: m });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.type, 'WalletWidgetData');
      const payload = res.body.data.attributes.payload as string;
      assert.match(payload, /^[A-Za-z0-9+/]+=*$/);
      const { header, claims } = claimsOf(payload);
      assert.equal(header.alg, 'HS256');
      assert.equal(claims.cid, m.clientId);
      assert.equal(claims.wid, wallet.id);
      assert.equal(claims.sub, user.id);
      assert.equal(claims.amt, 2500);
      assert.equal(claims.exp - claims.iat, 900);
      assert.equal(res.body.data.attributes.expiresAt, new Date(t.clock.now().getTime() + 15 * MINUTE).toISOString().replace(/\.\d{3}Z$/, '.000Z'));
      assert.equal(res.body.data.id, claims.jti);
      const decoded = Buffer.from(payload, 'base64').toString();
      assert.ok(!decoded.includes(m.secret) && !decoded.includes(m.secret.slice(-20)), 'no client secret in the payload');
    });

    test("another merchant's or an unknown wallet is 404; a bad purchaseAmount is 400", async () => {
      const { wallet } = await fundedWallet(t, m, 0);
      for (const [id, as] of [[wallet.id, other], [crypto.randomUUID(), m]] as const) {
        const res = await t.request('GET', `/api/v1/widgets/wallet/${id}`, { as });
        assert.equal(res.status, 404);
        assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
      }
      const bad = await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}?purchaseAmount=-1`, { as: m });
      assert.equal(bad.status, 400);
      assert.equal(errorsOf(bad)[0]!.source?.parameter, 'purchaseAmount');
      assert.equal((await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}`)).status, 401);
    });
  });

  describe('the widget host', () => {
    test('serves main.js, minified, with an ETag that answers 304', async () => {
      const res = await host('GET', '/main.js');
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^application\/javascript/);
      assert.ok(res.raw.includes('service-pay') && res.raw.includes('ServicePay::Ready'));
      assert.ok(!res.raw.includes('\n  '), 'minified');
      assert.equal(res.headers['cross-origin-resource-policy'], 'cross-origin', 'loadable by merchant pages');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      const again = await host('GET', '/main.js', { headers: { 'if-none-match': String(res.headers.etag) } });
      assert.equal(again.status, 304);
      for (const asset of ['/_/assets/frame.js', '/_/assets/frame.css']) assert.equal((await host('GET', asset)).status, 200, asset);
      // A budget, so a dependency pulled into the page script does not go unnoticed.
      assert.ok(gzipSync(res.raw).length < 4_096, `main.js is ${gzipSync(res.raw).length} bytes gzipped`);
    });

    test("a frame page carries the merchant's widget settings, under a CSP; unknown clients and flows are refused", async () => {
      const res = await host('GET', `/_/wallet-balance/?client=${m.clientId}&origin=${encodeURIComponent('http://shop.test')}&amount=2500`);
      assert.equal(res.status, 200, res.raw);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(String(res.headers['content-security-policy']), /script-src 'self'/);
      // Browser-facing headers (helmet), minus what embedding forbids.
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      assert.equal(res.headers['x-frame-options'], undefined, 'frames are embeddable');
      assert.equal(res.headers['strict-transport-security'], undefined, 'no HSTS in the sandbox (plain http)');
      assert.match(res.raw, /<body class="text-small" data-flow="wallet-balance"/);
      assert.match(res.raw, /Pay with Bean Wallet/);
      assert.match(res.raw, /&#34;togglePosition&#34;:&#34;left&#34;/);
      assert.equal((await host('GET', `/_/wallet/?client=${crypto.randomUUID()}`)).status, 404);
      assert.equal((await host('GET', `/_/nope/?client=${m.clientId}`)).status, 400);
      assert.equal((await host('GET', `/_/wallet/?client=${m.clientId}&evil=1`)).status, 400);
    });

    test("the frame API shows only the payload's wallet, with balance and rewards for the amount", async () => {
      const { wallet } = await fundedWallet(t, m, 5_000);
      assert.equal((await t.request('POST', '/api/v1/rewards', { as: m, body: { data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 300, idempotencyKey: crypto.randomUUID() } } } })).status, 200);
      const payload = await payloadFor(wallet.id, m, '?purchaseAmount=2500');
      const res = await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(res.body.data.attributes, { walletId: wallet.id, purchaseAmount: 2500, available: 5_300, eligibleReward: 300, rewardMinimumPurchase: 0, purchaseReward: null });
      const small = await host('GET', '/_/api/widget-data?amount=100', { payload, clientId: m.clientId });
      assert.equal(small.body.data.attributes.eligibleReward, 100, 'rewards usable on $1.00');
      assert.equal(res.headers['cache-control'], 'no-store');
    });

    test('the frame API refuses a missing, tampered, foreign or expired payload with 401', async () => {
      const { wallet } = await fundedWallet(t, m, 0);
      const payload = await payloadFor(wallet.id);
      const jwt = Buffer.from(payload, 'base64').toString();
      const [h, c, s] = jwt.split('.');
      const claims = JSON.parse(Buffer.from(c!, 'base64url').toString());
      const forged = Buffer.from(`${h}.${Buffer.from(JSON.stringify({ ...claims, wid: crypto.randomUUID() })).toString('base64url')}.${s}`).toString('base64');
      const cases: [string | undefined, string][] = [
        [undefined, m.clientId],
        [forged, m.clientId],
        ['bm90LWEtdG9rZW4tYXQtYWxs', m.clientId],
        [payload, other.clientId],
      ];
      for (const [p, clientId] of cases) {
        const res = await host('GET', '/_/api/widget-data', { payload: p, clientId });
        assert.equal(res.status, 401, `${p?.slice(0, 12)} ${clientId}`);
        assert.equal(errorsOf(res)[0]!.code, 'Unauthorized');
      }
      t.clock.advance(15 * MINUTE);
      const expired = await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId });
      assert.equal(expired.status, 401);
      assert.match(errorsOf(expired)[0]!.detail, /expired/);
    });

    test("a verified phone change ends the wallet session: the user's payloads stop working", async () => {
      const { wallet, user, account } = await fundedWallet(t, m, 0);
      const payload = await payloadFor(wallet.id);
      assert.equal((await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId })).status, 200);

      // The identity flow of identity.test.ts: a passed challenge, then the phone change.
      const base = `/api/v1/users/${user.id}/identity-verification`;
      const challenge = (await t.request('POST', `${base}/challenges`, { as: m })).body.data;
      const right = ['Ada Lovelace', dateLabel('1990-12-10'), account.attributes.accountMask];
      const answers = challenge.attributes.questions.map((q: { id: string; options: { id: string; label: string }[] }) => ({
        questionId: q.id,
        optionId: q.options.find((o) => right.includes(o.label))!.id,
      }));
      const passed = await t.request('POST', `${base}/challenges/${challenge.id}/submissions`, { as: m, body: { data: { type: 'IdentityVerificationSubmission', attributes: { answers } } } });
      const token = passed.body.data.attributes.verificationToken;
      const update = await t.request('POST', `${base}/profile-updates`, { as: m, body: { data: { type: 'ProfileUpdate', attributes: { verificationToken: token, phoneNumber: phone() } } } });
      assert.equal(update.status, 200, update.raw);

      const ended = await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId });
      assert.equal(ended.status, 401);
      assert.match(errorsOf(ended)[0]!.detail, /session has ended/);
      assert.equal((await host('GET', '/_/api/widget-data', { payload: await payloadFor(wallet.id), clientId: m.clientId })).status, 200, 'a new payload works');
    });

    test("the inline flow's user check wants the user's current phone number", async () => {
      const { wallet, user } = await fundedWallet(t, m, 0);
      const payload = await payloadFor(wallet.id);
      const check = (body: unknown) => host('POST', '/_/api/user-check', { payload, clientId: m.clientId, body });
      const ok = await check({ phoneNumber: user.attributes.profile.phoneNumber });
      assert.deepEqual(ok.body.data.attributes, { matches: true, reason: null });
      const stale = await check({ phoneNumber: '+14155550000' });
      assert.equal(stale.body.data.attributes.matches, false);
      assert.match(stale.body.data.attributes.reason, /updated number, or contact support/);
      assert.equal((await check({})).body.data.attributes.matches, false);
    });

    test("an intent is readable only through its own wallet's payload", async () => {
      const a = await fundedWallet(t, m, 5_000);
      const b = await fundedWallet(t, m, 0);
      const intent = await t.request('POST', '/api/v1/payment-intents', { as: m, body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 1_000, walletId: a.wallet.id, reference: 'order-7' } } } });
      assert.equal(intent.status, 201, intent.raw);
      const mine = await host('GET', `/_/api/payment-intents/${intent.body.data.id}`, { payload: await payloadFor(a.wallet.id), clientId: m.clientId });
      assert.equal(mine.status, 200, mine.raw);
      assert.equal(mine.body.data.intent.id, intent.body.data.id);
      assert.equal(mine.body.data.intent.attributes.status, 'Promotable');
      assert.equal(mine.body.data.payment, null);
      const theirs = await host('GET', `/_/api/payment-intents/${intent.body.data.id}`, { payload: await payloadFor(b.wallet.id), clientId: m.clientId });
      assert.equal(theirs.status, 404);
    });
  });
});

describe("the widget host's user check: limits and what it reveals", () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ env: { USER_CHECK_RATE_LIMIT_PER_MINUTE: '3', USER_CHECK_WALLET_LIMIT_PER_HOUR: '4' } });
    m = await t.createMerchant();
  });
  after(() => t.close());

  const walletPayload = async () => {
    const { wallet, user } = await fundedWallet(t, m, 0);
    const res = await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}`, { as: m });
    return { walletId: wallet.id, payload: res.body.data.attributes.payload as string, phoneNumber: user.attributes.profile.phoneNumber as string };
  };
  const check = async (payload: string, from: string, body: unknown) => {
    const res = await t.pay.inject({
      method: 'POST',
      url: '/_/api/user-check',
      remoteAddress: from,
      headers: { authorization: `Widget ${payload}`, 'x-client-id': m.clientId, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) };
  };

  test('per address: the check after the limit is 429 RateLimitExceeded, whatever the payload', async () => {
    const from = ip();
    const a = await walletPayload();
    const b = await walletPayload();
    for (const p of [a, b, a]) assert.equal((await check(p.payload, from, { phoneNumber: phone() })).status, 200);
    const refused = await check(b.payload, from, { phoneNumber: b.phoneNumber });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.errors[0].code, 'RateLimitExceeded');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal((await check('bm90IGEgcGF5bG9hZCBhdCBhbGw=', from, {})).status, 429, 'bad payloads count and are refused too');
    assert.equal((await check(b.payload, ip(), { phoneNumber: b.phoneNumber })).status, 200, 'another address is not');
  });

  test('per wallet: over the hour, from any number of addresses; the count starts again the next hour', async () => {
    const w = await walletPayload();
    for (let i = 0; i < 4; i++) assert.equal((await check(w.payload, ip(), { phoneNumber: phone() })).status, 200);
    const refused = await check(w.payload, ip(), { phoneNumber: w.phoneNumber });
    assert.equal(refused.status, 429);
    assert.match(refused.body.errors[0].detail, /More than 4 user checks of this wallet in an hour/);
    assert.equal((await check((await walletPayload()).payload, ip(), {})).status, 200, 'another wallet is not');
    t.clock.advance(3_600_000);
    const fresh = await t.request('GET', `/api/v1/widgets/wallet/${w.walletId}`, { as: m });
    assert.equal((await check(fresh.body.data.attributes.payload, ip(), { phoneNumber: w.phoneNumber })).status, 200);
  });

  test('a reference id that does not match gives the same answer with the right phone number as with a wrong one', async () => {
    const w = await walletPayload();
    const right = await check(w.payload, ip(), { phoneNumber: w.phoneNumber, referenceId: 'someone-else' });
    const wrong = await check(w.payload, ip(), { phoneNumber: phone(), referenceId: 'someone-else' });
    assert.equal(right.body.data.attributes.matches, false);
    assert.deepEqual(right.body.data.attributes, wrong.body.data.attributes);
    assert.deepEqual(Object.keys(right.body.data.attributes).sort(), ['matches', 'reason']);
  });
});
