// The migration that partitions the request log by week (migration 0025): a database migrated up
// to the one before it, holding requests of several weeks, is migrated the rest of the way; every
// row is kept, each in its week's partition, the weeks ahead exist, and the indexes are the
// console's (the created_at index the retention's delete read is gone).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from '../../db/open.ts';
import { isoDate, weekOf } from '../../db/weeks.ts';
import { migrationTestDatabase } from '../../test/migrations.ts';
import { uuidv7At } from '../../test/ids.ts';

const DAY = 86_400_000;

const scratch = migrationTestDatabase('request-log-partitions');

test('the request log moves with its rows into weekly partitions', async () => {
  await scratch.upTo(/_partitioned_request_log$/);
  const db = scratch.database.db;
  const client = randomUUID();
  const now = Date.now();
  const requests = { old: uuidv7At(now - 20 * DAY), recent: uuidv7At(now - DAY), now: uuidv7At(now) };
  for (const [name, id] of Object.entries(requests)) {
    await db.execute(sql`insert into request_log (id, client_id, request_id, method, route, path, status, duration_ms, body)
      values (${id}, ${client}, ${name}, 'POST', '/api/v1/users', '/api/v1/users', 201, 3, '{"a":1}')`);
  }

  await runMigrations(scratch.database);

  const week = (ms: number) => isoDate(weekOf(new Date(ms))).replaceAll('-', '');
  const rows = rowsOf<{ id: string; request_id: string; part: string; body: string }>(
    await db.execute(
      sql`select id::text as id, request_id, tableoid::regclass::text as part, body from request_log order by id`,
    ),
  );
  assert.deepEqual(
    rows.map((r) => [r.request_id, r.part]),
    [
      ['old', `request_log_p${week(now - 20 * DAY)}`],
      ['recent', `request_log_p${week(now - DAY)}`],
      ['now', `request_log_p${week(now)}`],
    ],
  );
  assert.ok(
    rows.every((r) => r.body === '{"a":1}'),
    'the rows are whole',
  );
  for (let w = 0; w <= 2; w++) {
    const [r] = rowsOf<{ t: string | null }>(
      await db.execute(sql.raw(`select to_regclass('request_log_p${week(now + w * 7 * DAY)}')::text as t`)),
    );
    assert.ok(r?.t, `week ${w} ahead`);
  }
  const indexes = rowsOf<{ n: string }>(
    await db.execute(sql`select indexname as n from pg_indexes where tablename = 'request_log' order by 1`),
  ).map((r) => r.n);
  assert.deepEqual(indexes, [
    'request_log_client_class_idx',
    'request_log_client_idx',
    'request_log_client_method_idx',
    'request_log_client_path_idx',
    'request_log_pkey',
  ]);
  // A write after the migration finds its week.
  const id = uuidv7At(Date.now());
  await db.execute(
    sql`insert into request_log (id, client_id, request_id, method, route, path, status, duration_ms) values (${id}, ${client}, 'after', 'GET', '/', '/', 200, 1)`,
  );
  const [after] = rowsOf<{ part: string }>(
    await db.execute(sql`select tableoid::regclass::text as part from request_log where id = ${id}`),
  );
  assert.equal(after?.part, `request_log_p${week(Date.now())}`);
});
