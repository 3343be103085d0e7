// The console through HTTP (inject) on the test database: sign-in, cookies, CSRF, isolation
// between merchants, the pages with data, an event replay, a simulation, the request log.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { generateToken } from '../crypto/tokens.ts';
import { rowsOf } from '../db/open.ts';
import { buildConsoleListener } from '../listeners/console.ts';
import type { App } from '../http/server.ts';
import { kycApplication, webhookBody } from '../test/fixtures.ts';
import { browser, call, csrfOf, signIn, type Browser } from '../test/console-browser.ts';
import { ADMIN_TOKEN, createTestApp, createUser, type Merchant, type TestApp } from '../test/harness.ts';
import { withRefusal } from '../test/faults.ts';
import { assertLedgerSound, fundedWallet, linkAccount, deposit } from '../test/money.ts';
import { redactBody } from '../modules/request-log/record.ts';
import { getEvent } from '../modules/events/domain.ts';

// The operator signs in on the console only where CONSOLE_OPERATOR_SIGN_IN allows it.
const OPERATOR_SIGN_IN = { CONSOLE_OPERATOR_SIGN_IN: 'true' };

describe('console', () => {
  let t: TestApp;
  let app: App;
  let a: Merchant;
  let other: Merchant;
  let paymentId: string;
  let walletId: string;
  let otherPaymentId: string;
  let userId: string;
  let hookId: string;

  async function paidOnce(m: Merchant) {
    const { wallet, user } = await fundedWallet(t, m, 10_000);
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 2_500, walletId: wallet.id } } },
    });
    assert.equal(intent.status, 201, intent.raw);
    const res = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: m,
      body: {
        data: { type: 'AuthorizePaymentIntent', attributes: { amount: 2_500, idempotencyKey: `key-${randomUUID()}` } },
      },
    });
    assert.equal(res.status, 201, res.raw);
    return { walletId: wallet.id, userId: user.id, paymentId: res.body.included[0].id as string };
  }

  before(async () => {
    t = await createTestApp({ env: OPERATOR_SIGN_IN });
    app = await buildConsoleListener(t.ctx);
    await app.ready();
    a = await t.createMerchant();
    other = await t.createMerchant();
    const hook = await t.request('POST', '/api/v1/webhooks', { as: a, body: webhookBody({ topics: ['*'] }) });
    assert.equal(hook.status, 201, hook.raw);
    hookId = hook.body.data.id;
    ({ walletId, paymentId, userId } = await paidOnce(a));
    ({ paymentId: otherPaymentId } = await paidOnce(other));
    await t.ctx.jobs.runOnce('request-log-flush');
  });
  after(async () => {
    // Its pending deliveries canceled: nothing left for the shared database's other tests to send.
    await t.request('DELETE', `/api/v1/webhooks/${hookId}`, { as: a });
    await app.close();
    await t.close();
  });

  test('pages need a session: the sign-in page, and a redirect to it', async () => {
    const b = browser();
    const res = await call(app, b, 'GET', `/m/${a.clientId}/payments`);
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/sign-in');
    const page = await call(app, b, 'GET', '/sign-in');
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.match(page.body, /Client-ID/);
  });

  test('a wrong secret, a wrong admin token and a forged sign-in form are refused; no session cookie is set', async () => {
    const b = browser();
    const wrong = await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: `${a.secret}x` });
    assert.equal(wrong.statusCode, 401);
    assert.match(wrong.body, /wrong secret/);
    const op = await signIn(app, b, { role: 'operator', adminToken: 'not-the-token' });
    assert.equal(op.statusCode, 401);
    const forged = await call(app, b, 'POST', '/sign-in', {
      _csrf: 'forged',
      role: 'operator',
      adminToken: ADMIN_TOKEN,
    });
    assert.equal(forged.statusCode, 403);
    assert.ok(![...b.cookies.keys()].includes('coffer_console'));
  });

  test('sign-in attempts are limited per address', async () => {
    const b = browser();
    const limit = t.ctx.config.console.signInPerMinute;
    let last = 0;
    for (let i = 0; i <= limit; i++)
      last = (await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: 'wrong' })).statusCode;
    assert.equal(last, 429);
  });

  test('merchant sign-in: an HttpOnly, SameSite=Strict cookie; its own pages; sign-out ends the session', async () => {
    const b = browser();
    const res = await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/m/${a.clientId}`);
    const cookie = ([res.headers['set-cookie']].flat() as string[]).find((c) => c.startsWith('coffer_console='))!;
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\//);
    assert.doesNotMatch(cookie, /Secure/, 'http console URL: no Secure flag');
    const home = await call(app, b, 'GET', `/m/${a.clientId}`);
    assert.equal(home.statusCode, 200);
    assert.match(home.body, /<figure class="chart">.*<svg/);
    assert.equal(home.headers['cache-control'], 'no-store');
    // The operator's pages are not a merchant's.
    assert.equal((await call(app, b, 'GET', '/operator')).statusCode, 404);
    const out = await call(app, b, 'POST', '/sign-out', { _csrf: csrfOf(home.body) });
    assert.equal(out.statusCode, 303);
    assert.equal((await call(app, b, 'GET', `/m/${a.clientId}`)).statusCode, 303);
  });

  test('the session cookie is Secure (and __Host-) when the console URL is https', async () => {
    const s = await createTestApp({ env: { CONSOLE_URL: 'https://console.example.com', ...OPERATOR_SIGN_IN } });
    const c = await buildConsoleListener(s.ctx);
    try {
      const b = browser();
      const res = await signIn(c, b, { role: 'operator', adminToken: ADMIN_TOKEN });
      assert.equal(res.statusCode, 303);
      const cookie = ([res.headers['set-cookie']].flat() as string[]).find((x) =>
        x.startsWith('__Host-coffer_console='),
      )!;
      assert.match(cookie, /; Secure/);
      assert.match(cookie, /HttpOnly/);
    } finally {
      await c.close();
      await s.close();
    }
  });

  test('CSRF: a POST without the token or with a wrong one is 403 and does nothing', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const events = await call(app, b, 'GET', `/m/${a.clientId}/events?topic=PaymentCreated`);
    const eventId = /\/events\/([0-9a-f-]{36})"/.exec(events.body)![1]!;
    const before = (await getEvent(t.ctx.db, { clientId: a.clientId, eventId })).deliveries.length;
    assert.equal((await call(app, b, 'POST', `/m/${a.clientId}/events/${eventId}/replay`, {})).statusCode, 403);
    assert.equal(
      (await call(app, b, 'POST', `/m/${a.clientId}/events/${eventId}/replay`, { _csrf: 'x'.repeat(43) })).statusCode,
      403,
    );
    assert.equal((await call(app, b, 'POST', '/sign-out', { _csrf: 'nope' })).statusCode, 403);
    assert.equal(
      (await getEvent(t.ctx.db, { clientId: a.clientId, eventId })).deliveries.length,
      before,
      'no replay was queued',
    );
  });

  test("isolation: another merchant's pages and resources are 404", async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    assert.equal((await call(app, b, 'GET', `/m/${a.clientId}/payments/${paymentId}`)).statusCode, 200);
    assert.equal((await call(app, b, 'GET', `/m/${a.clientId}/payments/${otherPaymentId}`)).statusCode, 404);
    assert.equal((await call(app, b, 'GET', `/m/${other.clientId}/payments/${otherPaymentId}`)).statusCode, 404);
    assert.equal((await call(app, b, 'GET', `/m/${other.clientId}`)).statusCode, 404);
    assert.equal((await call(app, b, 'GET', `/m/${a.clientId}/payments/not-a-uuid`)).statusCode, 404);
    // Finding another merchant's payment by id finds nothing.
    const found = await call(app, b, 'GET', `/m/${a.clientId}/payments?id=${otherPaymentId}`);
    assert.equal(found.statusCode, 303);
    assert.match(String(found.headers.location), /\?error=no-payment$/);
    const home = await call(app, b, 'GET', `/m/${a.clientId}`);
    assert.equal(
      (
        await call(app, b, 'POST', `/m/${other.clientId}/payments/${otherPaymentId}/settle`, {
          _csrf: csrfOf(home.body),
        })
      ).statusCode,
      404,
    );
  });

  test('pages render with data; find a payment by id; its timeline and ledger postings', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const base = `/m/${a.clientId}`;
    const list = await call(app, b, 'GET', `${base}/payments?status=Created&page[limit]=50`);
    assert.equal(list.statusCode, 200);
    assert.ok(list.body.includes(paymentId));
    const found = await call(app, b, 'GET', `${base}/payments?id=${paymentId}`);
    assert.equal(found.statusCode, 303);
    assert.equal(found.headers.location, `${base}/payments/${paymentId}`);
    const captured = await t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
      as: a,
      body: { data: { type: 'CapturePayment', attributes: { amount: 2_500 } } },
    });
    assert.equal(captured.status, 200, captured.raw);
    const detail = await call(app, b, 'GET', `${base}/payments/${paymentId}`);
    assert.match(detail.body, /Timeline/);
    assert.match(detail.body, /Captured \$25\.00/);
    assert.match(detail.body, /Ledger: payment\./);
    assert.match(detail.body, /Settle now/);
    for (const p of ['/users', '/wallets', `/wallets/${walletId}`, '/intents', '/events', '/webhooks', '/requests']) {
      const res = await call(app, b, 'GET', `${base}${p}`);
      assert.equal(res.statusCode, 200, p);
      assert.match(res.body, /<table>/, p);
    }
    const wallet = await call(app, b, 'GET', `${base}/wallets/${walletId}`);
    assert.match(wallet.body, /deposit\.available/);
    assert.match(wallet.body, /Ledger entries/);
    // Pages paginate like the API.
    const paged = await call(app, b, 'GET', `${base}/events?page[limit]=1`);
    assert.match(paged.body, /1–1 of \d+/);
    assert.match(paged.body, /rel="next"/);
  });

  test('events by delivery state: the same events and totals as the API; a failed delivery moves its event', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const apiList = async (state: string, limit: number) =>
      (await t.request('GET', `/api/v1/webhook-events?filter[deliveryState]=${state}&page[limit]=${limit}`, { as: a }))
        .body;
    const consoleList = async (state: string, limit: number) => {
      const res = await call(app, b, 'GET', `/m/${a.clientId}/events?deliveryState=${state}&page[limit]=${limit}`);
      assert.equal(res.statusCode, 200);
      return {
        ids: [...res.body.matchAll(/\/events\/([0-9a-f-]{36})"/g)].map((x) => x[1]!),
        total: /of ([\d,]+)/.exec(res.body)?.[1] ?? '0',
      };
    };
    const same = async (state: string, limit = 50) => {
      const [api, page] = [await apiList(state, limit), await consoleList(state, limit)];
      assert.deepEqual(
        page.ids,
        api.data.map((e: { id: string }) => e.id),
        state,
      );
      assert.equal(page.total, String(api.meta.total), state);
      return page;
    };
    // No delivery job runs here: the webhook's deliveries wait.
    const pending = await same('pending');
    assert.ok(pending.ids.length >= 2);
    await same('none');
    const [failedId, replayedId] = pending.ids as [string, string];
    // As the worker records a last failed attempt: the delivery fails and leaves the queue.
    for (const id of [failedId, replayedId]) {
      await t.ctx.db.execute(
        sql`update event_deliveries set state = 'failed', next_attempt_at = now() where event_id = ${id}`,
      );
      await t.ctx.db.execute(sql`delete from event_delivery_queue where event_id = ${id}`);
    }
    assert.deepEqual((await same('failed')).ids, [failedId, replayedId]);
    assert.ok(!(await same('pending')).ids.includes(failedId));
    // A replay queues a new delivery beside the failed one: pending comes before failed, in the
    // list and in its total (counted when the page is full, as a page of one is here).
    assert.equal((await t.request('POST', `/api/v1/webhook-events/${replayedId}/replay`, { as: a })).status, 200);
    const failedPage = await same('failed', 1);
    assert.deepEqual([failedPage.ids, failedPage.total], [[failedId], '1']);
    assert.ok((await same('pending')).ids.includes(replayedId));
    await t.ctx.db.execute(sql`update event_deliveries set state = 'succeeded' where event_id = ${failedId}`);
    assert.deepEqual((await same('succeeded')).ids, [failedId]);
    assert.deepEqual((await same('failed')).ids, []);
  });

  test('lists page by cursor: Next and Previous links walk the same rows as page[offset]', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const base = `/m/${a.clientId}/events`;
    const idsOf = (body: string) => [...body.matchAll(/\/events\/([0-9a-f-]{36})"/g)].map((x) => x[1]!);
    const all = idsOf((await call(app, b, 'GET', `${base}?page[limit]=50`)).body);
    assert.ok(all.length >= 4, 'enough events to page through');
    let page = await call(app, b, 'GET', `${base}?page[limit]=2`);
    const walked: string[] = [];
    const seen: string[] = [];
    for (;;) {
      walked.push(...idsOf(page.body));
      seen.push(/<p class="pager">([^<]*)/.exec(page.body)![1]!.trim());
      const next = /<a rel="next" href="([^"]+)"/.exec(page.body)?.[1]?.replace(/&amp;/g, '&');
      if (!next) break;
      assert.match(next, /page%5Bafter%5D=|page\[after\]=/);
      page = await call(app, b, 'GET', next);
    }
    assert.deepEqual(walked, all);
    assert.match(seen[1]!, /^3–4 of /);
    // Back from the last page by Previous links, to the first page (a link without a cursor).
    const back: string[] = [];
    for (;;) {
      const prev = /<a rel="prev" href="([^"]+)"/.exec(page.body)?.[1]?.replace(/&amp;/g, '&');
      if (!prev) break;
      page = await call(app, b, 'GET', prev);
      back.unshift(...idsOf(page.body));
    }
    assert.deepEqual(back, all.slice(0, back.length));
    assert.deepEqual(idsOf(page.body), all.slice(0, 2));
    // page[offset] alone (the rows skipped in the index, the page read by id) gives the same rows.
    for (const offset of [1, 2, 3])
      assert.deepEqual(
        idsOf((await call(app, b, 'GET', `${base}?page[limit]=2&page[offset]=${offset}`)).body),
        all.slice(offset, offset + 2),
      );
    const pending = idsOf((await call(app, b, 'GET', `${base}?deliveryState=pending&page[limit]=50`)).body);
    assert.deepEqual(
      idsOf((await call(app, b, 'GET', `${base}?deliveryState=pending&page[limit]=2&page[offset]=1`)).body),
      pending.slice(1, 3),
    );
    // A cursor that is not one of this merchant's rows shows nothing; one that is not an id is ignored.
    assert.match((await call(app, b, 'GET', `${base}?page[after]=${randomUUID()}`)).body, /class="pager">None/);
    assert.deepEqual(idsOf((await call(app, b, 'GET', `${base}?page[after]=nope&page[limit]=50`)).body), all);
  });

  test('replay an event: a replay delivery is queued', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const events = await call(app, b, 'GET', `/m/${a.clientId}/events?topic=PaymentCreated`);
    const eventId = /\/events\/([0-9a-f-]{36})"/.exec(events.body)![1]!;
    const page = await call(app, b, 'GET', `/m/${a.clientId}/events/${eventId}`);
    assert.match(page.body, /Replay/);
    const res = await call(app, b, 'POST', `/m/${a.clientId}/events/${eventId}/replay`, { _csrf: csrfOf(page.body) });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/m/${a.clientId}/events/${eventId}?notice=replay-queued&n=1`);
    const after = await call(app, b, 'GET', String(res.headers.location));
    assert.match(after.body, /Replay queued \(1 pending replay delivery\)/);
    assert.match(after.body, /<td>replay<\/td>/);
  });

  test('a simulation: clear pending deposits from the wallet page', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const account = await linkAccount(t, a, userId);
    assert.equal((await deposit(t, a, walletId, 1_234, account.id)).status, 201);
    const page = await call(app, b, 'GET', `/m/${a.clientId}/wallets/${walletId}`);
    const res = await call(app, b, 'POST', `/m/${a.clientId}/wallets/${walletId}/clear-deposits`, {
      _csrf: csrfOf(page.body),
      type: 'bank',
    });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/m/${a.clientId}/wallets/${walletId}?notice=bank-deposits-cleared&n=1`);
    assert.match((await call(app, b, 'GET', String(res.headers.location))).body, /1 pending bank deposit cleared\./);
    const balance = await t.request('GET', `/api/v1/wallets/${walletId}/balance`, { as: a });
    assert.equal(balance.status, 200);
    const after = await call(app, b, 'GET', `/m/${a.clientId}/wallets/${walletId}`);
    assert.match(after.body, /deposit\.clear/);
  });

  test("a simulation: the card network's authorize and capture commit together (a failure leaves no hold on the gift)", async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: a,
      body: { data: { type: 'Gift', attributes: { amount: 5_000 } } },
    });
    const lookUpId = gift.body.data.id as string;
    const available = async () =>
      (await t.request('GET', `/api/v1/gifts/${lookUpId}`, { as: a })).body.data.attributes.available as number;
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: a,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 3_923, lookUpId } } },
    });
    const authorized = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: a,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 3_923 } } },
    });
    assert.equal(authorized.status, 201, authorized.raw);
    const id = authorized.body.included[0].id as string;
    const page = await call(app, b, 'GET', `/m/${a.clientId}/payments/${id}`);
    assert.match(page.body, /Card network: authorize and capture/);
    const run = () => call(app, b, 'POST', `/m/${a.clientId}/payments/${id}/card`, { _csrf: csrfOf(page.body) });
    const failed = await withRefusal(
      t,
      { table: 'card_captures', on: 'insert', when: `new.payment_id = '${id}'` },
      run,
    );
    assert.notEqual(failed.statusCode, 303, failed.body);
    assert.equal(await available(), 5_000, 'no hold on the gift');
    const res = await run();
    assert.equal(res.statusCode, 303);
    assert.match(String(res.headers.location), /notice=card-captured/);
    assert.equal(await available(), 5_000 - 3_923);
    await assertLedgerSound(t);
  });

  test("a simulation: approve KYC from the user page; decided once; another merchant's user is 404", async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const u = await createUser(t, a);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: a });
    assert.equal(
      (
        await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
          as: a,
          body: kycApplication(`console${Date.now()}@example.com`),
        })
      ).status,
      200,
    );
    const page = await call(app, b, 'GET', `/m/${a.clientId}/users/${u.id}`);
    assert.match(page.body, /Approve KYC/);
    const res = await call(app, b, 'POST', `/m/${a.clientId}/users/${u.id}/kyc-decision`, {
      _csrf: csrfOf(page.body),
      status: 'Approved',
    });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/m/${a.clientId}/users/${u.id}?notice=kyc-approved`);
    const kycStatus = async () =>
      (await t.request('GET', `/api/v1/users/${u.id}/kyc/status`, { as: a })).body.data.attributes.status;
    assert.equal(await kycStatus(), 'Approved');
    const events = await t.request('GET', '/api/v1/webhook-events?filter[topic]=ApplicationApproved', { as: a });
    assert.ok(
      events.body.data.some((e: { attributes: { userId: string } }) => e.attributes.userId === u.id),
      "the decision's event is recorded",
    );
    const again = await call(app, b, 'POST', `/m/${a.clientId}/users/${u.id}/kyc-decision`, {
      _csrf: csrfOf(page.body),
      status: 'Declined',
    });
    // A refusal is answered on the page itself, with its status and detail.
    assert.equal(again.statusCode, 400);
    assert.match(again.body, /no KYC application waiting for a decision \(the latest is Approved\)/);
    assert.match(again.body, new RegExp(`href="/m/${a.clientId}/users/${u.id}"`));
    assert.equal(await kycStatus(), 'Approved');
    const foreign = await createUser(t, other);
    assert.equal(
      (
        await call(app, b, 'POST', `/m/${a.clientId}/users/${foreign.id}/kyc-decision`, {
          _csrf: csrfOf(page.body),
          status: 'Approved',
        })
      ).statusCode,
      404,
    );
  });

  test('the request log records API requests (route, status, idempotency key) with bodies redacted', async () => {
    const b = browser();
    await signIn(app, b, { role: 'merchant', clientId: a.clientId, secret: a.secret });
    const probe = await t.request('POST', '/api/v1/users', {
      as: a,
      body: {
        data: {
          type: 'User',
          attributes: {
            phoneNumber: 'not a phone',
            email: 'x@example.com',
            cardNumber: '4111111111111111',
            note: 'card 4242 4242 4242 4242',
            secret: 's3cr3t',
          },
        },
      },
    });
    assert.equal(probe.status, 400);
    await t.ctx.jobs.runOnce('request-log-flush');
    const list = await call(app, b, 'GET', `/m/${a.clientId}/requests?status=4xx&path=/api/v1/users`);
    assert.equal(list.statusCode, 200);
    const id = /\/requests\/([0-9a-f-]{36})"/.exec(list.body)?.[1];
    assert.ok(id, 'the request is listed');
    const detail = await call(app, b, 'GET', `/m/${a.clientId}/requests/${id}`);
    assert.match(detail.body, /POST \/api\/v1\/users/);
    assert.match(detail.body, /x@example.com/);
    assert.doesNotMatch(detail.body, /4111111111111111|4242 4242|s3cr3t/);
    assert.match(detail.body, /\[redacted\]/);
    // An authorize's idempotency key is recorded.
    const keyed = await call(app, b, 'GET', `/m/${a.clientId}/requests?path=/api/v1/payment-intents/`);
    assert.match(keyed.body, /key-[0-9a-f-]{36}/);
    // Another merchant's request is not in this log.
    const mine = await call(app, b, 'GET', `/m/${a.clientId}/requests?page[limit]=50`);
    assert.ok(!mine.body.includes(otherPaymentId));
  });

  test('redaction covers secrets, card data and long digit runs wherever they are', () => {
    assert.deepEqual(
      redactBody({
        data: {
          attributes: {
            cvv: '123',
            pan: '4111111111111111',
            nested: [{ accountNumber: '000123456789' }],
            text: 'call 4111-1111-1111-1111 now',
            amount: 1234,
          },
        },
      }),
      {
        data: {
          attributes: {
            cvv: '[redacted]',
            pan: '[redacted]',
            nested: [{ accountNumber: '[redacted]' }],
            text: 'call [redacted] now',
            amount: 1234,
          },
        },
      },
    );
  });

  test('operator: health and merchants; opens any merchant; creates one and rotates its secret', async () => {
    const b = browser();
    const res = await signIn(app, b, { role: 'operator', adminToken: ADMIN_TOKEN });
    assert.equal(res.headers.location, '/operator');
    const home = await call(app, b, 'GET', '/operator');
    assert.equal(home.statusCode, 200);
    assert.match(home.body, /System health/);
    assert.equal((await call(app, b, 'GET', `/m/${other.clientId}/payments/${otherPaymentId}`)).statusCode, 200);
    assert.equal((await call(app, b, 'GET', `/m/${randomUUID()}`)).statusCode, 404);
    const created = await call(app, b, 'POST', '/operator/merchants', {
      _csrf: csrfOf(home.body),
      name: 'Console <b>shop</b>',
    });
    assert.equal(created.statusCode, 201);
    assert.ok(!created.body.includes('<b>shop</b>'), 'names are escaped');
    const clientId = /<code>([0-9a-f-]{36})<\/code>/.exec(created.body)![1]!;
    const secret = /<code>(sk_sandbox_[^<]+)<\/code>/.exec(created.body)![1]!;
    const dev = browser();
    assert.equal((await signIn(app, dev, { role: 'merchant', clientId, secret })).statusCode, 303);
    const merchant = await call(app, b, 'GET', `/operator/merchants/${clientId}`);
    const rotated = await call(app, b, 'POST', `/operator/merchants/${clientId}/rotate-secret`, {
      _csrf: csrfOf(merchant.body),
    });
    assert.equal(rotated.statusCode, 200);
    assert.match(rotated.body, /sk_sandbox_/);
    const disabled = await call(app, b, 'POST', `/operator/merchants/${clientId}/disable`, {
      _csrf: csrfOf(merchant.body),
    });
    assert.equal(disabled.statusCode, 303);
    assert.equal(
      (await call(app, dev, 'GET', `/m/${clientId}`)).statusCode,
      403,
      "a disabled merchant's session shows nothing",
    );
  });

  /** A merchant of its own with a second secret (so it keeps one when a test deletes the first). */
  async function twoSecrets(): Promise<{ m: Merchant; second: { id: string; secret: string } }> {
    const m = await t.createMerchant();
    const res = await t.adminRequest('POST', `/admin/v1/clients/${m.clientId}/secrets`);
    assert.equal(res.status, 201, res.raw);
    return { m, second: { id: res.body.data.id, secret: res.body.data.attributes.secret } };
  }

  async function signedIn(fields: Record<string, string>, into = app): Promise<Browser> {
    const b = browser();
    const res = await signIn(into, b, fields);
    assert.equal(res.statusCode, 303, res.body);
    return b;
  }
  const asMerchant = (m: { clientId: string }, secret: string) => ({ role: 'merchant', clientId: m.clientId, secret });
  const asOperator = { role: 'operator', adminToken: ADMIN_TOKEN };
  const countOf = async (query: ReturnType<typeof sql>) => rowsOf<{ n: number }>(await t.ctx.db.execute(query))[0]!.n;

  test("a merchant's session ends when the secret it signed in with is deleted (admin API); another secret's goes on", async () => {
    const { m, second } = await twoSecrets();
    const first = await signedIn(asMerchant(m, m.secret));
    const other = await signedIn(asMerchant(m, second.secret));
    const home = await call(app, first, 'GET', `/m/${m.clientId}`);
    assert.equal(home.statusCode, 200);
    assert.equal((await t.adminRequest('DELETE', `/admin/v1/clients/${m.clientId}/secrets/${m.secretId}`)).status, 204);
    // The API refuses the secret, and so does the console: pages send to the sign-in, forms are refused.
    assert.equal((await t.request('GET', '/api/v1/users', { as: m })).status, 401);
    const page = await call(app, first, 'GET', `/m/${m.clientId}`);
    assert.equal(page.statusCode, 303);
    assert.equal(page.headers.location, '/sign-in');
    assert.equal((await call(app, first, 'POST', '/sign-out', { _csrf: csrfOf(home.body) })).statusCode, 403);
    assert.equal(
      await countOf(sql`select count(*)::int as n from console_sessions where secret_id = ${m.secretId}`),
      0,
      'its sessions are deleted with it',
    );
    assert.equal((await call(app, other, 'GET', `/m/${m.clientId}`)).statusCode, 200);
  });

  test("the operator deletes a secret on the merchant's page: API calls with it are refused and its sessions end", async () => {
    const { m, second } = await twoSecrets();
    const dev = await signedIn(asMerchant(m, m.secret));
    const stays = await signedIn(asMerchant(m, second.secret));
    const op = await signedIn(asOperator);
    const page = await call(app, op, 'GET', `/operator/merchants/${m.clientId}`);
    const form = `/operator/merchants/${m.clientId}/secrets/${m.secretId}/delete`;
    assert.ok(page.body.includes(`action="${form}"`), 'a Delete button per secret');
    const res = await call(app, op, 'POST', form, { _csrf: csrfOf(page.body) });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/operator/merchants/${m.clientId}?notice=secret-deleted`);
    const after = await call(app, op, 'GET', String(res.headers.location));
    assert.match(after.body, /Secret deleted/);
    assert.ok(!after.body.includes(form), 'the secret is no longer listed');
    assert.equal((await t.request('GET', '/api/v1/users', { as: m })).status, 401);
    assert.equal((await call(app, dev, 'GET', `/m/${m.clientId}`)).statusCode, 303);
    assert.equal((await call(app, stays, 'GET', `/m/${m.clientId}`)).statusCode, 200);
    // Another merchant's secret through this merchant's address is not found, and stays.
    const foreign = `/operator/merchants/${m.clientId}/secrets/${other.secretId}/delete`;
    assert.equal((await call(app, op, 'POST', foreign, { _csrf: csrfOf(page.body) })).statusCode, 404);
    assert.equal((await t.request('GET', '/api/v1/users', { as: other })).status, 200);
  });

  test('an operator session ends when ADMIN_TOKEN changes: a restart with another token refuses it', async () => {
    const op = await signedIn(asOperator);
    const home = await call(app, op, 'GET', '/operator');
    assert.equal(home.statusCode, 200);
    const name = `After the token changed ${randomUUID()}`;
    const s = await createTestApp({ env: { ...OPERATOR_SIGN_IN, ADMIN_TOKEN: generateToken() } });
    const restarted = await buildConsoleListener(s.ctx);
    try {
      assert.equal((await call(restarted, op, 'GET', '/operator')).statusCode, 303);
      const created = await call(restarted, op, 'POST', '/operator/merchants', { _csrf: csrfOf(home.body), name });
      assert.equal(created.statusCode, 403);
      assert.equal(
        await countOf(sql`select count(*)::int as n from clients where name = ${name}`),
        0,
        'no merchant was created',
      );
      // Ended, not only refused: a process with the old token does not take it back.
      assert.equal((await call(app, op, 'GET', '/operator')).statusCode, 303);
    } finally {
      await restarted.close();
      await s.close();
    }
  });

  test("sign out everywhere: a developer ends every session of its merchant; other merchants' and the operator's go on", async () => {
    const { m, second } = await twoSecrets();
    const sessions = [
      await signedIn(asMerchant(m, m.secret)),
      await signedIn(asMerchant(m, m.secret)),
      await signedIn(asMerchant(m, second.secret)),
    ];
    const theirs = await signedIn(asMerchant(other, other.secret));
    const op = await signedIn(asOperator);
    const home = await call(app, sessions[0]!, 'GET', `/m/${m.clientId}`);
    assert.match(home.body, /formaction="\/sign-out-everywhere"/);
    assert.equal((await call(app, sessions[0]!, 'POST', '/sign-out-everywhere', {})).statusCode, 403, 'no token');
    const res = await call(app, sessions[0]!, 'POST', '/sign-out-everywhere', { _csrf: csrfOf(home.body) });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/sign-in?notice=signed-out-everywhere');
    assert.match((await call(app, sessions[0]!, 'GET', String(res.headers.location))).body, /Signed out everywhere/);
    for (const b of sessions) assert.equal((await call(app, b, 'GET', `/m/${m.clientId}`)).statusCode, 303);
    assert.equal((await call(app, theirs, 'GET', `/m/${other.clientId}`)).statusCode, 200);
    assert.equal((await call(app, op, 'GET', '/operator')).statusCode, 200);
  });

  test("sign out everywhere: the operator ends every operator session; merchants' go on", async () => {
    const [op, elsewhere] = [await signedIn(asOperator), await signedIn(asOperator)];
    const dev = await signedIn(asMerchant(a, a.secret));
    const home = await call(app, op, 'GET', '/operator');
    const res = await call(app, op, 'POST', '/sign-out-everywhere', { _csrf: csrfOf(home.body) });
    assert.equal(res.statusCode, 303);
    for (const b of [op, elsewhere]) assert.equal((await call(app, b, 'GET', '/operator')).statusCode, 303);
    assert.equal((await call(app, dev, 'GET', `/m/${a.clientId}`)).statusCode, 200);
  });

  test('without CONSOLE_OPERATOR_SIGN_IN the operator does not sign in on the console, and no operator session holds', async () => {
    const op = await signedIn(asOperator);
    const s = await createTestApp();
    const off = await buildConsoleListener(s.ctx);
    try {
      const b = browser();
      const page = await call(off, b, 'GET', '/sign-in');
      assert.match(page.body, /name="clientId"/);
      assert.doesNotMatch(page.body, /adminToken/, 'no operator form');
      const res = await signIn(off, b, asOperator);
      assert.equal(res.statusCode, 403);
      assert.match(res.body, /CONSOLE_OPERATOR_SIGN_IN=true/);
      assert.ok(![...b.cookies.keys()].includes('coffer_console'), 'no session');
      // A session the operator signed in with where it is allowed opens nothing here.
      assert.equal((await call(off, op, 'GET', `/m/${other.clientId}`)).statusCode, 303);
      assert.equal((await call(off, op, 'GET', '/operator')).statusCode, 404);
      assert.equal((await call(app, op, 'GET', '/operator')).statusCode, 200);
      // Merchants' developers sign in as ever.
      assert.equal((await signIn(off, browser(), asMerchant(a, a.secret))).statusCode, 303);
    } finally {
      await off.close();
      await s.close();
    }
  });

  test('notices and alerts come from codes: text in the address is never shown', async () => {
    const dev = await signedIn(asMerchant(a, a.secret));
    const words = encodeURIComponent('Your account is locked: call +1 555 0100');
    const shown = (body: string) => /class="flash[^"]*"[^>]*>([^<]*)</.exec(body)?.[1];
    for (const q of [`error=${words}`, `notice=${words}`, 'notice=toString', 'notice=replay-queued&n=lots']) {
      const res = await call(app, dev, 'GET', `/m/${a.clientId}/payments?${q}`);
      assert.equal(res.statusCode, 200, q);
      assert.equal(shown(res.body), undefined, q);
    }
    assert.equal(
      shown((await call(app, dev, 'GET', `/m/${a.clientId}/payments?notice=replay-queued&n=2`)).body),
      'Replay queued (2 pending replay deliveries).',
    );
    assert.equal(
      shown((await call(app, dev, 'GET', `/m/${a.clientId}/payments?error=no-payment`)).body),
      'This merchant has no payment with that id.',
    );
    const op = await signedIn(asOperator);
    assert.equal(shown((await call(app, op, 'GET', `/operator?error=${words}`)).body), undefined);
    assert.equal(
      shown((await call(app, op, 'GET', '/operator?error=merchant-name')).body),
      'A merchant needs a name (up to 200 characters).',
    );
    assert.equal(shown((await call(app, browser(), 'GET', `/sign-in?error=${words}&notice=${words}`)).body), undefined);
  });

  test('the Content-Security-Policy is exactly the one docs/operations.md shows', async () => {
    const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const documented = /`Content-Security-Policy: ([^`]+)`/.exec(doc)?.[1];
    assert.ok(documented, 'docs/operations.md shows the header');
    const dev = await signedIn(asMerchant(a, a.secret));
    for (const url of ['/sign-in', `/m/${a.clientId}`, `/m/${a.clientId}/nothing-here`]) {
      const res = await call(app, dev, 'GET', url);
      assert.equal(res.headers['content-security-policy'], documented, url);
    }
  });
});
