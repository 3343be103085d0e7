// Webhook delivery through a real HTTP receiver on loopback (docs/adr/0006-events-in-an-outbox.md): the outbox,
// signatures, retries with their schedule, timeouts, redirects, replays and the events API.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { rowsOf } from '../../db/open.ts';
import { buildConsoleListener } from '../../listeners/console.ts';
import { browser, call, signIn } from '../../test/console-browser.ts';
import { kycApplication as application, webhookBody } from '../../test/fixtures.ts';
import {
  createTestApp,
  createUser,
  errorsOf,
  LOCAL_RECEIVERS,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import { fundedWallet } from '../../test/money.ts';
import { loopbackIsPublic, startReceiver, type Receiver } from '../../test/receiver.ts';
import { decideDueKycApplications } from '../kyc/domain.ts';
import { recordEvent } from './record.ts';
import { claimDueDeliveries, recordAttempts, releaseDeliveries } from './sql.ts';

/** Registers a webhook; returns its id and secret. */
async function register(t: TestApp, as: Merchant, attributes: Record<string, unknown>) {
  const res = await t.request('POST', '/api/v1/webhooks', { as, body: webhookBody(attributes) });
  assert.equal(res.status, 201, res.raw);
  return { id: res.body.data.id as string, secret: res.body.data.attributes.secret as string };
}

/** The spec's KYC topics: one event per decision (Accrue's Kyc* topics add three more per user: modules/kyc). */
const DECISIONS = ['ApplicationApproved', 'ApplicationAwaitingDocuments', 'ApplicationDeclined'];

/** Takes a user through KYC to the sandbox decision for `email`; returns the user id. */
async function kycDecision(t: TestApp, as: Merchant, email: string): Promise<string> {
  const u = await createUser(t, as);
  await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as });
  const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as, body: application(email) });
  assert.equal(res.status, 200);
  t.clock.advance(500);
  await t.ctx.jobs.runOnce('kyc-decisions');
  return u.id;
}

const deliver = (t: TestApp) => t.ctx.webhooks.runOnce();

