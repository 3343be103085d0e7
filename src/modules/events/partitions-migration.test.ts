// The migration that partitions events, deliveries and attempts by week (migration 0020): a
// database migrated up to the one before it, holding events of several weeks with their
// deliveries and attempts, is migrated the rest of the way; every row is kept, each in its
// week's partition (an id that is not a UUIDv7 in the default one), and the claim's function
// gives each due delivery's event.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from '../../db/open.ts';
import { migrationTestDatabase } from '../../test/migrations.ts';
import { uuidv7At } from '../../test/ids.ts';
import { weekOf } from './partitions.ts';

const DAY = 86_400_000;

const scratch = migrationTestDatabase('partitions');

test('events, deliveries and attempts move with their rows into weekly partitions', async () => {
  await scratch.upTo(/_partitioned_events$/);
  const db = scratch.database.db;
  const client = randomUUID();
  await db.execute(sql`insert into clients (id, name) values (${client}, 'Partitioned')`);
  const webhook = randomUUID();
  await db.execute(sql`insert into webhooks (id, client_id, name, url, topics, enabled, secret_sealed)
    values (${webhook}, ${client}, 'w', 'https://example.com/hook', '["*"]'::jsonb, true, 'sealed')`);
  const now = Date.now();
  const events = { old: uuidv7At(now - 20 * DAY), recent: uuidv7At(now - DAY), notV7: randomUUID() };
  for (const id of Object.values(events)) {
    await db.execute(sql`insert into events (id, client_id, topic, resource_type, resource_id, body)
      values (${id}, ${client}, 'TransactionCleared', 'Transaction', 't', '{}')`);
    const delivery = uuidv7At(now);
    await db.execute(sql`insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, attempt_count, next_attempt_at)
      values (${delivery}, ${client}, ${id}, ${webhook}, 'event', 'pending', 1, now() - interval '1 minute')`);
    await db.execute(sql`insert into delivery_attempts (id, client_id, delivery_id, event_id, attempt, started_at, duration_ms, status_code)
      values (${uuidv7At(now)}, ${client}, ${delivery}, ${id}, 1, now(), 12, 500)`);
  }

  await runMigrations(scratch.database);

  const partitionOf = async (table: string, key: string, id: string) =>
    rowsOf<{ p: string }>(
      await db.execute(sql.raw(`select tableoid::regclass::text as p from ${table} where ${key} = '${id}'`)),
    )[0]?.p;
  const week = (ms: number) => weekOf(new Date(ms)).toISOString().slice(0, 10).replaceAll('-', '');
  for (const [name, id] of Object.entries(events)) {
    const suffix =
      name === 'old' ? `_p${week(now - 20 * DAY)}` : name === 'recent' ? `_p${week(now - DAY)}` : '_default';
    assert.equal(await partitionOf('events', 'id', id), `events${suffix}`, name);
    assert.equal(await partitionOf('event_deliveries', 'event_id', id), `event_deliveries${suffix}`, name);
    assert.equal(await partitionOf('delivery_attempts', 'event_id', id), `delivery_attempts${suffix}`, name);
  }
  // The weeks ahead exist: this week and the next two.
  for (let w = 0; w <= 2; w++) {
    const [r] = rowsOf<{ t: string | null }>(
      await db.execute(sql.raw(`select to_regclass('events_p${week(now + w * 7 * DAY)}')::text as t`)),
    );
    assert.ok(r?.t, `week ${w} ahead`);
  }
  const due = rowsOf<{ event_id: string }>(
    await db.execute(sql`select event_id from due_event_deliveries_per_client(now(), '{}'::uuid[], '{}'::jsonb, 10)`),
  );
  assert.deepEqual(due.map((d) => d.event_id).sort(), Object.values(events).sort());
  // The indexes are on the partitioned tables (and so on every partition). Those of the pending
  // deliveries moved to the queue (migration 0027).
  const indexes = rowsOf<{ n: string }>(
    await db.execute(
      sql`select indexname as n from pg_indexes where tablename in ('events', 'event_deliveries', 'delivery_attempts') order by 1`,
    ),
  ).map((r) => r.n);
  assert.deepEqual(indexes, [
    'delivery_attempts_delivery_idx',
    'delivery_attempts_event_id_id_pk',
    'delivery_attempts_event_idx',
    'event_deliveries_client_failed_idx',
    'event_deliveries_event_id_id_pk',
    'event_deliveries_event_idx',
    'events_client_created_idx',
    'events_client_topic_idx',
    'events_pkey',
  ]);
});
