// Each rule of the ledger invariant check (ledger/invariants.ts) reports what breaks it, and
// nothing else: a ledger tampered with behind Coffer's back (SQL, not the API), read through the
// admin API's check, then put back. The database refuses most of these changes made the way
// Coffer makes them (an entry that does not balance, a forbidden negative balance); the check is
// what finds them when something gets past that.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, type Tx } from '../db/open.ts';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { approvedUser, createWallet, deposit, linkAccount } from '../test/money.ts';
import { verifyLedger } from './invariants.ts';

describe('the ledger invariant check', () => {
  let t: TestApp;
  let m: Merchant;
  // An entry moving 500 from an outside account (untracked, may go negative) to a tracked one,
  // and an entry between two outside accounts; owned by nothing the API reads.
  const [outside, tracked, outside2] = [randomUUID(), randomUUID(), randomUUID()];
  const [entry, entry2] = [randomUUID(), randomUUID()];
  const postings = { outside: randomUUID(), tracked: randomUUID(), a: randomUUID(), b: randomUUID() };

  const violations = async () => {
    const res = await t.adminRequest('GET', '/admin/v1/ledger/verify');
    assert.equal(res.status, 200, res.raw);
    return (res.body.data.attributes.violations as { rule: string; detail: string }[])
      .map((v) => `${v.rule}: ${v.detail}`)
      .sort();
  };
  const exec = (query: ReturnType<typeof sql>) => t.ctx.db.execute(query);
  /** Runs fn in a transaction that is rolled back: for changes the tables' CHECKs refuse, made with the CHECK dropped. */
  const rolledBack = (fn: (tx: Tx) => Promise<void>) =>
    t.ctx.db
      .transaction(async (tx) => {
        await fn(tx);
        tx.rollback();
      })
      .catch((err: Error) => {
        if (!/rollback/i.test(err.message)) throw err;
      });

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    await t.ctx.db.transaction(async (tx) => {
      await tx.execute(sql`insert into ledger_accounts (id, client_id, owner_type, owner_id, code, tracked, allow_negative, balance) values
        (${outside}, ${m.clientId}, 'test', ${randomUUID()}, 'test.outside', false, true, 0),
        (${tracked}, ${m.clientId}, 'test', ${randomUUID()}, 'test.tracked', true, false, 500),
        (${outside2}, ${m.clientId}, 'test', ${randomUUID()}, 'test.outside2', false, true, 0)`);
      await tx.execute(sql`insert into ledger_entries (id, client_id, kind, ref_type, ref_id) values
        (${entry}, ${m.clientId}, 'test', 'test', 'one'), (${entry2}, ${m.clientId}, 'test', 'test', 'two')`);
      await tx.execute(sql`insert into ledger_postings (id, client_id, entry_id, account_id, amount) values
        (${postings.outside}, ${m.clientId}, ${entry}, ${outside}, -500), (${postings.tracked}, ${m.clientId}, ${entry}, ${tracked}, 500),
        (${postings.a}, ${m.clientId}, ${entry2}, ${outside}, -70), (${postings.b}, ${m.clientId}, ${entry2}, ${outside2}, 70)`);
    });
  });
  after(async () => {
    await exec(sql`delete from ledger_postings where entry_id in (${entry}, ${entry2})`);
    await exec(sql`delete from ledger_entries where id in (${entry}, ${entry2})`);
    await exec(sql`delete from ledger_accounts where id in (${outside}, ${tracked}, ${outside2})`);
    await t.close();
  });

  test('a sound ledger has no violations', async () => {
    assert.deepEqual(await violations(), []);
  });

  test('postings that do not sum to zero: the whole ledger, and their entry', async () => {
    await exec(sql`update ledger_postings set amount = -499 where id = ${postings.outside}`);
    try {
      assert.deepEqual(await violations(), [
        `each entry balances: entry ${entry}: 2 postings summing to 1`,
        'postings sum to zero: all postings sum to 1',
      ]);
    } finally {
      await exec(sql`update ledger_postings set amount = -500 where id = ${postings.outside}`);
    }
    assert.deepEqual(await violations(), []);
  });

  test('an entry with fewer than two postings', async () => {
    await exec(sql`delete from ledger_postings where entry_id = ${entry2}`);
    try {
      assert.deepEqual(await violations(), [`each entry balances: entry ${entry2}: 0 postings summing to 0`]);
    } finally {
      await exec(sql`insert into ledger_postings (id, client_id, entry_id, account_id, amount) values
        (${postings.a}, ${m.clientId}, ${entry2}, ${outside}, -70), (${postings.b}, ${m.clientId}, ${entry2}, ${outside2}, 70)`);
    }
    assert.deepEqual(await violations(), []);
    // One posting of nothing: the table's CHECK refuses it, so as below, in a transaction rolled back.
    await rolledBack(async (tx) => {
      await tx.execute(sql`alter table ledger_postings drop constraint ledger_postings_non_zero`);
      await tx.execute(sql`delete from ledger_postings where id = ${postings.a}`);
      await tx.execute(sql`update ledger_postings set amount = 0 where id = ${postings.b}`);
      const found = (await verifyLedger(tx)).map((v) => `${v.rule}: ${v.detail}`);
      assert.deepEqual(found, [`each entry balances: entry ${entry2}: 1 postings summing to 0`]);
    });
  });

  test('a tracked balance that is not the sum of its postings', async () => {
    await exec(sql`update ledger_accounts set balance = 499 where id = ${tracked}`);
    try {
      assert.deepEqual(await violations(), [
        `balance equals postings: account ${tracked} (test.tracked): balance 499, postings 500`,
      ]);
      // Recorded, and listed first by the admin API.
      const checks = await t.adminRequest('GET', '/admin/v1/ledger/checks');
      assert.equal(checks.status, 200, checks.raw);
      const [latest] = checks.body.data;
      assert.equal(latest.type, 'LedgerCheck');
      assert.equal(latest.attributes.violationCount, 1);
      assert.deepEqual(latest.attributes.violations, [
        { rule: 'balance equals postings', detail: `account ${tracked} (test.tracked): balance 499, postings 500` },
      ]);
      assert.ok(Date.parse(latest.attributes.finishedAt) >= Date.parse(latest.attributes.startedAt));
    } finally {
      await exec(sql`update ledger_accounts set balance = 500 where id = ${tracked}`);
    }
  });

  test('an untracked account that may not go negative and sums below zero', async () => {
    await exec(sql`update ledger_accounts set allow_negative = false where id = ${outside}`);
    try {
      assert.deepEqual(await violations(), [
        `no forbidden negative: untracked account ${outside} (test.outside) sums to -570`,
      ]);
    } finally {
      await exec(sql`update ledger_accounts set allow_negative = true where id = ${outside}`);
    }
  });

  // The table's CHECK refuses this balance, so the test drops the CHECK in a transaction that it
  // rolls back, and runs the check in that transaction (not through the API).
  test('a tracked account below zero that may not be', async () => {
    await rolledBack(async (tx) => {
      await tx.execute(sql`alter table ledger_accounts drop constraint ledger_accounts_non_negative`);
      await tx.execute(sql`update ledger_accounts set balance = -5 where id = ${tracked}`);
      const found = (await verifyLedger(tx)).map((v) => `${v.rule}: ${v.detail}`).sort();
      assert.deepEqual(found, [
        `balance equals postings: account ${tracked} (test.tracked): balance -5, postings 500`,
        `no forbidden negative: account ${tracked} (test.tracked) is -5`,
      ]);
    });
    assert.deepEqual(await violations(), []);
  });

  test("a wallet's pending deposits account that differs from its pending transactions", async () => {
    const user = await approvedUser(t, m);
    const account = await linkAccount(t, m, user.id);
    const wallet = await createWallet(t, m, user.id);
    assert.equal((await deposit(t, m, wallet.id, 1000, account.id)).status, 201);
    const [txn] = rowsOf<{ id: string }>(
      await exec(sql`select id from transactions where wallet_id = ${wallet.id} and status = 'Pending'`),
    );
    assert.ok(txn);
    await exec(sql`update transactions set wallet_amount = wallet_amount + 1 where id = ${txn.id}`);
    try {
      assert.deepEqual(await violations(), [
        `pending deposits match: wallet ${wallet.id}: deposit.pending 1000, pending transactions 1001`,
      ]);
    } finally {
      await exec(sql`update transactions set wallet_amount = wallet_amount - 1 where id = ${txn.id}`);
    }
    assert.deepEqual(await violations(), []);
  });
});