describe('webhook delivery', () => {
  let t: TestApp;
  let m: Merchant;
  let rx: Receiver;
  let hook: { id: string; secret: string };
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS, webhookIsPublicAddress: loopbackIsPublic });
    m = await t.createMerchant();
    rx = await startReceiver();
    hook = await register(t, m, { url: rx.url, topics: DECISIONS });
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  test('a KYC decision is delivered: the envelope, included[0] the user, both signatures verify', async () => {
    const before = rx.received.length;
    const userId = await kycDecision(t, m, 'signed@example.com');
    await deliver(t);
    assert.equal(rx.received.length, before + 1);
    const r = rx.received.at(-1)!;
    // Standard Webhooks, verified by its own library.
    const verified = new StandardWebhook(hook.secret).verify(r.body, r.headers as Record<string, string>) as Record<
      string,
      any
    >;
    assert.equal(verified.data.type, 'WebhookEvent');
    // The plain x-service-signature: hex HMAC-SHA256 of the raw body with the secret's bytes.
    const key = Buffer.from(hook.secret.slice('whsec_'.length), 'base64');
    assert.equal(r.headers['x-service-signature'], createHmac('sha256', key).update(r.body).digest('hex'));
    assert.equal(r.headers['content-type'], 'application/json');
    assert.ok(
      Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000) < 30,
      'webhook-timestamp is the real send time',
    );
    const body = JSON.parse(r.body);
    assert.equal(body.data.id, r.headers['webhook-id']);
    assert.deepEqual(body.data.attributes, {
      id: body.data.id,
      topic: 'ApplicationApproved',
      clientId: m.clientId,
      userId,
      updatedAt: t.clock.now().toISOString(),
      createdAt: t.clock.now().toISOString(),
    });
    assert.deepEqual(body.data.relationships.event.data, { type: 'User', id: userId });
    assert.equal(body.included[0].type, 'User');
    assert.equal(body.included[0].id, userId);
    assert.equal(body.included[0].attributes.profile.firstName, 'Ada');
  });

  test('each KYC decision has its topic', async () => {
    const start = rx.received.length;
    await kycDecision(t, m, 'x@highrisk.test');
    await kycDecision(t, m, 'x@declined.test');
    await deliver(t);
    const topics = rx.received.slice(start).map((r) => JSON.parse(r.body).data.attributes.topic);
    assert.deepEqual(topics.sort(), ['ApplicationAwaitingDocuments', 'ApplicationDeclined']);
  });

  test('a tampered body or wrong secret fails verification', async () => {
    await kycDecision(t, m, 'tamper@example.com');
    await deliver(t);
    const r = rx.received.at(-1)!;
    assert.throws(() =>
      new StandardWebhook(hook.secret).verify(r.body.replace('Ada', 'Eve'), r.headers as Record<string, string>),
    );
    assert.throws(() =>
      new StandardWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        r.body,
        r.headers as Record<string, string>,
      ),
    );
  });

  test('topics filter deliveries; disabled webhooks get nothing', async () => {
    const fm = await t.createMerchant();
    const declinedOnly = await startReceiver();
    const disabledRx = await startReceiver();
    try {
      await register(t, fm, { url: declinedOnly.url, topics: ['ApplicationDeclined'] });
      await register(t, fm, { url: disabledRx.url, topics: ['*'], enabled: false });
      await kycDecision(t, fm, 'ok@example.com');
      await kycDecision(t, fm, 'no@declined.test');
      await deliver(t);
      assert.deepEqual(
        declinedOnly.received.map((r) => JSON.parse(r.body).data.attributes.topic),
        ['ApplicationDeclined'],
      );
      assert.equal(disabledRx.received.length, 0);
    } finally {
      await declinedOnly.close();
      await disabledRx.close();
    }
  });

  test('no event without its change: a decision whose transaction fails leaves neither', async () => {
    const fm = await t.createMerchant();
    const u = await createUser(t, fm);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: fm });
    await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
      as: fm,
      body: application('atomic@example.com'),
    });
    const count = async () =>
      rowsOf<{ n: number }>(
        await t.ctx.db.execute(sql`select count(*)::int as n from events where client_id = ${fm.clientId}`),
      )[0]!.n;
    const submitted = await count(); // the application's own events
    t.clock.advance(500);
    await assert.rejects(
      decideDueKycApplications(t.ctx.db, {
        provider: t.ctx.providers.kyc,
        now: () => t.clock.now(),
        baseUrl: 'http://api.test',
        onChange: async (tx, e) => {
          await recordEvent(tx, {
            clientId: fm.clientId,
            topic: 'ApplicationApproved',
            userId: e.user.id,
            resource: { id: e.user.id, type: 'User' },
            now: e.now,
          });
          throw new Error('crash after the event was written');
        },
      }),
    );
    assert.equal(await count(), submitted, "none of the decision's events");
    const kyc = await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: fm });
    assert.equal(kyc.body.data.attributes.status, 'Pending', 'and the change is not there either');
  });

  test('a receiver failing three times then succeeding gets the event exactly once as a success', async () => {
    const fm = await t.createMerchant();
    const flaky = await startReceiver((_r, i) => ({ status: i < 3 ? 500 : 200, body: i < 3 ? 'not yet' : 'ok' }));
    try {
      await register(t, fm, { url: flaky.url, topics: DECISIONS });
      await kycDecision(t, fm, 'flaky@example.com');
      const [{ id: eventId }] = (await t.request('GET', '/api/v1/webhook-events', { as: fm })).body.data;
      await deliver(t);
      const expected = [5, 10, 30];
      for (const [i, seconds] of expected.entries()) {
        const ev = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: fm })).body.data.attributes;
        assert.equal(ev.deliveryState, 'pending');
        const due = new Date(ev.deliveries[0].nextAttemptAt).getTime() - t.clock.now().getTime();
        assert.ok(
          due >= seconds * 1000 && due <= seconds * 1100,
          `retry ${i + 1} after ${due} ms, expected ${seconds} s + up to 10%`,
        );
        t.clock.advance(due - 1);
        assert.equal(await deliver(t), 0, 'not before it is due');
        t.clock.advance(1);
        assert.equal(await deliver(t), 1);
      }
      assert.equal(flaky.received.length, 4);
      assert.ok(
        flaky.received.every((r) => r.headers['webhook-id'] === eventId),
        'the same webhook-id on every attempt',
      );
      assert.ok(
        flaky.received.every((r) => r.body === flaky.received[0]!.body),
        'the same bytes on every attempt',
      );
      const ev = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: fm })).body.data.attributes;
      assert.equal(ev.deliveryState, 'succeeded');
      const d = ev.deliveries[0];
      assert.equal(d.state, 'succeeded');
      assert.equal(d.attemptCount, 4);
      assert.deepEqual(
        d.attempts.map((a: { statusCode: number }) => a.statusCode),
        [500, 500, 500, 200],
      );
      assert.deepEqual(
        d.attempts.map((a: { error: string | null }) => a.error),
        ['receiver answered 500', 'receiver answered 500', 'receiver answered 500', null],
      );
      assert.equal(d.attempts[0].responseExcerpt, 'not yet', 'a public receiver: its answer is shown');
      t.clock.advance(86_400_000);
      assert.equal(await deliver(t), 0, 'nothing more is sent');
      assert.equal(flaky.received.length, 4);
    } finally {
      await flaky.close();
    }
  });

  test('attempts that end together are recorded together, each with its own outcome', async () => {
    const gm = await t.createMerchant();
    const failing = await startReceiver(() => ({ status: 500, body: 'no' }));
    try {
      const ok = await register(t, gm, { url: rx.url, topics: DECISIONS });
      const bad = await register(t, gm, { url: failing.url, topics: DECISIONS });
      for (let i = 0; i < 6; i++) await kycDecision(t, gm, `group${i}@example.com`);
      const all = (await t.request('GET', '/api/v1/webhook-events?page[limit]=100', { as: gm })).body.data as {
        id: string;
        attributes: { topic: string };
      }[];
      const events = all.filter((e) => DECISIONS.includes(e.attributes.topic));
      assert.equal(events.length, 6);
      // Twelve attempts in flight at once: the answers come back together, and the attempts
      // that end while one group is written go in the next.
      assert.equal(await deliver(t), 12);
      for (const { id } of events) {
        const ev = (await t.request('GET', `/api/v1/webhook-events/${id}`, { as: gm })).body.data.attributes;
        assert.equal(ev.deliveryState, 'pending', 'one of its deliveries is to be retried');
        const byHook = new Map(ev.deliveries.map((d: { webhookId: string }) => [d.webhookId, d]));
        const good = byHook.get(ok.id) as {
          state: string;
          attemptCount: number;
          completedAt: string | null;
          attempts: { statusCode: number; error: string | null }[];
        };
        const retry = byHook.get(bad.id) as {
          state: string;
          attemptCount: number;
          nextAttemptAt: string;
          completedAt: string | null;
          attempts: { statusCode: number; error: string | null }[];
        };
        assert.equal(good.state, 'succeeded');
        assert.notEqual(good.completedAt, null);
        assert.deepEqual(
          good.attempts.map((a) => [a.statusCode, a.error]),
          [[200, null]],
        );
        assert.equal(retry.state, 'pending');
        assert.equal(retry.completedAt, null);
        assert.equal(retry.attemptCount, 1);
        assert.deepEqual(
          retry.attempts.map((a) => [a.statusCode, a.error]),
          [[500, 'receiver answered 500']],
        );
        const due = new Date(retry.nextAttemptAt).getTime() - t.clock.now().getTime();
        assert.ok(due >= 5_000 && due <= 5_500, `retried after ${due} ms`);
      }
    } finally {
      await failing.close();
    }
  });

  test('after the whole schedule (about three days) the delivery is marked failed', async () => {
    const fm = await t.createMerchant();
    const down = await startReceiver(() => ({ status: 503 }));
    try {
      await register(t, fm, { url: down.url, topics: DECISIONS });
      await kycDecision(t, fm, 'never@example.com');
      const started = t.clock.now().getTime();
      await deliver(t);
      for (let i = 0; i < 20; i++) {
        t.clock.advance(2 * 86_400_000);
        await deliver(t);
      }
      assert.equal(down.received.length, 13, 'the first attempt and twelve retries');
      const [ev] = (await t.request('GET', '/api/v1/webhook-events?filter[deliveryState]=failed', { as: fm })).body
        .data;
      const full = (await t.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: fm })).body.data.attributes;
      assert.equal(full.deliveries[0].state, 'failed');
      assert.equal(full.deliveries[0].nextAttemptAt, null);
      assert.equal(full.deliveries[0].attempts.length, 13);
      void started;
    } finally {
      await down.close();
    }
  });

  test('timeouts, refused connections and redirects are failures; redirects are not followed', async () => {
    // Long enough that a receiver which answers does so in time on a loaded machine.
    const quick = await createTestApp({
      env: { ...LOCAL_RECEIVERS, WEBHOOK_TIMEOUT_MS: '2000' },
      webhookIsPublicAddress: loopbackIsPublic,
    });
    const hanging = await startReceiver(() => 'hang');
    const target = await startReceiver();
    const redirecting = await startReceiver(() => ({ status: 302, headers: { location: target.url } }));
    try {
      const qm = await quick.createMerchant();
      for (const url of [hanging.url, redirecting.url, 'http://127.0.0.1:9/closed'])
        await register(quick, qm, { url, topics: DECISIONS });
      await kycDecision(quick, qm, 'x@example.com');
      await quick.ctx.webhooks.runOnce();
      const [ev] = (await quick.request('GET', '/api/v1/webhook-events', { as: qm })).body.data;
      const deliveries = (await quick.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: qm })).body.data
        .attributes.deliveries;
      const errors = deliveries.map((d: { attempts: { error: string }[] }) => d.attempts[0]!.error).sort();
      assert.equal(errors.length, 3);
      assert.ok(
        errors.some((e: string) => e === 'no answer within 2000 ms'),
        errors.join(' | '),
      );
      assert.ok(
        errors.some((e: string) => e === 'receiver answered 302'),
        errors.join(' | '),
      );
      assert.ok(
        errors.some((e: string) => /ECONNREFUSED/.test(e)),
        errors.join(' | '),
      );
      assert.ok(
        deliveries.every((d: { state: string }) => d.state === 'pending'),
        'all will be retried',
      );
      assert.equal(target.received.length, 0, 'the redirect was not followed');
    } finally {
      await quick.close();
      await Promise.all([hanging.close(), target.close(), redirecting.close()]);
    }
  });

  test("a receiver that hangs holds at most half the slots, then one: other merchants' events arrive meanwhile", async () => {
    const timeoutMs = 1_500;
    const quick = await createTestApp({
      env: { ...LOCAL_RECEIVERS, WEBHOOK_TIMEOUT_MS: String(timeoutMs), WEBHOOK_CONCURRENCY: '4' },
    });
    const hanging = await startReceiver(() => 'hang');
    const healthy = await startReceiver();
    try {
      const slow = await quick.createMerchant();
      const fine = await quick.createMerchant();
      const a = await register(quick, slow, { url: hanging.url, topics: ['PaymentCreated'] });
      const b = await register(quick, fine, { url: healthy.url, topics: ['PaymentCreated'] });
      // The hanging receiver's events are the oldest: a batch-at-a-time worker would fill every
      // slot with them and make the others wait for the timeout.
      for (let i = 0; i < 4; i++)
        assert.equal((await quick.request('POST', `/api/v1/webhooks/${a.id}/test`, { as: slow })).status, 201);
      for (let i = 0; i < 20; i++)
        assert.equal((await quick.request('POST', `/api/v1/webhooks/${b.id}/test`, { as: fine })).status, 201);
      const start = Date.now();
      const run = deliver(quick);
      await healthy.waitFor(20, timeoutMs);
      assert.ok(
        Date.now() - start < timeoutMs,
        'every healthy delivery arrived before the first hanging attempt timed out',
      );
      assert.equal(hanging.received.length, 2, 'one webhook takes at most half of the 4 slots');
      assert.equal(await run, 24);
      // After its first failures the hanging receiver gets one attempt at a time.
      const at = hanging.received.map((r) => r.at);
      assert.equal(at.length, 4);
      assert.ok(at[2]! - at[0]! >= timeoutMs - 100, 'the third attempt waited for the first two to time out');
      assert.ok(at[3]! - at[2]! >= timeoutMs - 100, 'then one at a time');
      const failed = await quick.request('GET', '/api/v1/webhook-events?filter[deliveryState]=pending', { as: slow });
      assert.equal(failed.body.meta.total, 4, 'each hanging attempt was recorded and will be retried');
    } finally {
      await quick.close();
      await Promise.all([hanging.close(), healthy.close()]);
    }
  });

  test("a deleted webhook's pending deliveries are canceled", async () => {
    const fm = await t.createMerchant();
    const w = await register(t, fm, { url: 'http://127.0.0.1:9/closed', topics: ['*'] });
    await kycDecision(t, fm, 'gone@example.com');
    await deliver(t); // fails, retry pending
    assert.equal((await t.request('DELETE', `/api/v1/webhooks/${w.id}`, { as: fm })).status, 204);
    const [ev] = (await t.request('GET', '/api/v1/webhook-events', { as: fm })).body.data;
    const d = (await t.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: fm })).body.data.attributes
      .deliveries[0];
    assert.equal(d.state, 'canceled');
  });

  test('replay redelivers the same event id and body, to subscribers or to one webhook', async () => {
    const fm = await t.createMerchant();
    const a = await startReceiver();
    const b = await startReceiver();
    try {
      await register(t, fm, { url: a.url, topics: ['ApplicationApproved'] });
      const wb = await register(t, fm, { url: b.url, topics: ['PaymentCreated'] });
      await kycDecision(t, fm, 'again@example.com');
      await deliver(t);
      assert.equal(a.received.length, 1);
      const eventId = a.received[0]!.headers['webhook-id'] as string;
      const res = await t.request('POST', `/api/v1/webhook-events/${eventId}/replay`, { as: fm });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.attributes.deliveryState, 'pending');
      await deliver(t);
      assert.equal(a.received.length, 2);
      assert.equal(a.received[1]!.headers['webhook-id'], eventId);
      assert.equal(a.received[1]!.body, a.received[0]!.body);
      assert.equal(b.received.length, 0, 'b does not subscribe');
      const toB = await t.request('POST', `/api/v1/webhook-events/${eventId}/replay`, {
        as: fm,
        body: { data: { type: 'WebhookEventReplay', attributes: { webhookId: wb.id } } },
      });
      assert.equal(toB.status, 200);
      await deliver(t);
      assert.equal(b.received.length, 1);
      assert.equal(b.received[0]!.headers['webhook-id'], eventId);
      const ev = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: fm })).body.data.attributes;
      assert.deepEqual(
        ev.deliveries.map((d: { trigger: string; state: string }) => `${d.trigger}:${d.state}`),
        ['event:succeeded', 'replay:succeeded', 'replay:succeeded'],
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('replay errors: unknown event 404, unknown webhook 400, nobody subscribed 400', async () => {
    const fm = await t.createMerchant();
    const missing = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const r404 = await t.request('POST', `/api/v1/webhook-events/${missing}/replay`, { as: fm });
    assert.equal(r404.status, 404);
    assert.equal(errorsOf(r404)[0]!.code, 'WebhookEventNotFound');
    await kycDecision(t, fm, 'lonely@example.com'); // no webhooks: an event with no deliveries
    const [ev] = (await t.request('GET', '/api/v1/webhook-events', { as: fm })).body.data;
    assert.equal(ev.attributes.deliveryState, 'none');
    const nobody = await t.request('POST', `/api/v1/webhook-events/${ev.id}/replay`, { as: fm });
    assert.equal(nobody.status, 400);
    assert.equal(errorsOf(nobody)[0]!.code, 'IllegalOperation');
    const unknownHook = await t.request('POST', `/api/v1/webhook-events/${ev.id}/replay`, {
      as: fm,
      body: { data: { type: 'WebhookEventReplay', attributes: { webhookId: missing } } },
    });
    assert.equal(unknownHook.status, 400);
    assert.equal(errorsOf(unknownHook)[0]!.code, 'WebhookNotFound');
    assert.equal(errorsOf(unknownHook)[0]!.source?.pointer, '/data/attributes/webhookId');
  });

  test('the test event goes to its webhook only, whatever the topics', async () => {
    const fm = await t.createMerchant();
    const a = await startReceiver();
    const b = await startReceiver();
    try {
      const wa = await register(t, fm, { url: a.url, topics: ['PaymentCreated'] });
      await register(t, fm, { url: b.url, topics: ['*'] });
      const res = await t.request('POST', `/api/v1/webhooks/${wa.id}/test`, { as: fm });
      assert.equal(res.status, 201);
      assert.equal(res.body.data.attributes.topic, 'WebhookTest');
      await deliver(t);
      assert.equal(a.received.length, 1);
      assert.equal(b.received.length, 0);
      new StandardWebhook(wa.secret).verify(a.received[0]!.body, a.received[0]!.headers as Record<string, string>);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('a worker whose lease ran out', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => {
    // An app of its own: the claims below would take other tests' due deliveries.
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    rx = await startReceiver();
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  test('cannot end a delivery that another worker claimed since, even after that claim was given back', async () => {
    const m = await t.createMerchant();
    const hook = await register(t, m, { url: rx.url, topics: ['PaymentCreated'] });
    const eventId = (await t.request('POST', `/api/v1/webhooks/${hook.id}/test`, { as: m })).body.data.id as string;
    const claim = (now: Date) =>
      claimDueDeliveries(t.ctx.db, {
        now,
        leaseUntil: new Date(now.getTime() + 30_000),
        limit: 10,
        room: {},
        share: 16,
        busy: {},
        merchantCap: 16,
      });
    const started = t.clock.now();
    const [a] = await claim(started);
    assert.equal(a?.eventId, eventId);
    // A's lease runs out while it waits on the receiver; B claims the delivery and gives it
    // back unattempted (its host's breaker is open), which returns the attempt number to A's.
    t.clock.advance(31_000);
    const [b] = await claim(t.clock.now());
    assert.deepEqual([b?.id, b?.attempt], [a!.id, 2]);
    const heldUntil = new Date(t.clock.now().getTime() + 60_000);
    await releaseDeliveries(
      t.ctx.db,
      [{ id: b!.id, eventId, attempt: b!.attempt, leaseUntil: b!.leaseUntil, until: heldUntil }],
      t.clock.now(),
    );
    // A's answer comes in late.
    const outcome = {
      deliveryId: a!.id,
      eventId,
      clientId: a!.clientId,
      attempt: a!.attempt,
      leaseUntil: a!.leaseUntil,
      startedAt: started,
      durationMs: 31_000,
      statusCode: 200,
      error: null,
      responseExcerpt: null,
      state: 'succeeded' as const,
      nextAttemptAt: null,
      now: t.clock.now(),
    };
    await t.ctx.db.transaction((tx) => recordAttempts(tx, [{ id: randomUUID(), outcome }]));
    let ev = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: m })).body.data.attributes;
    assert.equal(ev.deliveryState, 'pending', 'the late attempt does not end the delivery');
    assert.deepEqual(
      ev.deliveries[0].attempts.map((x: { statusCode: number }) => x.statusCode),
      [200],
      'it is logged',
    );
    assert.equal(ev.deliveries[0].nextAttemptAt, heldUntil.toISOString(), 'the hold stands');
    t.clock.advance(60_000);
    assert.equal(await t.ctx.webhooks.runOnce(), 1, 'the delivery is sent again when the hold ends');
    ev = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: m })).body.data.attributes;
    assert.equal(ev.deliveryState, 'succeeded');
    assert.equal(rx.received.length, 1);
  });
});

