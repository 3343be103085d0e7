// The migration that moves the pending deliveries into a queue of their own (migration 0027): a
// database migrated up to the one before it, holding deliveries in every state (one pending
// delivery leased by a worker, with its attempt in flight), is migrated the rest of the way.
// The queue then holds exactly the pending deliveries, each with its schedule, lease and
// attempt number, and the claim's function reads it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from '../../db/open.ts';
import { migrationTestDatabase } from '../../test/migrations.ts';
import { uuidv7At } from '../../test/ids.ts';

const scratch = migrationTestDatabase('delivery-queue');

test('the pending deliveries, and only they, move into the queue with their schedule, lease and attempt number', async () => {
  await scratch.upTo(/_delivery_queue$/);
  const db = scratch.database.db;
  const client = randomUUID();
  await db.execute(sql`insert into clients (id, name) values (${client}, 'Queued')`);
  const webhook = randomUUID();
  await db.execute(sql`insert into webhooks (id, client_id, name, url, topics, enabled, secret_sealed)
    values (${webhook}, ${client}, 'w', 'https://example.com/hook', '["*"]'::jsonb, true, 'sealed')`);
  const now = Date.now();
  const rows = [
    { state: 'pending', attempts: 0, due: "now() - interval '1 minute'", lease: 'null' },
    { state: 'pending', attempts: 2, due: "now() - interval '2 minutes'", lease: "now() + interval '30 seconds'" },
    { state: 'pending', attempts: 1, due: "now() + interval '1 hour'", lease: 'null' },
    { state: 'succeeded', attempts: 1, due: "now() - interval '3 minutes'", lease: 'null' },
    { state: 'failed', attempts: 8, due: "now() - interval '4 minutes'", lease: 'null' },
    { state: 'canceled', attempts: 0, due: "now() - interval '5 minutes'", lease: 'null' },
  ];
  const ids: string[] = [];
  for (const [i, r] of rows.entries()) {
    const event = uuidv7At(now - i);
    const id = uuidv7At(now - i);
    ids.push(id);
    await db.execute(
      sql`insert into events (id, client_id, topic, resource_type, resource_id, body) values (${event}, ${client}, 'TransactionCleared', 'Transaction', 't', '{}')`,
    );
    await db.execute(
      sql.raw(`insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, attempt_count, next_attempt_at, lease_until)
        values ('${id}', '${client}', '${event}', '${webhook}', 'event', '${r.state}', ${r.attempts}, ${r.due}, ${r.lease})`),
    );
  }
  const before = rowsOf<{ id: string; next_attempt_at: string; lease_until: string | null }>(
    await db.execute(
      sql`select id, next_attempt_at::text, lease_until::text from event_deliveries where state = 'pending' order by id`,
    ),
  );

  await runMigrations(scratch.database);

  const queued = rowsOf<{
    id: string;
    event_id: string;
    client_id: string;
    webhook_id: string;
    attempt_count: number;
    next_attempt_at: string;
    lease_until: string | null;
  }>(
    await db.execute(
      sql`select q.id, q.event_id, q.client_id, q.webhook_id, q.attempt_count, q.next_attempt_at::text, q.lease_until::text from event_delivery_queue q order by q.id`,
    ),
  );
  assert.deepEqual(
    queued.map((q) => q.id),
    ids.slice(0, 3).sort(),
  );
  assert.deepEqual(
    queued.map((q) => [q.next_attempt_at, q.lease_until]),
    before.map((b) => [b.next_attempt_at, b.lease_until]),
  );
  assert.deepEqual(queued.map((q) => q.attempt_count).sort(), [0, 1, 2]);
  assert.ok(queued.every((q) => q.client_id === client && q.webhook_id === webhook));
  // Only the first is due and unleased: the leased one waits for its lease, the third for its time.
  const due = rowsOf<{ id: string }>(
    await db.execute(sql`select id from due_event_deliveries_per_client(now(), '{}'::uuid[], '{}'::jsonb, 10)`),
  );
  assert.deepEqual(
    due.map((d) => d.id),
    [ids[0]],
  );
  const [column] = rowsOf<{ n: number }>(
    await db.execute(
      sql`select count(*)::int as n from information_schema.columns where table_name = 'event_deliveries' and column_name = 'lease_until'`,
    ),
  );
  assert.equal(column?.n, 0, 'the lease lives in the queue only');
  // No VACUUM truncates the queue: that would lock out every transaction writing an event.
  const [options] = rowsOf<{ o: string[] }>(
    await db.execute(sql`select reloptions as o from pg_class where relname = 'event_delivery_queue'`),
  );
  assert.ok(options?.o.includes('vacuum_truncate=false'), String(options?.o));
});
