// Withdrawals arriving together are written in one transaction (withdraw-groups.ts); each still
// gets its own outcome, and a group the ledger or the database refuses falls back to one
// transaction each. "One transaction" is observed directly: rows written by one transaction
// share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { withRefusal, writersOf } from '../../test/faults.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, createWallet, fundedWallet } from '../../test/money.ts';

const withdraw = (t: TestApp, m: Merchant, walletId: string, amount: number, extra: Record<string, unknown> = {}) =>
  t.request('POST', `/api/v1/wallets/${walletId}/withdraw`, {
    as: m,
    body: { data: { type: 'Withdraw', attributes: { amount, ...extra } } },
  });

describe('withdrawals in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const xminOf = (ids: string[]) => writersOf(t, 'withdrawals', ids);

  test('withdrawals sent together share one transaction, and each gets its own outcome', async () => {
    const a = (await fundedWallet(t, m, 10_000)).wallet;
    const b = (await fundedWallet(t, m, 10_000)).wallet;
    const unapproved = await createWallet(t, m, (await createUser(t, m)).id);
    const earlier = await withdraw(t, m, a.id, 700, { idempotencyKey: 'earlier' });
    assert.equal(earlier.status, 201, earlier.raw);
    assert.equal((await withdraw(t, m, a.id, 800, { idempotencyKey: 'earlier-2' })).status, 201);

    const [a1, a2, b1, plain, replay, reused, noWallet, noKyc, twice] = await Promise.all([
      withdraw(t, m, a.id, 1000, { idempotencyKey: 'g-a1' }),
      withdraw(t, m, a.id, 2000, { idempotencyKey: 'g-a2' }),
      withdraw(t, m, b.id, 3000, { idempotencyKey: 'g-b1' }),
      withdraw(t, m, b.id, 500),
      withdraw(t, m, a.id, 700, { idempotencyKey: 'earlier' }),
      withdraw(t, m, a.id, 801, { idempotencyKey: 'earlier-2' }),
      withdraw(t, m, randomUUID(), 1000, { idempotencyKey: 'g-none' }),
      withdraw(t, m, unapproved.id, 1000),
      withdraw(t, m, a.id, 1000, { idempotencyKey: 'g-a1' }),
    ]);
    for (const r of [a1, a2, b1, plain]) assert.equal(r!.status, 201, r!.raw);
    assert.equal(replay!.status, 201);
    assert.equal(replay!.headers['idempotent-replayed'], 'true');
    assert.equal(replay!.raw, earlier.raw);
    assert.equal(errorsOf(reused!)[0]!.code, 'IdempotencyKeyReused');
    assert.equal(errorsOf(noWallet!)[0]!.code, 'WalletNotFound');
    assert.equal(errorsOf(noKyc!)[0]!.code, 'InvalidKycStatus');
    // The same key twice at once: the second is in flight with the first, or replays it.
    if (twice!.status === 201) assert.equal(twice!.raw, a1!.raw);
    else assert.equal(errorsOf(twice!)[0]!.code, 'IdempotencyKeyInUse');

    const rows = await xminOf([a1, a2, b1, plain].map((r) => r!.body.data.id));
    assert.equal(rows.length, 4);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    // Two withdrawals from one wallet in one group: its balance moved by both.
    assert.equal((await balanceOf(t, m, a.id)).available.deposit, 10_000 - 700 - 800 - 1000 - 2000);
    assert.equal((await balanceOf(t, m, b.id)).available.deposit, 10_000 - 3000 - 500);
    // A key stored by the group replays.
    const again = await withdraw(t, m, a.id, 2000, { idempotencyKey: 'g-a2' });
    assert.equal(again.raw, a2!.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    await assertLedgerSound(t);
  });

  test('a group one withdrawal of which would overdraw: it alone is refused 400, the others are written one transaction each', async () => {
    const a = (await fundedWallet(t, m, 1000)).wallet;
    const b = (await fundedWallet(t, m, 1000)).wallet;
    const results = await Promise.all([
      withdraw(t, m, a.id, 400),
      withdraw(t, m, b.id, 1001, { idempotencyKey: randomUUID() }),
      withdraw(t, m, a.id, 500),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      [201, 400, 201],
      results.map((r) => r.raw).join('\n'),
    );
    assert.equal(errorsOf(results[1]!)[0]!.code, 'InsufficientWithdrawableBalance');
    const rows = await xminOf([results[0]!, results[2]!].map((r) => r.body.data.id));
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
    assert.equal((await balanceOf(t, m, a.id)).available.deposit, 100);
    assert.equal((await balanceOf(t, m, b.id)).available.deposit, 1000);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each withdrawal runs again alone, and only the failing one fails', async () => {
    const w = (await fundedWallet(t, m, 10_000)).wallet;
    // A fault only this amount hits.
    await withRefusal(t, { table: 'withdrawals', on: 'insert', when: 'new.amount = 6666' }, async () => {
      const results = await Promise.all([1000, 6666, 2000].map((amount) => withdraw(t, m, w.id, amount)));
      assert.deepEqual(
        results.map((r) => r.status),
        [201, 503, 201],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await xminOf([results[0]!, results[2]!].map((r) => r.body.data.id));
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
    });
    assert.equal((await balanceOf(t, m, w.id)).available.deposit, 7000);
    await assertLedgerSound(t);
  });
});
