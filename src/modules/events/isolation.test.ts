// One merchant's receivers never hold up another merchant's webhooks: slots shared per merchant
// and claimed in turns, a short connect timeout, and a circuit breaker per merchant and host.
import assert from 'node:assert/strict';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { TestClock, type Clock } from '../../clock.ts';
import { rowsOf } from '../../db/open.ts';
import { webhookBody } from '../../test/fixtures.ts';
import { createTestApp, LOCAL_RECEIVERS, type Merchant, type TestApp } from '../../test/harness.ts';
import { freePort } from '../../test/process.ts';
import { loopbackIsPublic, startReceiver, type Receiver } from '../../test/receiver.ts';

async function register(t: TestApp, as: Merchant, url: string): Promise<string> {
  const res = await t.request('POST', '/api/v1/webhooks', {
    as,
    body: webhookBody({ url, topics: ['PaymentCreated'] }),
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}

async function sendTest(t: TestApp, as: Merchant, webhookId: string): Promise<string> {
  const res = await t.request('POST', `/api/v1/webhooks/${webhookId}/test`, { as });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id;
}

/**
 * Starts delivering what is due and waits for the other merchant's one delivery to arrive at
 * `rx`: it must come within half a second, however much of the first merchant's is in the way.
 * Returns the delivery run, still going.
 */
async function otherArrivesPromptly(t: TestApp, rx: Receiver): Promise<{ run: Promise<number> }> {
  const start = Date.now();
  const run = t.ctx.webhooks.runOnce();
  await rx.waitFor(1, 10_000);
  const waited = Date.now() - start;
  assert.ok(waited < 500, `the other merchant's delivery arrived after ${waited} ms`);
  return { run };
}

interface DeliveryRow {
  webhook_id: string;
  state: string;
  attempt_count: number;
  next_attempt_at: Date;
  attempts: number;
}

/** The merchant's deliveries with their attempt counts, straight from the database. */
async function deliveriesOf(t: TestApp, m: Merchant): Promise<DeliveryRow[]> {
  const rows = rowsOf<DeliveryRow>(
    await t.ctx.db.execute(sql`
      select d.webhook_id, d.state, d.attempt_count, d.next_attempt_at,
             (select count(*)::int from delivery_attempts a where a.delivery_id = d.id) as attempts
      from event_deliveries d where d.client_id = ${m.clientId} order by d.id`),
  );
  return rows.map((r) => ({ ...r, next_attempt_at: new Date(r.next_attempt_at) }));
}

/**
 * Runs `fn` while every claim is logged (a trigger on the queue rows' lease); `claims(m)` gives
 * how many of the merchant's deliveries each claim statement leased, in order.
 */
async function withClaimLog(
  t: TestApp,
  fn: (claims: (m: Merchant) => Promise<number[]>) => Promise<void>,
): Promise<void> {
  await t.ctx.db.execute(sql.raw(`create table claim_log (client_id uuid, tx bigint, at bigserial)`));
  await t.ctx.db.execute(
    sql.raw(`create function log_claim() returns trigger language plpgsql as $$
    begin insert into claim_log (client_id, tx) values (new.client_id, txid_current()); return new; end $$`),
  );
  await t.ctx.db.execute(
    sql.raw(
      `create trigger log_claim after update on event_delivery_queue for each row when (new.lease_until is not null) execute function log_claim()`,
    ),
  );
  try {
    await fn(async (m) =>
      rowsOf<{ n: number }>(
        await t.ctx.db.execute(
          sql`select count(*)::int as n from claim_log where client_id = ${m.clientId} group by tx order by min(at)`,
        ),
      ).map((r) => r.n),
    );
  } finally {
    for (const drop of [
      'drop trigger log_claim on event_delivery_queue',
      'drop function log_claim()',
      'drop table claim_log',
    ])
      await t.ctx.db.execute(sql.raw(drop));
  }
}

/**
 * Each test's own time, earlier than any other test's: deliveries other tests leave pending
 * (the suite shares one database) are never due in it.
 */
let epoch = Date.parse('2025-06-01T00:00:00Z');
const ownClock = () => new TestClock(new Date((epoch -= 7 * 86_400_000)));

/**
 * A clock of the test's own epoch that runs with real time, as in production: deliveries waiting
 * in the worker's queue run out of their budget while attempts hang.
 */
function runningClock(): Clock {
  const start = ownClock().now().getTime();
  const t0 = performance.now();
  return { now: () => new Date(start + Math.round(performance.now() - t0)) };
}

/** How many of the merchant's pending deliveries no worker holds (not leased). */
async function unleased(t: TestApp, m: Merchant): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await t.ctx.db.execute(
      sql`select count(*)::int as n from event_delivery_queue where client_id = ${m.clientId} and lease_until is null`,
    ),
  );
  return row!.n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('delivery isolation between merchants', () => {
  test("140 hanging receivers of one merchant do not delay another merchant's delivery", async () => {
    const t = await createTestApp({
      clock: ownClock(),
      env: {
        ...LOCAL_RECEIVERS,
        WEBHOOK_MAX_PER_MERCHANT: '200',
        WEBHOOK_MERCHANT_CONCURRENCY: '8',
        WEBHOOK_TIMEOUT_MS: '2000',
      },
    });
    const hanging = await startReceiver(() => 'hang');
    const healthy = await startReceiver();
    try {
      const a = await t.createMerchant();
      const b = await t.createMerchant();
      // The hanging merchant's deliveries are the older ones.
      for (let i = 0; i < 140; i++) await sendTest(t, a, await register(t, a, `${hanging.url}/${i}`));
      await sendTest(t, b, await register(t, b, healthy.url));
      const { run } = await otherArrivesPromptly(t, healthy);
      assert.ok(
        hanging.received.length <= 8,
        `${hanging.received.length} attempts of one merchant in flight at once (at most 8)`,
      );
      await run;
    } finally {
      await t.close();
      await Promise.all([hanging.close(), healthy.close()]);
    }
  });

  test("a merchant at its cap with more deliveries due than slots never stops the worker: another merchant's delivery goes out within a second, cycle after cycle", async (c) => {
    const cap = 2;
    const t = await createTestApp({
      clock: runningClock(),
      // Attempts that hang for 8 s: longer than the 5 s a claimed delivery may wait in the queue.
      env: { ...LOCAL_RECEIVERS, WEBHOOK_MERCHANT_CONCURRENCY: String(cap), WEBHOOK_TIMEOUT_MS: '8000' },
    });
    const healthy = await startReceiver();
    const latencies: number[] = [];
    try {
      const a = await t.createMerchant();
      const b = await t.createMerchant();
      const wb = await register(t, b, healthy.url);
      for (let cycle = 0; cycle < 3; cycle++) {
        // Fresh webhooks on a fresh host each time: no breaker, no failing mark yet.
        const hanging = await startReceiver(() => 'hang');
        const hooks: string[] = [];
        try {
          for (let i = 0; i < 3 * cap; i++) {
            hooks.push(await register(t, a, `${hanging.url}/${i}`));
            await sendTest(t, a, hooks.at(-1)!);
          }
          const run = t.ctx.webhooks.runOnce();
          await hanging.waitFor(cap, 10_000);
          // The deliveries beyond the cap cannot start: they go back once their queue budget is spent.
          for (const until = Date.now() + 10_000; (await unleased(t, a)) < 2 * cap; ) {
            assert.ok(Date.now() < until, 'the deliveries beyond the cap went back');
            await delay(20);
          }
          const start = performance.now();
          await sendTest(t, b, wb);
          await healthy.waitFor(cycle + 1, 15_000);
          latencies.push(Math.round(performance.now() - start));
          assert.ok(latencies.at(-1)! < 1_000, `the other merchant's delivery took ${latencies.at(-1)} ms`);
          assert.equal(hanging.received.length, cap, 'the merchant at its cap got no more attempts');
          assert.equal(
            await unleased(t, a),
            2 * cap,
            'nor were its deliveries claimed again while it stays at its cap',
          );
          await hanging.close(); // its attempts end: the run can finish
          await run;
        } finally {
          await hanging.close();
          for (const id of hooks) await t.request('DELETE', `/api/v1/webhooks/${id}`, { as: a });
        }
      }
      c.diagnostic(`latencies ${latencies.join(', ')} ms; median ${median(latencies)}, max ${Math.max(...latencies)}`);
    } finally {
      await t.close();
      await healthy.close();
    }
  });

  test("one merchant's backlog does not hold back another merchant's delivery", async () => {
    const t = await createTestApp({ clock: ownClock(), env: { ...LOCAL_RECEIVERS, WEBHOOK_CONCURRENCY: '4' } });
    const slow = await startReceiver(async () => {
      await delay(100);
      return { status: 200 };
    });
    const healthy = await startReceiver();
    try {
      const a = await t.createMerchant();
      const b = await t.createMerchant();
      // 80 older deliveries over 8 webhooks, each answered in 100 ms, four at a time: two
      // seconds of work ahead of the other merchant's one delivery.
      for (let i = 0; i < 8; i++) {
        const w = await register(t, a, `${slow.url}/${i}`);
        for (let j = 0; j < 10; j++) await sendTest(t, a, w);
      }
      await sendTest(t, b, await register(t, b, healthy.url));
      const { run } = await otherArrivesPromptly(t, healthy);
      assert.ok(slow.received.length < 40, `it came before most of the backlog (${slow.received.length} of 80 sent)`);
      await run;
      assert.deepEqual(
        [...(await deliveriesOf(t, a)), ...(await deliveriesOf(t, b))].map((r) => r.state),
        Array(81).fill('succeeded'),
      );
    } finally {
      await t.close();
      await Promise.all([slow.close(), healthy.close()]);
    }
  });

  test("deliveries are claimed ahead of free slots: eight times a merchant's slots in one claim, each attempted once", async () => {
    const t = await createTestApp({
      clock: ownClock(),
      env: { ...LOCAL_RECEIVERS, WEBHOOK_MERCHANT_CONCURRENCY: '2' },
    });
    const rx = await startReceiver();
    const m = await t.createMerchant();
    try {
      await withClaimLog(t, async (claims) => {
        const w = await register(t, m, rx.url);
        for (let i = 0; i < 24; i++) await sendTest(t, m, w);
        assert.equal(await t.ctx.webhooks.runOnce(), 24);
        assert.equal(rx.received.length, 24);
        assert.deepEqual(
          (await deliveriesOf(t, m)).map((r) => [r.state, r.attempt_count, r.attempts]),
          Array(24).fill(['succeeded', 1, 1]),
        );
        // Two slots, sixteen held (in flight and queued): claiming only for free slots would take
        // two at a time.
        assert.equal(Math.max(...(await claims(m))), 16, "the first claim takes eight times the merchant's two slots");
      });
    } finally {
      await t.close();
      await rx.close();
    }
  });

  test('a claimed delivery that cannot start within its queue budget goes back unattempted, its attempt number restored', async () => {
    const t = await createTestApp({
      clock: ownClock(),
      env: { ...LOCAL_RECEIVERS, WEBHOOK_MERCHANT_CONCURRENCY: '1', WEBHOOK_TIMEOUT_MS: '10000' },
    });
    let answerFirst!: () => void;
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    const rx = await startReceiver(async (_r, index) => {
      if (index === 0) await firstAnswered;
      return { status: 200 };
    });
    const m = await t.createMerchant();
    try {
      await withClaimLog(t, async (claims) => {
        const w = await register(t, m, rx.url);
        for (let i = 0; i < 8; i++) await sendTest(t, m, w);
        const run = t.ctx.webhooks.runOnce();
        // The merchant's one slot is held by the first attempt while the other seven wait in the
        // queue past their budget (5 s: less than the 10 s timeout).
        await rx.waitFor(1, 10_000);
        t.clock.advance(5_001);
        answerFirst();
        assert.equal(await run, 8);
        assert.deepEqual(
          (await deliveriesOf(t, m)).map((r) => [r.state, r.attempt_count, r.attempts]),
          Array(8).fill(['succeeded', 1, 1]),
        );
        assert.deepEqual(await claims(m), [8, 7], 'the seven went back and were claimed again');
      });
    } finally {
      await t.close();
      await rx.close();
    }
  });

  test('connecting has its own short timeout, apart from the answer timeout', async () => {
    // Accepts connections and never answers the TLS handshake: connecting never completes.
    const sockets = new Set<Socket>();
    const silent = createTcpServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const t = await createTestApp({
      clock: ownClock(),
      env: { ...LOCAL_RECEIVERS, WEBHOOK_CONNECT_TIMEOUT_MS: '300', WEBHOOK_TIMEOUT_MS: '5000' },
      webhookIsPublicAddress: loopbackIsPublic,
    });
    try {
      const m = await t.createMerchant();
      const eventId = await sendTest(
        t,
        m,
        await register(t, m, `https://127.0.0.1:${(silent.address() as { port: number }).port}/hooks`),
      );
      const start = Date.now();
      await t.ctx.webhooks.runOnce();
      assert.ok(Date.now() - start < 2_000, `the attempt took ${Date.now() - start} ms`);
      const [attempt] = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: m })).body.data.attributes
        .deliveries[0].attempts;
      assert.equal(attempt.error, 'could not connect within 300 ms');
      assert.equal(attempt.statusCode, null);
    } finally {
      await t.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  test('a timeout that fires because this process stood still trips no breaker and counts as no attempt: the delivery goes out', async () => {
    const t = await createTestApp({
      clock: ownClock(),
      // One failure would open the breaker.
      env: {
        ...LOCAL_RECEIVERS,
        WEBHOOK_CONNECT_TIMEOUT_MS: '100',
        WEBHOOK_TIMEOUT_MS: '300',
        WEBHOOK_BREAKER_FAILURES: '1',
      },
      webhookIsPublicAddress: loopbackIsPublic,
    });
    // A healthy receiver in this very process: its first request freezes the process's event
    // loop (Coffer's too) for longer than both timeouts, as a SIGSTOP would; then it answers.
    const rx = await startReceiver((_r, index) => {
      if (index === 0) for (const until = performance.now() + 1_500; performance.now() < until; );
      return { status: 200 };
    });
    try {
      const m = await t.createMerchant();
      const w = await register(t, m, rx.url);
      const eventId = await sendTest(t, m, w);
      await t.ctx.webhooks.runOnce();
      let rows = await deliveriesOf(t, m);
      assert.deepEqual(
        rows.map((r) => [r.state, r.attempt_count, r.attempts]),
        [['succeeded', 1, 1]],
        'delivered, and the attempt cut short by the freeze is not on record',
      );
      const [attempt] = (await t.request('GET', `/api/v1/webhook-events/${eventId}`, { as: m })).body.data.attributes
        .deliveries[0].attempts;
      assert.deepEqual([attempt.statusCode, attempt.error], [200, null]);
      assert.equal(rx.received.length, 2, 'sent again at once (the receiver dedupes on webhook-id)');
      assert.equal(rx.received[1]!.headers['webhook-id'], rx.received[0]!.headers['webhook-id']);
      // The breaker stayed closed: the next event goes out at once.
      await sendTest(t, m, w);
      assert.equal(await t.ctx.webhooks.runOnce(), 1);
      rows = await deliveriesOf(t, m);
      assert.deepEqual(
        rows.map((r) => r.state),
        ['succeeded', 'succeeded'],
      );
    } finally {
      await t.close();
      await rx.close();
    }
  });

  test("a host's breaker holds its deliveries after consecutive failures, then lets one probe through", async () => {
    const cooldownMs = 60_000;
    const t = await createTestApp({
      clock: ownClock(),
      env: { ...LOCAL_RECEIVERS, WEBHOOK_BREAKER_FAILURES: '3', WEBHOOK_BREAKER_COOLDOWN_MS: String(cooldownMs) },
    });
    const port = await freePort(); // nothing listens yet: connections are refused
    const url = `http://127.0.0.1:${port}/hooks`;
    let rx: Receiver | undefined;
    try {
      const m = await t.createMerchant();
      const w1 = await register(t, m, `${url}/1`);
      const w2 = await register(t, m, `${url}/2`);
      // Three failures in a row (w1's three deliveries) open the breaker.
      for (let i = 0; i < 3; i++) await sendTest(t, m, w1);
      assert.equal(await t.ctx.webhooks.runOnce(), 3);
      const openedAt = t.clock.now().getTime();
      // Now every delivery of this merchant to that host is held: w1's retries and new events
      // to both webhooks. Another merchant's webhook on the same host has its own breaker.
      await sendTest(t, m, w1);
      await sendTest(t, m, w2);
      await sendTest(t, m, w2);
      const other = await t.createMerchant();
      await sendTest(t, other, await register(t, other, url));
      assert.equal(await t.ctx.webhooks.runOnce(), 1, "only the other merchant's attempt while the breaker is open");
      let rows = await deliveriesOf(t, m);
      assert.equal(rows.length, 6);
      assert.ok(
        rows.every((r) => r.state === 'pending'),
        'held, not failed',
      );
      assert.ok(
        rows.every((r) => r.next_attempt_at.getTime() === openedAt + cooldownMs),
        `rescheduled to the end of the cool-down: ${JSON.stringify(rows)} ${openedAt}`,
      );
      assert.deepEqual(
        rows.map((r) => [r.attempt_count, r.attempts]),
        [
          [1, 1],
          [1, 1],
          [1, 1],
          [0, 0],
          [0, 0],
          [0, 0],
        ],
      );
      // After the cool-down one probe goes; it fails, and the breaker opens again.
      t.clock.advance(cooldownMs);
      assert.equal(await t.ctx.webhooks.runOnce(), 2, "one probe, and the other merchant's retry");
      rows = await deliveriesOf(t, m);
      assert.equal(
        rows.reduce((n, r) => n + r.attempts, 0),
        4,
      );
      assert.ok(
        rows.every((r) => r.next_attempt_at.getTime() >= openedAt + 2 * cooldownMs),
        'held for another cool-down',
      );
      assert.equal(await t.ctx.webhooks.runOnce(), 0);
      // The host comes back: the probe succeeds and everything held is delivered.
      rx = await startReceiver(undefined, port);
      t.clock.advance(cooldownMs);
      assert.equal(await t.ctx.webhooks.runOnce(), 7);
      rows = await deliveriesOf(t, m);
      assert.ok(rows.every((r) => r.state === 'succeeded'));
      assert.equal(rx.received.length, 7);
    } finally {
      await t.close();
      await rx?.close();
    }
  });
});
