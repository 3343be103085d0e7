// The webhook workers' claim against a large partition (a developer's tool, not a benchmark):
//   node --import tsx bench/profile-claim.ts [deliveries]     (default 500,000)
// Makes a database with one merchant and one webhook, inserts that many due pending deliveries
// by SQL (over the last hour) with their rows in the queue (event_delivery_queue) and ANALYZEs
// them, then times the claim's function (due_event_deliveries_per_client) three ways: with every
// delivery pending (a backlog); once all but the last 10 seconds' have ended and left the queue,
// before a VACUUM (their index entries still there, dead); and after the VACUUM that the job
// webhook-queue-vacuum runs. Needs a PostgreSQL server in PROFILE_PG (default
// postgres://postgres@127.0.0.1:5432/postgres).
import pg from 'pg';
import { dropDatabases, freshDatabase, json, merchant, percentileOf, startCoffer } from './lib.ts';

const n = Number(process.argv[2] ?? 500_000);
const claim = `select count(*) from due_event_deliveries_per_client(now(), '{}'::uuid[], '{}'::jsonb, 32)`;
const databaseUrl = await freshDatabase(
  process.env.PROFILE_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  'coffer_prof',
);
try {
  const coffer = await startCoffer({ databaseUrl });
  let webhookId: string;
  try {
    const auth = await merchant(coffer);
    const webhook = await json(`${coffer.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        data: {
          type: 'Webhook',
          attributes: { name: 'profile', url: 'https://hooks.example.com/profile', topics: ['*'] },
        },
      }),
    });
    webhookId = webhook.data.id;
  } finally {
    await coffer.stop();
  }
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  const time = async (label: string): Promise<void> => {
    const ms: number[] = [];
    for (let i = 0; i < 12; i++) {
      const t = performance.now();
      await c.query(claim);
      ms.push(performance.now() - t);
    }
    const buffers = (await c.query(`explain (analyze, buffers) ${claim}`)).rows
      .map((r) => r['QUERY PLAN'] as string)
      .find((l) => l.includes('Buffers'));
    console.log(
      `${label}: median ${percentileOf(
        ms.sort((a, b) => a - b),
        50,
      ).toFixed(2)} ms a claim; ${buffers?.trim() ?? 'no buffers read'}`,
    );
  };
  try {
    // Event ids are UUIDv7s of now (the week's partition), one per delivery.
    await c.query(
      `insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, next_attempt_at, created_at, updated_at)
       select gen_random_uuid(), w.client_id,
         (lpad(to_hex((extract(epoch from now()) * 1000)::bigint), 12, '0') || '70008000' || lpad(to_hex(g), 12, '0'))::uuid,
         w.id, 'event', 'pending', now() - interval '1 hour' + g * interval '1 hour' / $2, now(), now()
       from webhooks w cross join generate_series(1, $2) g where w.id = $1`,
      [webhookId, n],
    );
    await c.query(`insert into event_delivery_queue (id, event_id, client_id, webhook_id, next_attempt_at, created_at)
       select id, event_id, client_id, webhook_id, next_attempt_at, created_at from event_deliveries where state = 'pending'`);
    await c.query('analyze event_deliveries');
    await c.query('analyze event_delivery_queue');
    await time(`${n.toLocaleString('en')} pending`);
    await c.query(`with ended as (delete from event_delivery_queue where next_attempt_at < now() - interval '10 seconds' returning id, event_id)
       update event_deliveries d set state = 'succeeded' from ended e where d.event_id = e.event_id and d.id = e.id`);
    await time('ended, not vacuumed');
    const vacuumStart = performance.now();
    await c.query('vacuum event_delivery_queue');
    console.log(`VACUUM of the queue: ${(performance.now() - vacuumStart).toFixed(0)} ms`);
    await time('after VACUUM');
  } finally {
    await c.end();
  }
} finally {
  await dropDatabases();
}