describe('events API', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS, webhookIsPublicAddress: loopbackIsPublic });
    m = await t.createMerchant();
    other = await t.createMerchant();
    rx = await startReceiver();
    await register(t, m, { url: rx.url, topics: ['ApplicationApproved'] });
    await kycDecision(t, m, 'one@example.com'); // delivered
    t.clock.advance(60_000);
    await kycDecision(t, m, 'two@declined.test'); // not subscribed: no deliveries
    await t.ctx.webhooks.runOnce();
    t.clock.advance(60_000);
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  test('lists newest first with topic, time and delivery-state filters', async () => {
    const all = await t.request('GET', '/api/v1/webhook-events', { as: m });
    assert.equal(all.status, 200);
    const topics = (res: { body: { data: { attributes: { topic: string } }[] } }) =>
      res.body.data.map((e) => e.attributes.topic);
    // Each user: KycCreated and KycPending when applying, then Accrue's and the spec's topic of the decision.
    assert.deepEqual(topics(all), [
      'ApplicationDeclined',
      'KycDeclined',
      'KycPending',
      'KycCreated',
      'ApplicationApproved',
      'KycApproved',
      'KycPending',
      'KycCreated',
    ]);
    assert.equal(all.body.meta.total, 8);
    const byTopic = await t.request('GET', '/api/v1/webhook-events?filter[topic]=ApplicationApproved', { as: m });
    assert.equal(byTopic.body.meta.total, 1);
    const firstDecision = all.body.data[4].attributes.createdAt;
    const after1 = await t.request(
      'GET',
      `/api/v1/webhook-events?filter[createdAfter]=${encodeURIComponent(firstDecision)}`,
      { as: m },
    );
    assert.equal(after1.body.meta.total, 6, 'createdAfter is inclusive');
    const before2 = await t.request(
      'GET',
      `/api/v1/webhook-events?filter[createdBefore]=${encodeURIComponent(all.body.data[0].attributes.createdAt)}`,
      { as: m },
    );
    assert.equal(before2.body.meta.total, 6, 'createdBefore is exclusive');
    const succeeded = await t.request('GET', '/api/v1/webhook-events?filter[deliveryState]=succeeded', { as: m });
    assert.deepEqual(topics(succeeded), ['ApplicationApproved']);
    const none = await t.request('GET', '/api/v1/webhook-events?filter[deliveryState]=none&page[limit]=50', { as: m });
    assert.deepEqual(
      topics(none),
      topics(all).filter((topic) => topic !== 'ApplicationApproved'),
    );
    // Each listed event shows its own delivery state, on every page and past an offset.
    const states = (res: typeof all) =>
      res.body.data.map((e: { attributes: { topic: string; deliveryState: string } }) => [
        e.attributes.topic,
        e.attributes.deliveryState,
      ]);
    const expected = topics(all).map((topic: string) => [
      topic,
      topic === 'ApplicationApproved' ? 'succeeded' : 'none',
    ]);
    assert.deepEqual(states(all), expected);
    const paged = await t.request('GET', '/api/v1/webhook-events?page[limit]=2&page[offset]=3', { as: m });
    assert.deepEqual(states(paged), expected.slice(3, 5));
  });

  test('an event shows the exact payload sent and every attempt', async () => {
    const [ev] = (await t.request('GET', '/api/v1/webhook-events?filter[topic]=ApplicationApproved', { as: m })).body
      .data;
    const res = await t.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: m });
    assert.equal(res.status, 200);
    const a = res.body.data.attributes;
    assert.deepEqual(a.payload, JSON.parse(rx.received[0]!.body));
    // The very bytes sent, on the event and in the list (the stored text is not re-encoded).
    assert.ok(res.raw.includes(`"payload":${rx.received[0]!.body}`), 'the payload is the body sent, byte for byte');
    const listed = await t.request('GET', '/api/v1/webhook-events?page[limit]=100', { as: m });
    assert.ok(listed.raw.includes(`"payload":${rx.received[0]!.body}`), 'the list sends the same bytes');
    assert.equal(a.deliveries.length, 1);
    assert.equal(a.deliveries[0].attempts[0].statusCode, 200);
    assert.equal(typeof a.deliveries[0].attempts[0].durationMs, 'number');
    assert.equal(a.deliveries[0].attempts[0].startedAt, a.deliveries[0].completedAt);
    assert.deepEqual(res.body.data.relationships.event.data.type, 'User');
  });

  test('bad filters are 400', async () => {
    for (const q of [
      'filter[topic]=Nope',
      'filter[createdAfter]=yesterday',
      'filter[deliveryState]=lost',
      'filter[userId]=x',
    ]) {
      const res = await t.request('GET', `/api/v1/webhook-events?${q}`, { as: m });
      assert.equal(res.status, 400, q);
      assert.equal(errorsOf(res)[0]!.code, 'BadRequest', q);
    }
  });

  test('userId and walletId are present when the event concerns them and absent, never null, otherwise', async () => {
    const fm = await t.createMerchant();
    const { user, wallet } = await fundedWallet(t, fm, 1_000);
    const list = await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as: fm });
    assert.equal(list.status, 200, list.raw);
    const events = list.body.data as { id: string; attributes: Record<string, unknown> }[];
    const kyc = events.find((e) => e.attributes.topic === 'KycApproved');
    const cleared = events.find((e) => e.attributes.topic === 'TransactionCleared');
    assert.ok(kyc && cleared, JSON.stringify(events.map((e) => e.attributes.topic)));
    assert.equal(kyc.attributes.userId, user.id);
    assert.ok(!('walletId' in kyc.attributes), 'an event about a user alone has no walletId');
    assert.equal(cleared.attributes.walletId, wallet.id);
    assert.equal(cleared.attributes.userId, user.id);
    const one = await t.request('GET', `/api/v1/webhook-events/${kyc.id}`, { as: fm });
    assert.equal(one.status, 200, one.raw);
    assert.ok(!('walletId' in one.body.data.attributes), 'nor in a single read');
    assert.equal(one.body.data.attributes.updatedAt, one.body.data.attributes.createdAt);
  });

  test('another merchant sees none of these events (404 by id, not in lists)', async () => {
    const [ev] = (await t.request('GET', '/api/v1/webhook-events', { as: m })).body.data;
    assert.equal((await t.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: other })).status, 404);
    assert.equal((await t.request('POST', `/api/v1/webhook-events/${ev.id}/replay`, { as: other })).status, 404);
    assert.equal((await t.request('GET', '/api/v1/webhook-events', { as: other })).body.meta.total, 0);
  });
});

