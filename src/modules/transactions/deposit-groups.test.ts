// Deposits arriving together are written in one transaction (deposit-groups.ts); each still
// gets its own outcome, and a group the database refuses falls back to one transaction each.
// "One transaction" is observed directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { withRefusal, writersOf } from '../../test/faults.ts';
import { createUser, errorsOf, type Merchant, type TestApp, createTestApp } from '../../test/harness.ts';
import { approvedUser, assertLedgerSound, balanceOf, createWallet, deposit, linkAccount } from '../../test/money.ts';

describe('deposits in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  async function wallet() {
    const user = await approvedUser(t, m);
    const account = await linkAccount(t, m, user.id);
    const w = await createWallet(t, m, user.id);
    return { walletId: w.id, accountId: account.id };
  }
  const xminOf = (ids: string[]) => writersOf(t, 'transactions', ids);

  test('deposits sent together share one transaction, and each gets its own outcome', async () => {
    const a = await wallet();
    const b = await wallet();
    const unapproved = await createUser(t, m);
    const c = {
      walletId: (await createWallet(t, m, unapproved.id)).id,
      accountId: (await linkAccount(t, m, unapproved.id)).id,
    };
    const earlier = await deposit(t, m, a.walletId, 700, a.accountId, { idempotencyKey: 'earlier' });
    assert.equal(earlier.status, 201, earlier.raw);
    assert.equal((await deposit(t, m, a.walletId, 800, a.accountId, { idempotencyKey: 'earlier-2' })).status, 201);

    const [a1, a2, b1, replay, reused, noWallet, noKyc, twice] = await Promise.all([
      deposit(t, m, a.walletId, 1000, a.accountId, { idempotencyKey: 'g-a1' }),
      deposit(t, m, a.walletId, 2000, a.accountId, { idempotencyKey: 'g-a2' }),
      deposit(t, m, b.walletId, 3000, b.accountId, { idempotencyKey: 'g-b1' }),
      deposit(t, m, a.walletId, 700, a.accountId, { idempotencyKey: 'earlier' }),
      deposit(t, m, a.walletId, 801, a.accountId, { idempotencyKey: 'earlier-2' }),
      deposit(t, m, randomUUID(), 1000, a.accountId, { idempotencyKey: 'g-none' }),
      deposit(t, m, c.walletId, 1000, c.accountId, { idempotencyKey: 'g-kyc' }),
      deposit(t, m, a.walletId, 1000, a.accountId, { idempotencyKey: 'g-a1' }),
    ]);
    for (const r of [a1, a2, b1]) assert.equal(r!.status, 201, r!.raw);
    assert.equal(replay!.status, 201);
    assert.equal(replay!.headers['idempotent-replayed'], 'true');
    assert.equal(replay!.raw, earlier.raw);
    assert.equal(errorsOf(reused!)[0]!.code, 'IdempotencyKeyReused');
    assert.equal(errorsOf(noWallet!)[0]!.code, 'WalletNotFound');
    assert.equal(errorsOf(noKyc!)[0]!.code, 'InvalidKycStatus');
    // The same key twice at once: the second is in flight with the first, or replays it.
    if (twice!.status === 201) assert.equal(twice!.raw, a1!.raw);
    else assert.equal(errorsOf(twice!)[0]!.code, 'IdempotencyKeyInUse');

    const rows = await xminOf([a1, a2, b1].map((r) => r!.body.data.id));
    assert.equal(rows.length, 3);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    // Two deposits to one wallet in one group: its balance moved by both.
    assert.equal((await balanceOf(t, m, a.walletId)).pending.deposit, 700 + 800 + 1000 + 2000);
    assert.equal((await balanceOf(t, m, b.walletId)).pending.deposit, 3000);
    const listed = await t.request('GET', `/api/v1/wallets/${a.walletId}/transactions`, { as: m });
    assert.equal(listed.body.meta.total, 4);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each deposit runs again alone, and only the failing one fails', async () => {
    const w = await wallet();
    // A fault only this amount hits.
    await withRefusal(t, { table: 'transactions', on: 'insert', when: 'new.amount = 66666' }, async () => {
      const results = await Promise.all(
        [1000, 66_666, 2000, 3000].map((amount) => deposit(t, m, w.walletId, amount, w.accountId)),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [201, 503, 201, 201],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await xminOf([results[0]!, results[2]!, results[3]!].map((r) => r.body.data.id));
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 3, 'one transaction each after the group failed');
      assert.equal((await balanceOf(t, m, w.walletId)).pending.deposit, 6000);
    });
    await assertLedgerSound(t);
  });
});
