// Widgets (docs/adr/0013-widget-payloads.md): the payload API and the widget host's pages, assets and frame API,
// through HTTP on both databases. The browser half is in browser.test.ts.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import {
  createTestApp,
  errorsOf,
  phone,
  randomIp as ip,
  type Merchant,
  type Response,
  type TestApp,
} from '../../test/harness.ts';
import { approvedUser, createWallet, fundedWallet, intentFor, linkAccount } from '../../test/money.ts';
import { dateLabel } from '../identity/questions.ts';

const MINUTE = 60_000;

describe('widgets', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({
      widget: {
        buttonText: 'Pay with Bean Wallet',
        textStyle: 'small',
        togglePosition: 'left',
        toggleStyle: 'checkbox',
      },
    });
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
    return {
      header: JSON.parse(Buffer.from(header!, 'base64url').toString()),
      claims: JSON.parse(Buffer.from(claims!, 'base64url').toString()),
    };
  };
  const reward = async (walletId: string, amount: number) => {
    const res = await t.request('POST', '/api/v1/rewards', {
      as: m,
      body: { data: { type: 'IssueReward', attributes: { walletId, amount, idempotencyKey: crypto.randomUUID() } } },
    });
    assert.equal(res.status, 200, res.raw);
  };
  /** The identity flow of identity.test.ts: a passed challenge, then a verified phone change. */
  const changePhone = async (userId: string, accountMask: string) => {
    const base = `/api/v1/users/${userId}/identity-verification`;
    const challenge = (await t.request('POST', `${base}/challenges`, { as: m })).body.data;
    const right = ['Ada Lovelace', dateLabel('1990-12-10'), accountMask];
    const answers = challenge.attributes.questions.map(
      (q: { id: string; options: { id: string; label: string }[] }) => ({
        questionId: q.id,
        optionId: q.options.find((o) => right.includes(o.label))!.id,
      }),
    );
    const passed = await t.request('POST', `${base}/challenges/${challenge.id}/submissions`, {
      as: m,
      body: { data: { type: 'IdentityVerificationSubmission', attributes: { answers } } },
    });
    const token = passed.body.data.attributes.verificationToken;
    const update = await t.request('POST', `${base}/profile-updates`, {
      as: m,
      body: { data: { type: 'ProfileUpdate', attributes: { verificationToken: token, phoneNumber: phone() } } },
    });
    assert.equal(update.status, 200, update.raw);
  };
  const host = async (
    method: string,
    url: string,
    opts: { payload?: string; clientId?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Response> => {
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
      assert.equal(
        res.body.data.attributes.expiresAt,
        new Date(t.clock.now().getTime() + 15 * MINUTE).toISOString().replace(/\.\d{3}Z$/, '.000Z'),
      );
      assert.equal(res.body.data.id, claims.jti);
      const decoded = Buffer.from(payload, 'base64').toString();
      assert.ok(
        !decoded.includes(m.secret) && !decoded.includes(m.secret.slice(-20)),
        'no client secret in the payload',
      );
    });

    test("Accrue's members: relationships.wallet and links.self; dto only with includeDto, with the widget's figures", async () => {
      const { wallet, user } = await fundedWallet(t, m, 5_000);
      await reward(wallet.id, 300);
      const plain = await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}`, { as: m });
      assert.equal(plain.status, 200, plain.raw);
      assert.deepEqual(plain.body.data.relationships, { wallet: { data: { type: 'Wallet', id: wallet.id } } });
      assert.equal(plain.body.data.links.self, `http://api.test/api/v1/widgets/wallet/${wallet.id}`);
      assert.equal(plain.body.data.attributes.dto, undefined);
      const res = await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}?includeDto=true&purchaseAmount=200`, {
        as: m,
      });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(res.body.data.attributes.dto, {
        dynamic: { value: 5_200 }, // Accrue's required member: the amount shown
        walletId: wallet.id,
        userId: user.id,
        purchaseAmount: 200,
        available: 5_200,
        eligibleReward: 200,
        rewardMinimumPurchase: 0,
      });
      assert.equal(claimsOf(res.body.data.attributes.payload).claims.amt, 200);
    });

    test("another merchant's or an unknown wallet is 400 NoWalletFound (Accrue's answer), alike; a bad purchaseAmount or includeDto is 400", async () => {
      const { wallet } = await fundedWallet(t, m, 0);
      const answers = [];
      for (const [id, as] of [
        [wallet.id, other],
        [crypto.randomUUID(), m],
      ] as const) {
        const res = await t.request('GET', `/api/v1/widgets/wallet/${id}`, { as });
        assert.equal(res.status, 400);
        const e = errorsOf(res)[0]!;
        assert.equal(e.code, 'NoWalletFound');
        answers.push(e.detail.replace(id, ''));
      }
      assert.equal(answers[0], answers[1], "another merchant's wallet reads as a missing one");
      assert.equal(
        (await t.request('GET', `/api/v1/widgets/wallet/${wallet.id}?includeDto=maybe`, { as: m })).status,
        400,
      );
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
      for (const asset of ['/_/assets/frame.js', '/_/assets/frame.css'])
        assert.equal((await host('GET', asset)).status, 200, asset);
      // A budget, so a dependency pulled into the page script does not go unnoticed.
      assert.ok(gzipSync(res.raw).length < 4_096, `main.js is ${gzipSync(res.raw).length} bytes gzipped`);
    });

    test("a frame page carries the merchant's widget settings, under a CSP; unknown clients and flows are refused", async () => {
      const res = await host(
        'GET',
        `/_/wallet-balance/?client=${m.clientId}&origin=${encodeURIComponent('http://shop.test')}&amount=2500`,
      );
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
      await reward(wallet.id, 300);
      const payload = await payloadFor(wallet.id, m, '?purchaseAmount=2500');
      const res = await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(res.body.data.attributes, {
        walletId: wallet.id,
        purchaseAmount: 2500,
        available: 5_300,
        eligibleReward: 300,
        rewardMinimumPurchase: 0,
        purchaseReward: null,
      });
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
      const forged = Buffer.from(
        `${h}.${Buffer.from(JSON.stringify({ ...claims, wid: crypto.randomUUID() })).toString('base64url')}.${s}`,
      ).toString('base64');
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

      await changePhone(user.id, account.attributes.accountMask);

      const ended = await host('GET', '/_/api/widget-data', { payload, clientId: m.clientId });
      assert.equal(ended.status, 401);
      assert.match(errorsOf(ended)[0]!.detail, /session has ended/);
      assert.equal(
        (await host('GET', '/_/api/widget-data', { payload: await payloadFor(wallet.id), clientId: m.clientId }))
          .status,
        200,
        'a new payload works',
      );
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
      const intent = await t.request('POST', '/api/v1/payment-intents', {
        as: m,
        body: {
          data: {
            type: 'CreatePaymentIntent',
            attributes: { amount: 1_000, walletId: a.wallet.id, reference: 'order-7' },
          },
        },
      });
      assert.equal(intent.status, 201, intent.raw);
      const mine = await host('GET', `/_/api/payment-intents/${intent.body.data.id}`, {
        payload: await payloadFor(a.wallet.id),
        clientId: m.clientId,
      });
      assert.equal(mine.status, 200, mine.raw);
      assert.equal(mine.body.data.intent.id, intent.body.data.id);
      assert.equal(mine.body.data.intent.attributes.status, 'Promotable');
      assert.equal(mine.body.data.payment, null);
      const theirs = await host('GET', `/_/api/payment-intents/${intent.body.data.id}`, {
        payload: await payloadFor(b.wallet.id),
        clientId: m.clientId,
      });
      assert.equal(theirs.status, 404);
    });
  });
  describe('finding the wallet: GET /api/v1/widgets/wallet and GET /api/v2/widgets/wallet', () => {
    const find = (query: string, as = m, version = 'v1') =>
      t.request('GET', `/api/${version}/widgets/wallet?${query}`, { as });
    const setReferences = async (userId: string, attributes: Record<string, string>) => {
      const res = await t.request('PATCH', `/api/v1/users/${userId}/attached-profile`, {
        as: m,
        body: { data: { type: 'AttachedProfile', attributes } },
      });
      assert.ok(res.status < 300, res.raw);
    };

    test('each filter finds the wallet of the user it names, with a payload for that wallet and user', async () => {
      const { wallet, user } = await fundedWallet(t, m, 1_000);
      const stable = `stable-${user.id}`;
      const legacy = `legacy-${user.id}`;
      await setReferences(user.id, { stableReferenceId: stable, referenceId: legacy });
      const queries = [
        `filter[userReference]=${stable}`,
        `filter[userReference]=${user.id}`,
        `filter[secondaryUserReference]=${legacy}`,
        `filter[phoneNumber]=${encodeURIComponent(user.attributes.profile.phoneNumber)}`,
        // The stable id not on file yet, the legacy one is: the legacy one finds it.
        `filter[userReference]=not-on-file&filter[secondaryUserReference]=${legacy}`,
        `filter[userReference]=${stable}&filter[phoneNumber]=${encodeURIComponent(user.attributes.profile.phoneNumber)}&includeDto=true&purchaseAmount=300`,
      ];
      for (const query of queries) {
        const res = await find(query);
        assert.equal(res.status, 200, `${query}: ${res.raw}`);
        assert.equal(res.body.data.relationships.wallet.data.id, wallet.id, query);
        assert.equal(res.body.data.links.self, `http://api.test/api/v1/widgets/wallet/${wallet.id}`);
        const { claims } = claimsOf(res.body.data.attributes.payload);
        assert.equal(claims.wid, wallet.id);
        assert.equal(claims.sub, user.id);
      }
      const withDto = await find(queries.at(-1)!);
      assert.equal(withDto.body.data.attributes.dto.available, 1_000);
      assert.equal(withDto.body.data.attributes.dto.purchaseAmount, 300);
      assert.equal(
        (
          await host('GET', '/_/api/widget-data', {
            payload: withDto.body.data.attributes.payload,
            clientId: m.clientId,
          })
        ).status,
        200,
        'the widget host takes it',
      );
    });

    test('no filter is 400 InvalidIdentifier; filters naming two wallets are 400 MultipleWalletsFound; v1 and v2 alike', async () => {
      const a = await fundedWallet(t, m, 0);
      const b = await fundedWallet(t, m, 0);
      for (const version of ['v1', 'v2']) {
        const none = await find('purchaseAmount=100', m, version);
        assert.equal(none.status, 400, none.raw);
        assert.equal(errorsOf(none)[0]!.code, 'InvalidIdentifier');
        const two = await find(
          `filter[userReference]=${a.user.id}&filter[phoneNumber]=${encodeURIComponent(b.user.attributes.profile.phoneNumber)}`,
          m,
          version,
        );
        assert.equal(two.status, 400, two.raw);
        assert.equal(errorsOf(two)[0]!.code, 'MultipleWalletsFound');
      }
      for (const query of [
        'filter[userReference]=',
        'filter[nickname]=ada',
        `filter[phoneNumber]=${'1'.repeat(33)}`,
        'includeDto=yes&filter[userReference]=x',
      ]) {
        const res = await find(query);
        assert.equal(res.status, 400, query);
        assert.equal(errorsOf(res)[0]!.code, 'BadRequest', query);
      }
    });

    test("no wallet: v1 is 400 NoWalletFound, v2 is data: null; another merchant's user, a user without a wallet and nobody read alike", async () => {
      const theirs = await fundedWallet(t, other, 0);
      const walletless = await approvedUser(t, m);
      const queries = [
        `filter[userReference]=${theirs.user.id}`,
        `filter[phoneNumber]=${encodeURIComponent(theirs.user.attributes.profile.phoneNumber)}`,
        `filter[userReference]=${walletless.id}`,
        'filter[secondaryUserReference]=nobody-has-this',
      ];
      for (const query of queries) {
        const v1 = await find(query);
        assert.equal(v1.status, 400, `${query}: ${v1.raw}`);
        assert.equal(errorsOf(v1)[0]!.code, 'NoWalletFound');
        const v2 = await find(query, m, 'v2');
        assert.equal(v2.status, 200, v2.raw);
        assert.deepEqual(v2.body, { data: null });
      }
      const mine = await find(`filter[userReference]=${theirs.user.id}`, other, 'v2');
      assert.equal(mine.body.data.relationships.wallet.data.id, theirs.wallet.id, 'its own merchant finds it');
      assert.equal(mine.body.data.links.self, `http://api.test/api/v2/widgets/wallet/${theirs.wallet.id}`);
    });

    test("GET /api/v2/widgets/wallet/{walletId}: the v1 shape; an unknown or foreign wallet is 200 data: null (Accrue's answer)", async () => {
      const { wallet } = await fundedWallet(t, m, 700);
      const res = await t.request('GET', `/api/v2/widgets/wallet/${wallet.id}?includeDto=true`, { as: m });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.type, 'WalletWidgetData');
      assert.equal(res.body.data.links.self, `http://api.test/api/v2/widgets/wallet/${wallet.id}`);
      assert.equal(res.body.data.attributes.dto.available, 700);
      assert.equal(
        (await host('GET', '/_/api/widget-data', { payload: res.body.data.attributes.payload, clientId: m.clientId }))
          .status,
        200,
      );
      for (const [id, as] of [
        [wallet.id, other],
        [crypto.randomUUID(), m],
      ] as const) {
        const none = await t.request('GET', `/api/v2/widgets/wallet/${id}`, { as });
        assert.equal(none.status, 200, none.raw);
        assert.deepEqual(none.body, { data: null });
      }
      assert.equal((await t.request('GET', `/api/v2/widgets/wallet/not-a-uuid`, { as: m })).status, 400);
      assert.equal((await t.request('GET', `/api/v2/widgets/wallet/${wallet.id}`)).status, 401);
    });
  });

  describe('GET /api/v1/widgets/payment-intent/{paymentIntentId}/linked-account', () => {
    const linked = (intentId: string, as = m) =>
      t.request('GET', `/api/v1/widgets/payment-intent/${intentId}/linked-account`, { as });

    test("the user's first connected account, with dto and a payload only the linked-account endpoint of the host takes", async () => {
      const { wallet, account } = await fundedWallet(t, m, 500);
      await linkAccount(
        t,
        m,
        (await t.request('GET', `/api/v1/wallets/${wallet.id}`, { as: m })).body.data.relationships.user.data.id,
        { institutionName: 'Second Bank' },
      );
      const intentId = await intentFor(t, m, wallet.id, 2_000);
      const res = await linked(intentId);
      assert.equal(res.status, 200, res.raw);
      const d = res.body.data;
      assert.equal(d.type, 'LinkedAccountWidgetData');
      assert.deepEqual(d.attributes.dto, {
        institutionName: account.attributes.institutionName,
        accountMask: account.attributes.accountMask,
      });
      assert.equal(d.attributes.createdAt, account.attributes.createdAt);
      assert.deepEqual(d.relationships.linkedAccount.data, { type: 'LinkedAccount', id: account.id });
      assert.deepEqual(d.relationships.paymentIntent.data, { type: 'PaymentIntent', id: intentId });
      assert.equal(d.links.self, `http://api.test/api/v1/widgets/payment-intent/${intentId}/linked-account`);
      const { claims } = claimsOf(d.attributes.payload);
      assert.equal(claims.aud, 'coffer-widget:linked-account');
      assert.equal(claims.lid, account.id);
      assert.equal(claims.pid, intentId);
      assert.equal(d.id, claims.jti);

      const view = await host('GET', '/_/api/linked-account', { payload: d.attributes.payload, clientId: m.clientId });
      assert.equal(view.status, 200, view.raw);
      assert.equal(view.body.data.attributes.accountMask, account.attributes.accountMask);
      assert.equal(view.body.data.attributes.paymentIntentId, intentId);
      // It grants nothing else: not the wallet's figures, not its intents; nor does a wallet payload open the account.
      assert.equal(
        (await host('GET', '/_/api/widget-data', { payload: d.attributes.payload, clientId: m.clientId })).status,
        401,
      );
      assert.equal(
        (
          await host('GET', `/_/api/payment-intents/${intentId}`, {
            payload: d.attributes.payload,
            clientId: m.clientId,
          })
        ).status,
        401,
      );
      assert.equal(
        (await host('GET', '/_/api/linked-account', { payload: await payloadFor(wallet.id), clientId: m.clientId }))
          .status,
        401,
      );
      assert.equal(
        (await host('GET', '/_/api/linked-account', { payload: d.attributes.payload, clientId: other.clientId }))
          .status,
        401,
      );
      t.clock.advance(15 * MINUTE);
      assert.equal(
        (await host('GET', '/_/api/linked-account', { payload: d.attributes.payload, clientId: m.clientId })).status,
        401,
        'expired',
      );
    });

    test('after a payment drew on an account, that account, even once another is first', async () => {
      const { wallet, user, account } = await fundedWallet(t, m, 0);
      const second = await linkAccount(t, m, user.id, { institutionName: 'Second Bank' });
      const intentId = await intentFor(t, m, wallet.id, 1_500);
      const auth = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_500 } } },
      });
      assert.equal(auth.status, 201, auth.raw);
      assert.equal(
        (await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${account.id}`, { as: m })).status,
        204,
      );
      const res = await linked(intentId);
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.relationships.linkedAccount.data.id, account.id, 'the account the payment drew on');
      const fresh = await linked(await intentFor(t, m, wallet.id, 100));
      assert.equal(
        fresh.body.data.relationships.linkedAccount.data.id,
        second.id,
        'a new intent: the first connected account',
      );
    });

    test("an unknown or another merchant's intent is 404 PaymentIntentNotFound, alike; no account is 400 NoLinkedAccountFound", async () => {
      const { wallet } = await fundedWallet(t, m, 100);
      const intentId = await intentFor(t, m, wallet.id, 100);
      const details = [];
      for (const [id, as] of [
        [intentId, other],
        [crypto.randomUUID(), m],
      ] as const) {
        const res = await linked(id, as);
        assert.equal(res.status, 404, res.raw);
        assert.equal(errorsOf(res)[0]!.code, 'PaymentIntentNotFound');
        details.push(errorsOf(res)[0]!.detail.replace(id, ''));
      }
      assert.equal(details[0], details[1]);
      const user = await approvedUser(t, m);
      const bare = await createWallet(t, m, user.id);
      const none = await linked(await intentFor(t, m, bare.id, 100));
      assert.equal(none.status, 400, none.raw);
      assert.equal(errorsOf(none)[0]!.code, 'NoLinkedAccountFound');
      const gift = (
        await t.request('POST', '/api/v1/simulation/gifts', {
          as: m,
          body: { data: { type: 'Gift', attributes: { amount: 500 } } },
        })
      ).body.data;
      const giftIntent = await t.request('POST', '/api/v1/payment-intents', {
        as: m,
        body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, lookUpId: gift.id } } },
      });
      assert.equal(giftIntent.status, 201, giftIntent.raw);
      assert.equal(errorsOf(await linked(giftIntent.body.data.id))[0]!.code, 'NoLinkedAccountFound');
      assert.equal((await linked('nope')).status, 400);
    });

    test('a verified phone change ends the linked-account payload too', async () => {
      const { wallet, user, account } = await fundedWallet(t, m, 0);
      const payload = (await linked(await intentFor(t, m, wallet.id, 100))).body.data.attributes.payload;
      assert.equal((await host('GET', '/_/api/linked-account', { payload, clientId: m.clientId })).status, 200);
      await changePhone(user.id, account.attributes.accountMask);
      const ended = await host('GET', '/_/api/linked-account', { payload, clientId: m.clientId });
      assert.equal(ended.status, 401);
      assert.match(errorsOf(ended)[0]!.detail, /session has ended/);
    });
  });

  describe('POST /api/v1/widgets/session', () => {
    const create = (body: unknown, as = m) => t.request('POST', '/api/v1/widgets/session', { as, body });
    const sessionBody = { data: { type: 'CreateWidgetSession', attributes: { widgetType: 'PaymentMethods' } } };

    test("200 WidgetSession; the host shows the merchant's payment methods for it and nothing else", async () => {
      const cm = await t.createMerchant({ rails: 'card' });
      const res = await create(sessionBody, cm);
      assert.equal(res.status, 200, res.raw);
      const a = res.body.data.attributes;
      assert.equal(res.body.data.type, 'WidgetSession');
      assert.match(a.sessionToken, /^wgt_session_[A-Za-z0-9_-]+$/);
      assert.equal(a.widgetType, 'PaymentMethods');
      assert.equal(
        a.expiresAt,
        new Date(t.clock.now().getTime() + 15 * MINUTE).toISOString().replace(/\.\d{3}Z$/, '.000Z'),
      );
      const view = await host('GET', '/_/api/payment-methods', { payload: a.sessionToken, clientId: cm.clientId });
      assert.equal(view.status, 200, view.raw);
      assert.deepEqual(view.body.data.attributes, {
        widgetType: 'PaymentMethods',
        paymentMethods: ['Wallet', 'Gift'],
        rails: 'card',
      });
      // Not a wallet payload, and a wallet payload is not a session.
      assert.equal(
        (await host('GET', '/_/api/widget-data', { payload: a.sessionToken, clientId: cm.clientId })).status,
        401,
      );
      const { wallet } = await fundedWallet(t, m, 0);
      assert.equal(
        (await host('GET', '/_/api/payment-methods', { payload: await payloadFor(wallet.id), clientId: m.clientId }))
          .status,
        401,
      );
      assert.equal(
        (await host('GET', '/_/api/payment-methods', { payload: a.sessionToken, clientId: m.clientId })).status,
        401,
        'another client',
      );
      const forged = a.sessionToken.slice(0, -4) + (a.sessionToken.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      assert.equal(
        (await host('GET', '/_/api/payment-methods', { payload: forged, clientId: cm.clientId })).status,
        401,
      );
      t.clock.advance(15 * MINUTE);
      assert.equal(
        (await host('GET', '/_/api/payment-methods', { payload: a.sessionToken, clientId: cm.clientId })).status,
        401,
        'expired',
      );
    });

    test('bad bodies are 400 with a pointer; no auth is 401', async () => {
      const cases: [unknown, string][] = [
        [
          { data: { type: 'CreateWidgetSession', attributes: { widgetType: 'Wallet' } } },
          '/data/attributes/widgetType',
        ],
        [{ data: { type: 'CreateWidgetSession', attributes: {} } }, '/data/attributes/widgetType'],
        [{ data: { type: 'WidgetSession', attributes: { widgetType: 'PaymentMethods' } } }, '/data/type'],
      ];
      for (const [body, pointer] of cases) {
        const res = await create(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
      }
      assert.equal((await t.request('POST', '/api/v1/widgets/session', { as: m })).status, 400, 'no body');
      assert.equal((await t.request('POST', '/api/v1/widgets/session', { body: sessionBody })).status, 401);
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
    return {
      walletId: wallet.id,
      payload: res.body.data.attributes.payload as string,
      phoneNumber: user.attributes.profile.phoneNumber as string,
    };
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
    assert.equal(
      (await check('bm90IGEgcGF5bG9hZCBhdCBhbGw=', from, {})).status,
      429,
      'bad payloads count and are refused too',
    );
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
