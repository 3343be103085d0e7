// Retention (EVENT_RETENTION_DAYS) by weekly partitions: the event-retention job creates the
// weeks ahead and drops the weeks past the retention, events, deliveries and attempts together;
// an event with a delivery still pending stays (in the default partition) until it ends; rows
// that landed in the default partition move into their week when it is created.
//
// The weeks are the ids' times and ids carry the real clock's time, so the job is run here "as
// if" later (maintainEventPartitions with a later now), or given rows with ids of another time.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { rowsOf, type Database } from '../../db/open.ts';
import { kycApplication as application, webhookBody } from '../../test/fixtures.ts';
import {
  createTestApp,
  createUser,
  dbKind,
  ownDatabase,
  LOCAL_RECEIVERS,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import { uuidv7At } from '../../test/ids.ts';
import { eventWeeks, maintainEventPartitions, weekOf, WEEKS_AHEAD } from './partitions.ts';

const DAY = 86_400_000;
const RETENTION_DAYS = 10;

describe('event retention', () => {
  let t: TestApp;
  let database: Database;
  let url: string | undefined;
  // A database of its own: the job drops and recreates this week's partitions, which would take
  // the other tests' events with them in the suite's shared database.
  before(async () => {
    ({ database, url } = await ownDatabase());
    t = await createTestApp({
      database,
      env: { ...LOCAL_RECEIVERS, EVENT_RETENTION_DAYS: String(RETENTION_DAYS), WEBHOOK_RETRY_DELAYS: '60,60' },
    });
  });
  after(async () => {
    await t.close();
    await database.close();
  });

  /** A user through KYC: the decision's events. */
  async function someEvents(as: Merchant): Promise<void> {
    const u = await createUser(t, as);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as });
    assert.equal(
      (
        await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
          as,
          body: application(`r${randomUUID()}@example.com`),
        })
      ).status,
      200,
    );
    t.clock.advance(500);
    await t.ctx.jobs.runOnce('kyc-decisions');
  }
  const eventIds = async (as: Merchant) =>
    ((await t.request('GET', '/api/v1/webhook-events?page[limit]=100', { as })).body.data as { id: string }[]).map(
      (e) => e.id,
    );
  /** The list's meta.total, which comes from the list counters (a dropped week must leave them too). */
  const listTotal = async (as: Merchant) =>
    (await t.request('GET', '/api/v1/webhook-events?page[limit]=1', { as })).body.meta.total as number;
  /** The job's run as if at real time + `laterMs`. */
  const retainAt = (laterMs: number) =>
    maintainEventPartitions(t.ctx.db, { now: new Date(Date.now() + laterMs), retentionDays: RETENTION_DAYS });
  const count = async (table: string) =>
    rowsOf<{ n: number }>(await t.ctx.db.execute(sql.raw(`select count(*)::int as n from ${table}`)))[0]!.n;
  const day = (d: Date) => d.toISOString().slice(0, 10);

  test('the job creates this week and the weeks ahead', async () => {
    await t.ctx.jobs.runOnce('event-retention');
    const weeks = (await eventWeeks(t.ctx.db)).map(day);
    for (let w = 0; w <= WEEKS_AHEAD; w++)
      assert.ok(weeks.includes(day(weekOf(new Date(Date.now() + w * 7 * DAY)))), `week ${w} ahead`);
  });

  test('a week past the retention is dropped with its deliveries and attempts; events still being delivered stay until they end', async () => {
    const quiet = await t.createMerchant(); // no webhook: events only
    const busy = await t.createMerchant(); // a receiver that never answers: deliveries pending, attempts made
    const hook = await t.request('POST', '/api/v1/webhooks', {
      as: busy,
      body: webhookBody({ url: 'http://127.0.0.1:9/closed' }),
    });
    assert.equal(hook.status, 201, hook.raw);
    await someEvents(quiet);
    await someEvents(busy);
    await t.ctx.webhooks.runOnce(); // one failed attempt each; the deliveries stay pending
    const old = { quiet: await eventIds(quiet), busy: await eventIds(busy) };
    assert.ok(old.quiet.length > 0 && old.busy.length > 0);
    const thisWeek = day(weekOf(new Date()));
    assert.deepEqual([await listTotal(quiet), await listTotal(busy)], [old.quiet.length, old.busy.length]);

    let run = await retainAt(RETENTION_DAYS * DAY - DAY);
    assert.equal(run.dropped, 0);
    assert.deepEqual(await eventIds(quiet), old.quiet, 'within the retention, nothing goes');

    // A week and the retention later, this whole week is past it.
    run = await retainAt((RETENTION_DAYS + 8) * DAY);
    assert.ok(run.dropped >= 1);
    assert.equal(run.kept, old.busy.length);
    assert.ok(!(await eventWeeks(t.ctx.db)).map(day).includes(thisWeek), 'the week is dropped');
    assert.deepEqual(await eventIds(quiet), []);
    assert.equal(await listTotal(quiet), 0, 'the dropped week left the list total');
    assert.equal(await listTotal(busy), old.busy.length, 'the kept events still count, once');
    assert.equal((await t.request('GET', `/api/v1/webhook-events/${old.quiet[0]}`, { as: quiet })).status, 404);
    assert.deepEqual((await eventIds(busy)).sort(), [...old.busy].sort(), 'events with a delivery still pending stay');
    const kept = await t.request('GET', `/api/v1/webhook-events/${old.busy[0]}`, { as: busy });
    assert.equal(kept.status, 200);
    assert.equal(kept.body.data.attributes.deliveryState, 'pending');
    assert.equal(await count('events_default'), old.busy.length, 'kept in the default partition');
    assert.ok((await count('delivery_attempts_default')) >= old.busy.length, 'with their attempts');
    // Still delivered from there: the next attempt is claimed and recorded.
    t.clock.advance(120_000);
    await t.ctx.webhooks.runOnce();
    assert.ok((await count('delivery_attempts_default')) >= 2 * old.busy.length, 'a second attempt each');

    // Emptying the url cancels the pending deliveries; then the kept events go, attempts and all.
    assert.equal(
      (
        await t.request('PATCH', `/api/v1/webhooks/${hook.body.data.id}`, {
          as: busy,
          body: { data: { type: 'Webhook', attributes: { url: '' } } },
        })
      ).status,
      200,
    );
    run = await retainAt((RETENTION_DAYS + 8) * DAY);
    assert.equal(run.deleted, old.busy.length);
    assert.deepEqual(await eventIds(busy), []);
    assert.equal(await listTotal(busy), 0, 'events deleted from the default partition leave the list total');
    assert.deepEqual(
      [
        await count('events_default'),
        await count('event_deliveries_default'),
        await count('delivery_attempts_default'),
      ],
      [0, 0, 0],
    );
  });

  test('rows in the default partition move into their week when it is created', async () => {
    // This week was dropped above: new events land in the default partition until it is back.
    const as = await t.createMerchant();
    const hook = await t.request('POST', '/api/v1/webhooks', {
      as,
      body: webhookBody({ url: 'http://127.0.0.1:9/closed' }),
    });
    assert.equal(hook.status, 201, hook.raw);
    await someEvents(as);
    await t.ctx.webhooks.runOnce();
    const ids = await eventIds(as);
    assert.equal(await count('events_default'), ids.length);
    // And a row of a week within the retention that has no partition (as if the job had not
    // run then), with a delivery and an attempt.
    const early = uuidv7At(Date.now() - 3 * 7 * DAY);
    const earlyWeek = day(weekOf(new Date(Date.now() - 3 * 7 * DAY)));
    await t.ctx.db.execute(
      sql.raw(
        `drop table if exists events_p${earlyWeek.replaceAll('-', '')}, event_deliveries_p${earlyWeek.replaceAll('-', '')}, delivery_attempts_p${earlyWeek.replaceAll('-', '')}`,
      ),
    );
    const delivery = uuidv7At(Date.now());
    await t.ctx.db.execute(
      sql`insert into events (id, client_id, topic, resource_type, resource_id, body) values (${early}, ${as.clientId}, 'TransactionCleared', 'Transaction', 't', '{}')`,
    );
    await t.ctx.db.execute(sql`insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, next_attempt_at, completed_at)
      values (${delivery}, ${as.clientId}, ${early}, ${hook.body.data.id}, 'event', 'succeeded', now(), now())`);
    await t.ctx.db.execute(sql`insert into delivery_attempts (id, client_id, delivery_id, event_id, attempt, started_at, duration_ms, status_code)
      values (${uuidv7At(Date.now())}, ${as.clientId}, ${delivery}, ${early}, 1, now(), 5, 200)`);

    const run = await maintainEventPartitions(t.ctx.db, { now: new Date(), retentionDays: 30 });
    assert.ok(run.created >= 2, 'this week and the early one');
    const weeks = (await eventWeeks(t.ctx.db)).map(day);
    assert.ok(weeks.includes(day(weekOf(new Date()))) && weeks.includes(earlyWeek));
    assert.deepEqual(
      [
        await count('events_default'),
        await count('event_deliveries_default'),
        await count('delivery_attempts_default'),
      ],
      [0, 0, 0],
    );
    assert.deepEqual((await eventIds(as)).sort(), [...ids, early].sort(), 'every event is still there');
    const e = await t.request('GET', `/api/v1/webhook-events/${early}`, { as });
    assert.equal(e.status, 200);
    assert.equal(e.body.data.attributes.deliveryState, 'succeeded');
    // Deliveries still work from the new week's partition.
    t.clock.advance(120_000);
    const before = await count('delivery_attempts');
    await t.ctx.webhooks.runOnce();
    assert.ok((await count('delivery_attempts')) > before);
  });

  test('a drop waits at most its lock timeout for a reader of the week, then tries again on the next run', {
    skip: dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)',
  }, async () => {
    await maintainEventPartitions(t.ctx.db, { now: new Date(), retentionDays: RETENTION_DAYS });
    const as = await t.createMerchant();
    await someEvents(as);
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    try {
      await reader.query('begin');
      await reader.query('select count(*) from events'); // holds every partition of events until commit
      const started = Date.now();
      let run = await retainAt((RETENTION_DAYS + 8) * DAY);
      assert.equal(run.dropped, 0, 'the week is in use');
      assert.ok(Date.now() - started < 5_000);
      assert.ok((await eventIds(as)).length > 0, 'requests go on meanwhile');
      await reader.query('commit');
      run = await retainAt((RETENTION_DAYS + 8) * DAY);
      assert.ok(run.dropped >= 1);
      assert.deepEqual(await eventIds(as), []);
    } finally {
      await reader.end();
    }
  });

  test('creating a week that has begun holds the inserts in flight until it commits, then they go to the new week (none fails its partition constraint)', {
    skip: dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)',
  }, async () => {
    const week = day(weekOf(new Date()));
    await t.ctx.db.execute(sql`select drop_event_partitions(${week}::date)`); // as if no worker had run for weeks
    const job = new pg.Client({ connectionString: url });
    const writer = new pg.Client({ connectionString: url });
    await job.connect();
    await writer.connect();
    try {
      await job.query('begin');
      await job.query('select create_event_partitions($1::date)', [week]);
      const id = uuidv7At(Date.now());
      const insert = writer.query(
        `insert into events (id, client_id, topic, resource_type, resource_id, body) values ($1, $2, 'X', 'T', 't', '{}')`,
        [id, randomUUID()],
      );
      await new Promise((r) => setTimeout(r, 200));
      await job.query('commit');
      await insert;
      const [row] = (await job.query('select tableoid::regclass::text as t from events where id = $1', [id])).rows;
      assert.equal(row?.t, `events_p${week.replaceAll('-', '')}`);
    } finally {
      await job.end();
      await writer.end();
    }
  });

  test('an event held by a replay in flight is not deleted from the default partition until the replay ends', {
    skip: dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)',
  }, async () => {
    await maintainEventPartitions(t.ctx.db, { now: new Date(), retentionDays: RETENTION_DAYS });
    const as = await t.createMerchant();
    const hook = await t.request('POST', '/api/v1/webhooks', {
      as,
      body: webhookBody({ url: 'http://127.0.0.1:9/closed' }),
    });
    await someEvents(as);
    const ids = await eventIds(as);
    assert.ok(ids.length >= 2);
    assert.ok(
      (await retainAt((RETENTION_DAYS + 8) * DAY)).kept >= ids.length,
      'pending: kept in the default partition',
    );
    assert.equal(
      (
        await t.request('PATCH', `/api/v1/webhooks/${hook.body.data.id}`, {
          as,
          body: { data: { type: 'Webhook', attributes: { url: '' } } },
        })
      ).status,
      200,
    );
    const replay = new pg.Client({ connectionString: url });
    await replay.connect();
    try {
      await replay.query('begin');
      await replay.query('select 1 from events where id = $1 for key share', [ids[0]]); // what replayEvent takes first
      assert.equal((await retainAt((RETENTION_DAYS + 8) * DAY)).deleted, ids.length - 1);
      assert.equal((await t.request('GET', `/api/v1/webhook-events/${ids[0]}`, { as })).status, 200);
      await replay.query('commit');
      assert.equal((await retainAt((RETENTION_DAYS + 8) * DAY)).deleted, 1);
      assert.deepEqual(await eventIds(as), []);
    } finally {
      await replay.end();
    }
  });

  test('a retention no longer than the webhook retry schedule is refused at start', async () => {
    await assert.rejects(
      createTestApp({ env: { EVENT_RETENTION_DAYS: '2' } }),
      /EVENT_RETENTION_DAYS must be longer than the webhook retry schedule \(3 days\)/,
    );
  });
});
