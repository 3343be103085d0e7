// The append-only logs are analyzed from a small sample (migration 0028): every column of
// events, event_deliveries, delivery_attempts, request_log and idempotency_keys has a statistics
// target of 10, on each partition too, those the weekly jobs make later included, while the
// tables the API lists filter keep PostgreSQL's default. So has the one expression in their
// indexes, the request log's status class (migration 0029): ANALYZE samples for the largest
// target of a table's columns and its indexes' expressions.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { maintainEventPartitions } from '../modules/events/partitions.ts';
import { maintainRequestLog } from '../modules/request-log/retention.ts';
import { createTestApp, ownDatabase, type TestApp } from '../test/harness.ts';
import { uuidv7At } from '../test/ids.ts';
import { rowsOf, type Database } from './open.ts';

const LEAN = ['events', 'event_deliveries', 'delivery_attempts', 'request_log', 'idempotency_keys'];
const DAY = 86_400_000;

describe('statistics targets', () => {
  let t: TestApp;
  let database: Database;
  // A database of its own: the test makes weeks far ahead, which the suite's shared database
  // would keep.
  before(async () => {
    ({ database } = await ownDatabase());
    t = await createTestApp({ database });
  });
  after(async () => {
    await t.close();
    await database.close();
  });

  /** Each table (a partition named as its own) with the targets of its columns, -1 or null read as the default. */
  async function targets(tables: string[]): Promise<Map<string, number[]>> {
    const rows = rowsOf<{ rel: string; target: number | null }>(
      await t.ctx.db.execute(sql`select c.relname as rel, a.attstattarget as target
        from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where c.relname = any(string_to_array(${tables.join(',')}, ','))
           or c.oid in (select inhrelid from pg_inherits where inhparent in (select oid from pg_class where relname = any(string_to_array(${tables.join(',')}, ','))))`),
    );
    const out = new Map<string, number[]>();
    for (const r of rows)
      out.set(r.rel, [...(out.get(r.rel) ?? []), r.target === null || r.target < 0 ? 100 : Number(r.target)]);
    return out;
  }

  /** The target of the request log's status-class expression on its index and on each partition's (-1 or null read as the default). */
  async function classTargets(): Promise<Map<string, number>> {
    const rows = rowsOf<{ idx: string; target: number | null }>(
      await t.ctx.db.execute(sql`select c.relname as idx, a.attstattarget as target from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum = 2
        where c.relname = 'request_log_client_class_idx' or c.oid in (select inhrelid from pg_inherits where inhparent = 'request_log_client_class_idx'::regclass)`),
    );
    return new Map(rows.map((r) => [r.idx, r.target === null || r.target < 0 ? 100 : Number(r.target)]));
  }

  test('every column of the five logs and of each of their partitions has a target of 10; the listed tables keep the default', async () => {
    const lean = await targets(LEAN);
    for (const table of LEAN) assert.ok(lean.has(table), table);
    assert.ok(
      [...lean.keys()].some((r) => /^events_p\d{8}$/.test(r)) && lean.has('request_log_default'),
      'partitions are read too',
    );
    for (const [rel, ts] of lean) assert.deepEqual(new Set(ts), new Set([10]), rel);
    const classes = await classTargets();
    assert.ok(
      classes.has('request_log_client_class_idx') && classes.size > 1,
      `the index and its partitions' (${[...classes.keys()]})`,
    );
    for (const [idx, target] of classes) assert.equal(target, 10, idx);
    for (const [rel, ts] of await targets([
      'users',
      'wallets',
      'payments',
      'payment_intents',
      'transactions',
      'ledger_postings',
    ])) {
      assert.deepEqual(new Set(ts), new Set([100]), rel);
    }
  });

  test('the weeks the jobs make later take the targets, and an ANALYZE of one keeps at most 11 histogram bounds', async () => {
    const later = new Date(Date.now() + 70 * DAY);
    const weeksBefore = new Set((await targets(LEAN)).keys());
    await maintainEventPartitions(t.ctx.db, { now: later, retentionDays: 400 });
    await maintainRequestLog(t.ctx.db, { now: later, retentionDays: 400 });
    const made = [...(await targets(LEAN))].filter(([rel]) => !weeksBefore.has(rel));
    for (const prefix of ['events_p', 'event_deliveries_p', 'delivery_attempts_p', 'request_log_p']) {
      assert.ok(
        made.some(([rel]) => rel.startsWith(prefix)),
        `a new ${prefix}… week`,
      );
    }
    for (const [rel, ts] of made) assert.deepEqual(new Set(ts), new Set([10]), rel);
    const classes = await classTargets();
    const newIndexes = [...classes.keys()].filter((idx) =>
      made.some(([rel]) => rel.startsWith('request_log_p') && idx.startsWith(`${rel}_`)),
    );
    assert.ok(newIndexes.length > 0, 'the new weeks of the request log have the index');
    for (const idx of newIndexes) assert.equal(classes.get(idx), 10, idx);

    // 500 requests in that week with 500 distinct durations: a target of 100 would keep 101 bounds.
    const client = randomUUID();
    const ids = Array.from({ length: 500 }, (_, i) => uuidv7At(later.getTime() + i));
    await t.ctx.db.execute(sql`insert into request_log (id, client_id, request_id, method, route, path, status, duration_ms, body)
      select id, ${client}::uuid, 'r' || n, 'GET', '/api/v1/users', '/api/v1/users', 200, n, null
      from unnest(string_to_array(${ids.join(',')}, ',')::uuid[]) with ordinality as x(id, n)`);
    const [{ part }] = rowsOf<{ part: string }>(
      await t.ctx.db.execute(
        sql`select tableoid::regclass::text as part from request_log where client_id = ${client}::uuid limit 1`,
      ),
    ) as [{ part: string }];
    assert.match(part, /^request_log_p\d{8}$/);
    await t.ctx.db.execute(sql.raw(`analyze ${part}`));
    const [stats] = rowsOf<{ bounds: number }>(
      await t.ctx.db.execute(
        sql`select array_length(histogram_bounds::text::text[], 1) as bounds from pg_stats where tablename = ${part} and attname = 'duration_ms'`,
      ),
    );
    assert.ok(stats && Number(stats.bounds) >= 2 && Number(stats.bounds) <= 11, `histogram bounds: ${stats?.bounds}`);
  });
});
