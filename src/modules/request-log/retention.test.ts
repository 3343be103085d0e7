// The request log's retention (REQUEST_LOG_RETENTION_DAYS) by weekly partitions: the
// request-log-retention job creates the weeks ahead, drops the weeks wholly past the retention
// with the requests in them, and deletes the old rows of the default partition, oldest first; a
// row that landed in the default partition moves into its week when the week is created.
//
// The weeks are the ids' times and ids carry the real clock's time, so the job is run here "as
// if" later (maintainRequestLog with a later now), or given rows with ids of another time.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, type Database } from '../../db/open.ts';
import { isoDate, partitionWeeks, weekOf, WEEKS_AHEAD } from '../../db/weeks.ts';
import { createTestApp, ownDatabase, type Merchant, type TestApp } from '../../test/harness.ts';
import { uuidv7At } from '../../test/ids.ts';
import { maintainRequestLog } from './retention.ts';
import { insertRequestRows, purgeDefaultRequestRows, type RequestLogRow } from './sql.ts';

const DAY = 86_400_000;
const RETENTION_DAYS = 10;

describe('request log retention', () => {
  let t: TestApp;
  let database: Database;
  // A database of its own: the job drops this week's partition, which would take the other
  // tests' requests with it in the suite's shared database.
  before(async () => {
    ({ database } = await ownDatabase());
    t = await createTestApp({ database, env: { REQUEST_LOG_RETENTION_DAYS: String(RETENTION_DAYS) } });
  });
  after(async () => {
    await t.close();
    await database.close();
  });

  /** A few API requests of the merchant, written to the log. */
  async function someRequests(as: Merchant): Promise<void> {
    for (let i = 0; i < 3; i++) assert.equal((await t.request('GET', '/api/v1/users', { as })).status, 200);
    await t.ctx.jobs.runOnce('request-log-flush');
  }
  /** The merchant's logged requests and the partitions holding them. */
  const logged = async (as: Merchant) =>
    rowsOf<{ id: string; part: string }>(
      await t.ctx.db.execute(
        sql`select id::text as id, tableoid::regclass::text as part from request_log where client_id = ${as.clientId} order by id`,
      ),
    );
  const partitionOf = (at: Date) => `request_log_p${isoDate(weekOf(at)).replaceAll('-', '')}`;
  /** The job's run as if at real time + `laterMs`. */
  const retainAt = (laterMs: number) =>
    maintainRequestLog(t.ctx.db, { now: new Date(Date.now() + laterMs), retentionDays: RETENTION_DAYS });
  const defaultCount = async () =>
    rowsOf<{ n: number }>(await t.ctx.db.execute(sql`select count(*)::int as n from request_log_default`))[0]!.n;
  const row = (id: string, as: Merchant): RequestLogRow => ({
    id,
    clientId: as.clientId,
    requestId: 'r',
    method: 'GET',
    route: '/api/v1/users',
    path: '/api/v1/users',
    status: 200,
    durationMs: 1,
    idempotencyKey: null,
    body: null,
    createdAt: new Date(),
  });

  test('the job creates this week and the weeks ahead; requests land in their week', async () => {
    await t.ctx.jobs.runOnce('request-log-retention');
    const weeks = (await partitionWeeks(t.ctx.db, 'request_log')).map(isoDate);
    for (let w = 0; w <= WEEKS_AHEAD; w++)
      assert.ok(weeks.includes(isoDate(weekOf(new Date(Date.now() + w * 7 * DAY)))), `week ${w} ahead`);
    const as = await t.createMerchant();
    await someRequests(as);
    const rows = await logged(as);
    assert.equal(rows.length, 3);
    for (const r of rows) assert.equal(r.part, partitionOf(new Date()));
  });

  test('a week wholly past the retention is dropped with its requests; nothing goes before', async () => {
    const as = await t.createMerchant();
    await someRequests(as);
    const before = await logged(as);
    assert.equal(before.length, 3);

    let run = await retainAt((RETENTION_DAYS - 1) * DAY);
    assert.equal(run.dropped, 0);
    assert.deepEqual(await logged(as), before, 'within the retention, nothing goes');

    // A week and the retention later, this whole week is past it.
    run = await retainAt((RETENTION_DAYS + 8) * DAY);
    assert.ok(run.dropped >= 1);
    assert.ok(
      !(await partitionWeeks(t.ctx.db, 'request_log')).map(isoDate).includes(isoDate(weekOf(new Date()))),
      'the week is dropped',
    );
    assert.deepEqual(await logged(as), []);
    // Requests are still recorded: with this week gone, a new one lands in the default partition.
    assert.equal((await t.request('GET', '/api/v1/users', { as })).status, 200);
    await t.ctx.jobs.runOnce('request-log-flush');
    assert.deepEqual(
      (await logged(as)).map((r) => r.part),
      ['request_log_default'],
    );
    assert.equal(await defaultCount(), 1);
  });

  test('rows in the default partition move into their week when it is created', async () => {
    // This week was dropped above: the request of the last test waits in the default partition.
    // And a row of a week within the retention that has no partition (as if the job had not run then).
    const as = await t.createMerchant();
    const earlyAt = new Date(Date.now() - 7 * DAY);
    await t.ctx.db.execute(sql.raw(`drop table if exists ${partitionOf(earlyAt)}`));
    const early = uuidv7At(earlyAt.getTime());
    await insertRequestRows(t.ctx.db, [row(early, as)]);
    assert.equal(await defaultCount(), 2);

    const run = await maintainRequestLog(t.ctx.db, { now: new Date(), retentionDays: RETENTION_DAYS });
    assert.ok(run.created >= 2, 'this week and the early one');
    assert.equal(await defaultCount(), 0);
    assert.deepEqual(await logged(as), [{ id: early, part: partitionOf(earlyAt) }]);
  });

  test('rows of the default partition older than the retention go, oldest first, a batch at a time; younger ones stay', async () => {
    // Dated 1990, when no week exists: they stay in the default partition.
    const as = await t.createMerchant();
    const at = (day: number) => Date.UTC(1990, 0, day);
    const ids = new Map([3, 1, 4, 2, 9].map((d) => [uuidv7At(at(d)), d]));
    await insertRequestRows(
      t.ctx.db,
      [...ids.keys()].map((id) => row(id, as)),
    );
    const left = async () => (await logged(as)).map((r) => ids.get(r.id));
    // Cut on the 5th: 1, 2, 3 and 4 go, 9 stays.
    const purge = () => purgeDefaultRequestRows(t.ctx.db, new Date(at(5)), 3);
    assert.equal(await purge(), 3);
    assert.deepEqual(await left(), [4, 9], 'the three oldest went first');
    assert.equal(await purge(), 1);
    assert.equal(await purge(), 0);
    assert.deepEqual(await left(), [9]);
    // The job deletes them too (a week that began in 1990 is wholly past any retention).
    assert.equal((await maintainRequestLog(t.ctx.db, { now: new Date(), retentionDays: RETENTION_DAYS })).deleted, 1);
    assert.deepEqual(await left(), []);
  });
});