describe('receiver addresses', () => {
  /**
   * A DNS stand-in: each name's answers, one list per lookup (the last one repeats), so a name
   * can answer differently when checked and when connected to.
   */
  const dns = (names: Record<string, string[][]>) => {
    const calls = new Map<string, number>();
    return ((host: string, opts: { all?: boolean }, cb: (e: Error | null, a: unknown, f?: number) => void) => {
      const answers = names[host];
      if (!answers) return cb(Object.assign(new Error(`${host} not found`), { code: 'ENOTFOUND' }), []);
      const n = calls.get(host) ?? 0;
      calls.set(host, n + 1);
      const list = answers[Math.min(n, answers.length - 1)]!.map((address) => ({
        address,
        family: address.includes(':') ? 6 : 4,
      }));
      if (opts.all) cb(null, list);
      else cb(null, list[0]!.address, list[0]!.family);
    }) as never;
  };
  const lookup = dns({
    'loopback.example.com': [['127.0.0.1']],
    // NAT64 and 6to4 addresses are judged by the IPv4 address inside them.
    'nat64.example.com': [['64:ff9b::7f00:1']],
    'sixtofour.example.com': [['2002:7f00:1::1']],
    // Public when checked, loopback when connected to.
    'rebind.example.com': [['93.184.216.34'], ['127.0.0.1']],
  });
  /**
   * Registers a webhook on `url` for a new merchant, sends it a test event, delivers; returns the
   * delivery as the API shows it, with the merchant and the event's id.
   */
  async function sendTest(app: TestApp, url: string) {
    const am = await app.createMerchant();
    const w = await register(app, am, { url, topics: ['*'] });
    await app.request('POST', `/api/v1/webhooks/${w.id}/test`, { as: am });
    await app.ctx.webhooks.runOnce();
    const [ev] = (await app.request('GET', '/api/v1/webhook-events', { as: am })).body.data;
    const [d] = (await app.request('GET', `/api/v1/webhook-events/${ev.id}`, { as: am })).body.data.attributes
      .deliveries;
    return { ...d, merchant: am as Merchant, eventId: ev.id as string };
  }

  test('by default (sandbox and live) a name that resolves to a private address is refused at connect time, in the words used for a name that does not resolve', async () => {
    const rx = await startReceiver();
    const apps = [
      await createTestApp({ webhookLookup: lookup }),
      await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' }, webhookLookup: lookup }),
    ];
    try {
      for (const app of apps) {
        // The attempts do not tell which internal names exist: `nowhere` does not resolve.
        for (const name of ['loopback', 'nat64', 'sixtofour', 'nowhere']) {
          const host = `${name}.example.com`;
          const d = await sendTest(app, `http://${host}:${rx.port}/hooks`);
          assert.equal(d.state, 'pending');
          assert.deepEqual(
            [d.attempts[0].error, d.attempts[0].statusCode, d.attempts[0].durationMs],
            [
              `EADDRNOTALLOWED: ${host} has no public address: register a receiver on a public address; for local development, start the sandbox with WEBHOOK_ALLOW_PRIVATE=true`,
              null,
              0,
            ],
            `${app.ctx.config.environment} ${name}`,
          );
        }
      }
      assert.equal(rx.received.length, 0, 'nothing reached the loopback receiver');
    } finally {
      await Promise.all(apps.map((a) => a.close()));
      await rx.close();
    }
  });

  test('with private receivers allowed, they are reached, and their attempts show only whether the delivery was taken', async () => {
    const secret = 'internal service: secret=hunter2';
    const rx = await startReceiver(() => ({ status: 200, body: secret }));
    const erroring = await startReceiver(() => ({ status: 500, body: secret }));
    const hanging = await startReceiver(() => 'hang');
    const app = await createTestApp({ env: { ...LOCAL_RECEIVERS, WEBHOOK_TIMEOUT_MS: '500' }, webhookLookup: lookup });
    const consoleApp = await buildConsoleListener(app.ctx);
    const notTaken = 'not delivered (only that is recorded for a receiver on a non-public address)';
    try {
      // An address on loopback, and a public-looking name that resolves to it: what counts is
      // the address connected to, not the URL. A status, an answer, a timeout and a refused
      // connection all read the same.
      const cases: [string, string][] = [
        [rx.url, 'succeeded'],
        [`http://loopback.example.com:${rx.port}/hooks`, 'succeeded'],
        [erroring.url, 'pending'],
        [hanging.url, 'pending'],
        ['http://127.0.0.1:9/closed', 'pending'],
      ];
      for (const [url, state] of cases) {
        const d = await sendTest(app, url);
        const [a] = d.attempts;
        assert.deepEqual(
          [d.state, a.statusCode, a.error, a.durationMs, a.responseExcerpt, a.startedAt],
          [state, null, state === 'succeeded' ? null : notTaken, 0, null, d.completedAt ?? a.startedAt],
          url,
        );
        // What the console shows: the delivery's last status and the attempts.
        const [row] = rowsOf<{ last_status_code: number | null; last_error: string | null }>(
          await app.ctx.db.execute(
            sql`select last_status_code, last_error from event_deliveries where client_id = ${d.merchant.clientId}`,
          ),
        );
        assert.deepEqual([row!.last_status_code, row!.last_error], [null, a.error], url);
        const b = browser();
        const m = d.merchant;
        assert.equal(
          (await signIn(consoleApp, b, { role: 'merchant', clientId: m.clientId, secret: m.secret })).statusCode,
          303,
        );
        const page = (await call(consoleApp, b, 'GET', `/m/${m.clientId}/events/${d.eventId}`)).body;
        assert.match(page, /<td>0 ms<\/td>/, url);
        for (const shown of ['answered', 'no answer', 'ECONNREFUSED', 'hunter2'])
          assert.ok(!page.includes(shown), `the console shows "${shown}" for ${url}`);
      }
      assert.equal(rx.received.length, 2);
      assert.equal(erroring.received.length, 1);
      assert.equal(hanging.received.length, 1);
      const kept = rowsOf<{ n: number }>(
        await app.ctx.db.execute(
          sql`select count(*)::int as n from delivery_attempts where response_excerpt like '%hunter2%'`,
        ),
      );
      assert.equal(kept[0]!.n, 0, 'not stored either');
    } finally {
      await consoleApp.close();
      await app.close();
      await Promise.all([rx.close(), erroring.close(), hanging.close()]);
    }
  });

  test('a name that resolves to a public address when checked and to a private one when connecting is refused', async () => {
    const rx = await startReceiver();
    const app = await createTestApp({ env: LOCAL_RECEIVERS, webhookLookup: lookup });
    try {
      const d = await sendTest(app, `http://rebind.example.com:${rx.port}/hooks`);
      assert.match(d.attempts[0].error, /EADDRNOTALLOWED/);
      assert.equal(d.attempts[0].responseExcerpt, null);
      assert.equal(rx.received.length, 0);
    } finally {
      await app.close();
      await rx.close();
    }
  });

  test("a public receiver's answer is shown: its first 500 characters", async () => {
    const rx = await startReceiver(() => ({ status: 500, body: `not yet ${'x'.repeat(600)}` }));
    // The loopback receiver stands for a public one: the address test treats 127.0.0.1 as public.
    const app = await createTestApp({ env: LOCAL_RECEIVERS, webhookIsPublicAddress: loopbackIsPublic });
    try {
      const d = await sendTest(app, rx.url);
      assert.equal(d.attempts[0].statusCode, 500);
      assert.equal(d.attempts[0].responseExcerpt, `not yet ${'x'.repeat(492)}`);
    } finally {
      await app.close();
      await rx.close();
    }
  });
});
