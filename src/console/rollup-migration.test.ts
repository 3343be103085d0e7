// The console's payment rollup in SQL (docs/internals.md#counters): a database
// migrated up to the migration before the rollup's, holding payments, is migrated the rest of the
// way; the rollup then holds those payments. Statements of every shape (several rows, several
// merchants and hours, data-modifying CTEs on payments, updates that move figures or none,
// deletes) keep the rollup and its deltas equal to a count over payments, and so does the fold.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from '../db/open.ts';
import { foldPaymentRollup } from '../modules/payments/sql.ts';
import { migrationTestDatabase } from '../test/migrations.ts';

const TAG = /_console_payment_rollup$/;

const scratch = migrationTestDatabase('rollup');

const merchants = [randomUUID(), randomUUID()];

/** payments counted per merchant and hour, as the rollup defines its figures. */
async function truth() {
  return rowsOf<Record<string, unknown>>(
    await scratch.database.db.execute(sql`
      select client_id::text, date_trunc('hour', created_at, 'UTC') as hour, count(*)::bigint as payments, count(*) filter (where status = 'Failed')::bigint as failed,
        sum(amount)::bigint as amount, coalesce(sum(captured_amount) filter (where status <> 'Failed'), 0)::bigint as captured, sum(refunded_amount)::bigint as refunded
      from payments group by 1, 2 order by 1, 2`),
  ).map(normal);
}

/** The rollup and the deltas not yet folded, summed per merchant and hour (rows that sum to nothing left out). */
async function rolled() {
  return rowsOf<Record<string, unknown>>(
    await scratch.database.db.execute(sql`
      select client_id::text, hour, sum(payments)::bigint as payments, sum(failed)::bigint as failed, sum(amount)::bigint as amount,
        sum(captured)::bigint as captured, sum(refunded)::bigint as refunded
      from (select * from console_payment_rollup union all select * from console_payment_rollup_deltas) x
      group by 1, 2 having sum(payments) <> 0 or sum(failed) <> 0 or sum(amount) <> 0 or sum(captured) <> 0 or sum(refunded) <> 0
      order by 1, 2`),
  ).map(normal);
}

const normal = (r: Record<string, unknown>) => ({
  client: r.client_id,
  hour: new Date(r.hour as string).toISOString(),
  payments: Number(r.payments),
  failed: Number(r.failed),
  amount: Number(r.amount),
  captured: Number(r.captured),
  refunded: Number(r.refunded),
});

/** `n` payments of a merchant, one every 20 minutes from `from`, as one INSERT … SELECT. */
const insertPayments = (client: string, n: number, from: string, status = 'Created') => sql`
  insert into payments (id, client_id, rail, status, amount, captured_amount, sourcing, external_payments, disbursement, expires_at, created_at, updated_at)
  select gen_random_uuid(), ${client}::uuid, 'bank', ${status}, 100 * k, case when ${status} in ('Processing', 'Sent', 'Failed') then 100 * k else 0 end,
    '{}'::jsonb, '[]'::jsonb, '[]'::jsonb, ${from}::timestamptz + interval '7 days',
    ${from}::timestamptz + (k - 1) * interval '20 minutes', ${from}::timestamptz
  from generate_series(1, ${n}) k`;

test('the migration counts the payments there are; every statement on payments keeps the rollup equal to them', async () => {
  const db = scratch.database.db;
  await scratch.upTo(TAG);

  await db.execute(insertPayments(merchants[0]!, 10, '2026-05-01T10:05:00Z', 'Sent'));
  await db.execute(insertPayments(merchants[1]!, 4, '2026-05-01T23:50:00Z', 'Failed'));
  await runMigrations(scratch.database);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from console_payment_rollup_deltas`))[0]!.n),
    0,
  );
  const backfilled = await truth();
  assert.equal(backfilled.length, 4 + 2, 'ten payments over four hours, four over two');
  assert.deepEqual(await rolled(), backfilled);

  // Inserts of several rows, merchants and hours in one statement.
  await db.execute(insertPayments(merchants[0]!, 7, '2026-05-02T00:00:00Z'));
  await db.execute(
    sql`with a as (${insertPayments(merchants[0]!, 3, '2026-05-02T05:00:00Z', 'Processing')}), b as (${insertPayments(merchants[1]!, 2, '2026-05-02T05:30:00Z')}) select 1`,
  );
  assert.deepEqual(await rolled(), await truth());

  // Updates: captures, failures (captured leaves, failed comes), refunds, an update of several
  // hours and merchants at once, one that moves no figure, and two CTEs updating payments.
  await db.execute(
    sql`update payments set status = 'Processing', captured_amount = amount where status = 'Created' and client_id = ${merchants[0]!}::uuid and amount <= 300`,
  );
  await db.execute(sql`update payments set status = 'Failed' where status = 'Processing' and amount in (100, 300)`);
  await db.execute(sql`update payments set refunded_amount = amount / 2 where status = 'Sent' and amount > 500`);
  await db.execute(
    sql`update payments set status = 'Sent' where status = 'Failed' and client_id = ${merchants[1]!}::uuid`,
  );
  const before = Number(
    rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from console_payment_rollup_deltas`))[0]!.n,
  );
  await db.execute(sql`update payments set settle_after = now()`);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from console_payment_rollup_deltas`))[0]!.n),
    before,
    'an update that moves no figure appends no delta',
  );
  await db.execute(sql`with a as (update payments set status = 'Canceled' where status = 'Created' and client_id = ${merchants[1]!}::uuid returning 1),
    b as (update payments set status = 'Failed' where status = 'Sent' and client_id = ${merchants[0]!}::uuid and amount = 1000 returning 1) select 1`);
  assert.deepEqual(await rolled(), await truth());

  // The fold: the deltas leave, the figures stay; in small batches too.
  assert.ok((await foldPaymentRollup(db, 3)) === 3);
  assert.deepEqual(await rolled(), await truth());
  while ((await foldPaymentRollup(db, 3)) > 0);
  assert.equal(
    Number(rowsOf<{ n: string }>(await db.execute(sql`select count(*) as n from console_payment_rollup_deltas`))[0]!.n),
    0,
  );
  assert.deepEqual(await rolled(), await truth());

  // Deletes (no code path deletes payments; the rollup follows anyway).
  await db.execute(sql`delete from payments where client_id = ${merchants[1]!}::uuid and amount = 100`);
  assert.deepEqual(await rolled(), await truth());
  await foldPaymentRollup(db, 1_000);
  assert.deepEqual(await rolled(), await truth());
});
