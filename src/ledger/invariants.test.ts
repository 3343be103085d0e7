// The ledger's tables carry no foreign keys (schema.ts, HOT_PATH_REFERENCES): verifyLedger is
// what reports a posting whose entry or account does not exist.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { assertLedgerSound, fundedWallet } from '../test/money.ts';
import { verifyLedger } from './invariants.ts';

describe('ledger references', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('a posting whose entry or account is missing is reported, each with what it lacks', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const [account] = rowsOf<{ id: string }>(await t.ctx.db.execute(sql`select id from ledger_accounts where owner_id = ${wallet.id} and code = 'deposit.available'`));
    const entry = randomUUID();
    const [ghostAccount, ghostEntry] = [randomUUID(), randomUUID()];
    const noAccount = [randomUUID(), randomUUID()];
    const noEntry = [randomUUID(), randomUUID()];
    // Balanced pairs, so that only the references are wrong: an entry of two postings to an
    // account that does not exist, and two postings of an entry that does not exist that cancel
    // out on a real account (its balance still equals its postings).
    await t.ctx.db.transaction(async (tx) => {
      await tx.execute(sql`insert into ledger_entries (id, client_id, kind, ref_type, ref_id) values (${entry}, ${m.clientId}, 'test', 'test', 'dangling')`);
      await tx.execute(sql`insert into ledger_postings (id, client_id, entry_id, account_id, amount) values
        (${noAccount[0]}, ${m.clientId}, ${entry}, ${ghostAccount}, 5), (${noAccount[1]}, ${m.clientId}, ${entry}, ${ghostAccount}, -5),
        (${noEntry[0]}, ${m.clientId}, ${ghostEntry}, ${account!.id}, 5), (${noEntry[1]}, ${m.clientId}, ${ghostEntry}, ${account!.id}, -5)`);
    });
    try {
      const violations = await verifyLedger(t.ctx.db);
      assert.deepEqual(
        violations.map((v) => `${v.rule}: ${v.detail}`).sort(),
        [...noAccount.map((id) => `posting ${id}: no account`), ...noEntry.map((id) => `posting ${id}: no entry`)].map((d) => `postings reference entries and accounts: ${d}`).sort(),
      );
    } finally {
      await t.ctx.db.execute(sql`delete from ledger_postings where id in ${[...noAccount, ...noEntry]}`);
      await t.ctx.db.execute(sql`delete from ledger_entries where id = ${entry}`);
    }
    await assertLedgerSound(t);
  });
});
