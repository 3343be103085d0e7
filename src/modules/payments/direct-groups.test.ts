// Direct payments arriving together are written in one transaction (direct-groups.ts); each
// still gets its own outcome, a second payment of a wallet runs after the group, and a group the
// ledger or the database refuses falls back to one transaction each. "One transaction" is
// observed directly: rows written by one transaction share its xmin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { withRefusal, writersOf } from '../../test/faults.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, createWallet, fundedWallet } from '../../test/money.ts';

const createPayment = (t: TestApp, m: Merchant, attributes: Record<string, unknown>) =>
  t.request('POST', '/api/v1/payments', { as: m, body: { data: { type: 'CreatePayment', attributes } } });

describe('direct payments in groups', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  const xminOf = (ids: string[]) => writersOf(t, 'payments', ids);

  test('payments sent together share one transaction, and each gets its own outcome', async () => {
    const [a, b, c] = await Promise.all([
      fundedWallet(t, m, 10_000),
      fundedWallet(t, m, 10_000),
      fundedWallet(t, m, 10_000),
    ]).then((w) => w.map((x) => x.wallet));
    const unapproved = await createWallet(t, m, (await createUser(t, m)).id);
    const earlier = await createPayment(t, m, { walletId: a!.id, amount: 700, idempotencyKey: 'earlier' });
    assert.equal(earlier.status, 200, earlier.raw);
    assert.equal(
      (await createPayment(t, m, { walletId: b!.id, amount: 800, idempotencyKey: 'earlier-2' })).status,
      200,
    );

    const [a1, b1, c1, replay, reused, noWallet, noKyc, twice] = await Promise.all([
      createPayment(t, m, { walletId: a!.id, amount: 1000, idempotencyKey: 'g-a1' }),
      createPayment(t, m, { walletId: b!.id, amount: 2000 }),
      createPayment(t, m, { walletId: c!.id, amount: 3000, idempotencyKey: 'g-c1' }),
      createPayment(t, m, { walletId: a!.id, amount: 700, idempotencyKey: 'earlier' }),
      createPayment(t, m, { walletId: b!.id, amount: 801, idempotencyKey: 'earlier-2' }),
      createPayment(t, m, { walletId: randomUUID(), amount: 100 }),
      createPayment(t, m, { walletId: unapproved.id, amount: 100 }),
      createPayment(t, m, { walletId: c!.id, amount: 3000, idempotencyKey: 'g-c1' }),
    ]);
    for (const r of [a1, b1, c1]) assert.equal(r!.status, 200, r!.raw);
    assert.equal(replay!.status, 200);
    assert.equal(replay!.headers['idempotent-replayed'], 'true');
    assert.equal(replay!.raw, earlier.raw);
    assert.equal(errorsOf(reused!)[0]!.code, 'IdempotencyKeyReused');
    assert.equal(errorsOf(noWallet!)[0]!.code, 'WalletNotFound');
    assert.equal(errorsOf(noKyc!)[0]!.code, 'InvalidKycStatus');
    // The same key twice at once: the second is in flight with the first, or replays it.
    if (twice!.status === 200) assert.equal(twice!.raw, c1!.raw);
    else assert.equal(errorsOf(twice!)[0]!.code, 'IdempotencyKeyInUse');

    const rows = await xminOf([a1, b1, c1].map((r) => r!.body.data.id));
    assert.equal(rows.length, 3);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote the group');
    assert.equal((await balanceOf(t, m, a!.id)).available.deposit, 10_000 - 700 - 1000);
    assert.equal((await balanceOf(t, m, b!.id)).available.deposit, 10_000 - 800 - 2000);
    assert.equal((await balanceOf(t, m, c!.id)).available.deposit, 10_000 - 3000);
    const again = await createPayment(t, m, { walletId: c!.id, amount: 3000, idempotencyKey: 'g-c1' });
    assert.equal(again.raw, c1!.raw);
    await assertLedgerSound(t);
  });

  test('payments of one wallet sent together share the group, each planned on what the ones before it left', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const results = await Promise.all(
      [300, 300, 600].map((amount) => createPayment(t, m, { walletId: wallet.id, amount })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      [200, 200, 402],
      results.map((r) => r.raw).join('\n'),
    );
    // The third was planned on the 400 cents the first two left: the wallet cannot cover it.
    assert.equal(errorsOf(results[2]!)[0]!.code, 'Failed');
    const rows = await xminOf(results.slice(0, 2).map((r) => r.body.data.id));
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'one transaction wrote both');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 400);
    await assertLedgerSound(t);
  });

  test('a group whose write the ledger refuses (a stale plan): that payment alone is 402 Failed, the others are written one transaction each', async () => {
    const wallets = (
      await Promise.all([fundedWallet(t, m, 10_000), fundedWallet(t, m, 10_000), fundedWallet(t, m, 10_000)])
    ).map((w) => w.wallet);
    // Stands in for a concurrent spend that made one plan stale: the ledger's refusal, raised
    // only for this amount's payment.
    const stale = {
      table: 'payments',
      on: 'insert' as const,
      when: 'new.amount = 7777',
      raise: "errcode = '23514', constraint = 'ledger_accounts_non_negative'",
    };
    await withRefusal(t, stale, async () => {
      const results = await Promise.all(
        [1000, 7777, 2000].map((amount, n) => createPayment(t, m, { walletId: wallets[n]!.id, amount })),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 402, 200],
        results.map((r) => r.raw).join('\n'),
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'Failed');
      const rows = await xminOf([results[0]!, results[2]!].map((r) => r.body.data.id));
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
    });
    assert.equal((await balanceOf(t, m, wallets[1]!.id)).available.deposit, 10_000);
    await assertLedgerSound(t);
  });

  test('a group the database fails: each payment runs again alone, and only the failing one fails', async () => {
    const wallets = (
      await Promise.all([fundedWallet(t, m, 10_000), fundedWallet(t, m, 10_000), fundedWallet(t, m, 10_000)])
    ).map((w) => w.wallet);
    await withRefusal(t, { table: 'payments', on: 'insert', when: 'new.amount = 6666' }, async () => {
      const results = await Promise.all(
        [1000, 6666, 2000].map((amount, n) => createPayment(t, m, { walletId: wallets[n]!.id, amount })),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 503, 200],
      );
      assert.equal(errorsOf(results[1]!)[0]!.code, 'ServiceUnavailable');
      const rows = await xminOf([results[0]!, results[2]!].map((r) => r.body.data.id));
      assert.equal(new Set(rows.map((r) => r.xmin)).size, 2, 'one transaction each after the group failed');
    });
    assert.equal((await balanceOf(t, m, wallets[1]!.id)).available.deposit, 10_000);
    await assertLedgerSound(t);
  });
});
