// The API lists' counters in SQL (docs/internals.md#counters): a database migrated up to just
// before the counters' migration, holding rows of every counted table, is migrated the rest of
// the way; the counters then hold those rows. Statements of every shape (several rows and
// merchants, data-modifying CTEs, updates that move a key or none, deletes) keep the counters and
// their deltas equal to a count over the tables, and so does the fold, in small batches too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { foldListCounts } from './list-counts.ts';
import { rowsOf, runMigrations, type Database } from './open.ts';
import { countsFromTables, countsKept } from '../test/list-counts.ts';
import { migrationTestDatabase } from '../test/migrations.ts';

const scratch = migrationTestDatabase('list-counts');

const merchants = [randomUUID(), randomUUID()];
const wallets = [randomUUID(), randomUUID()];

const insertIntents = (client: string, n: number, status: string, initiator = 'Merchant') => sql`
  insert into payment_intents (id, client_id, amount, status, initiator, payment_method, balance, expires_at)
  select gen_random_uuid(), ${client}::uuid, 100 * k, ${status}, ${initiator}, case when k % 3 = 0 then 'Gift' else 'Wallet' end,
    '{}'::jsonb, now() + interval '1 day'
  from generate_series(1, ${n}) k`;
const insertPayments = (client: string, n: number, status: string) => sql`
  insert into payments (id, client_id, rail, status, amount, channel, sourcing, external_payments, disbursement, expires_at)
  select gen_random_uuid(), ${client}::uuid, 'bank', ${status}, 100 * k, case k % 3 when 0 then null when 1 then 'web' else 'pos' end,
    '{}'::jsonb, '[]'::jsonb, '[]'::jsonb, now() + interval '7 days'
  from generate_series(1, ${n}) k`;
const insertEvents = (client: string, n: number) => sql`
  insert into events (id, client_id, topic, resource_type, resource_id, body)
  select gen_random_uuid(), ${client}::uuid, case when k % 2 = 0 then 'payment.created' else 'user.created' end, 'Payment', k::text, '{}'
  from generate_series(1, ${n}) k`;
const insertTransactions = (client: string, wallet: string, n: number) => sql`
  insert into transactions (id, client_id, wallet_id, user_id, linked_account_id, type, status, amount, wallet_amount, fee_amount, fee_type, fee_deducted, disbursement)
  select gen_random_uuid(), ${client}::uuid, ${wallet}::uuid, gen_random_uuid(), gen_random_uuid(), 'OneTimeDeposit', 'Pending', 100, 100, 0, 'None', 0, '[]'::jsonb
  from generate_series(1, ${n}) k`;

async function assertCounted(db: Database['db']) {
  assert.deepEqual(await countsKept(db), await countsFromTables(db));
}

test('the migration counts the rows there are; every statement keeps the counters equal to them', async () => {
  const db = scratch.database.db;
  await scratch.upTo(/_list_counts$/);
  for (const [i, client] of merchants.entries()) {
    await db.execute(sql`insert into clients (id, name) values (${client}::uuid, ${`m${i}`})`);
    const user = randomUUID();
    await db.execute(
      sql`insert into users (id, client_id, public_id) values (${user}::uuid, ${client}::uuid, ${`u${i}`})`,
    );
    await db.execute(
      sql`insert into wallets (id, client_id, user_id, status) values (${wallets[i]!}::uuid, ${client}::uuid, ${user}::uuid, 'Active')`,
    );
    await db.execute(insertTransactions(client, wallets[i]!, 3 + i));
    await db.execute(insertIntents(client, 7 + i, 'Promotable'));
    await db.execute(insertPayments(client, 5 + i, 'Created'));
    await db.execute(insertEvents(client, 4 + i));
  }
  const before = await countsFromTables(db);
  await runMigrations(scratch.database);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from list_count_deltas`))[0]!.n),
    0,
  );
  assert.deepEqual(await countsKept(db), before, 'the migration counted every row');
  assert.equal(before[`${merchants[1]}|payments/channel=web|{"status": "Created"}`], 2);

  // Inserts of several rows and merchants, in one statement.
  await db.execute(sql`with a as (${insertPayments(merchants[0]!, 4, 'Processing')}), b as (${insertPayments(merchants[1]!, 2, 'Created')}),
    c as (${insertIntents(merchants[1]!, 3, 'Promotable', 'Customer')}), d as (${insertEvents(merchants[0]!, 3)}) select 1`);
  await db.execute(insertTransactions(merchants[0]!, wallets[0]!, 5));
  await assertCounted(db);

  // Updates that move keys (statuses, a channel), one that moves none, and two CTEs updating one table.
  await db.execute(sql`update payments set status = 'Processing' where status = 'Created' and amount <= 300`);
  await db.execute(
    sql`update payments set channel = 'kiosk' where channel = 'web' and client_id = ${merchants[0]!}::uuid`,
  );
  await db.execute(sql`update payment_intents set status = 'PromotedToPayment' where amount in (100, 400)`);
  const deltas = Number(
    rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from list_count_deltas`))[0]!.n,
  );
  await db.execute(sql`update payments set updated_at = now(), captured_amount = amount`);
  await db.execute(sql`update payment_intents set updated_at = now()`);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from list_count_deltas`))[0]!.n),
    deltas,
    'an update that moves no key appends no delta',
  );
  await db.execute(sql`with a as (update payments set status = 'Canceled' where status = 'Created' and client_id = ${merchants[1]!}::uuid returning 1),
    b as (update payments set status = 'Sent' where status = 'Processing' and client_id = ${merchants[0]!}::uuid returning 1) select 1`);
  await assertCounted(db);

  // The fold: the deltas leave, the counts stay; in small batches too.
  assert.equal(await foldListCounts(db, 3), 3);
  await assertCounted(db);
  while ((await foldListCounts(db, 3)) > 0);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from list_count_deltas`))[0]!.n),
    0,
  );
  await assertCounted(db);

  // Deletes (the event retention job deletes events; nothing deletes the others, counted anyway).
  await db.execute(sql`delete from events where client_id = ${merchants[1]!}::uuid and topic = 'user.created'`);
  await db.execute(sql`delete from payments where amount = 100`);
  await db.execute(sql`delete from transactions where client_id = ${merchants[0]!}::uuid`);
  await assertCounted(db);
  await foldListCounts(db, 1_000);
  await assertCounted(db);
});
