// What a wallet's cleared deposits brought in per linked account (deposit_totals, which
// withdrawals split by): a database migrated up to just before the table's migration, holding
// cleared, pending and failed deposits, is migrated the rest of the way; the totals then hold
// what the cleared ones brought in, and nothing for the others.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from './open.ts';
import { migrationTestDatabase } from '../test/migrations.ts';

const scratch = migrationTestDatabase('deposit-totals');

test('the migration totals the deposits cleared before it, per wallet and linked account', async () => {
  const db = scratch.database.db;
  await scratch.upTo(/_deposit_totals$/);
  const [client, wallet, other, bankA, bankB] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const user = randomUUID();
  await db.execute(sql`insert into clients (id, name) values (${client}::uuid, 'm')`);
  for (const [n, w] of [wallet, other].entries()) {
    const owner = randomUUID();
    await db.execute(
      sql`insert into users (id, client_id, public_id) values (${owner}::uuid, ${client}::uuid, ${`u${n}`})`,
    );
    await db.execute(
      sql`insert into wallets (id, client_id, user_id, status) values (${w}::uuid, ${client}::uuid, ${owner}::uuid, 'Active')`,
    );
  }
  const deposit = (w: string, bank: string, status: string, walletAmount: number) =>
    db.execute(sql`
    insert into transactions (id, client_id, wallet_id, user_id, linked_account_id, type, status, amount, wallet_amount, fee_amount, fee_type, fee_deducted, disbursement)
    values (gen_random_uuid(), ${client}::uuid, ${w}::uuid, ${user}::uuid, ${bank}::uuid, 'OneTimeDeposit', ${status}, ${walletAmount + 25}, ${walletAmount}, 0, 'None', 0, '[]'::jsonb)`);
  await deposit(wallet, bankA, 'Cleared', 1000);
  await deposit(wallet, bankA, 'Cleared', 250);
  await deposit(wallet, bankA, 'Pending', 9999);
  await deposit(wallet, bankB, 'Cleared', 300);
  await deposit(wallet, bankB, 'Failed', 7777);
  await deposit(other, bankA, 'Cleared', 40);
  await deposit(other, bankB, 'Pending', 5);
  await runMigrations(scratch.database);
  const totals = rowsOf<{ wallet_id: string; linked_account_id: string; cleared: string }>(
    await db.execute(sql`select wallet_id, linked_account_id, cleared from deposit_totals order by cleared desc`),
  ).map((r) => [r.wallet_id, r.linked_account_id, Number(r.cleared)]);
  assert.deepEqual(totals, [
    [wallet, bankA, 1250],
    [wallet, bankB, 300],
    [other, bankA, 40],
  ]);
});
