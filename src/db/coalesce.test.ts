// Coalesced point reads (GET user, wallet balance) under concurrent requests: each request gets
// its own row, scoped to its own merchant, and a key asked for several times in one batch is
// not counted several times.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, createUser, type Merchant, type TestApp } from '../test/harness.ts';
import { balanceOf, fundedWallet } from '../test/money.ts';

describe('coalesced reads', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  before(async () => {
    t = await createTestApp();
    a = await t.createMerchant();
    b = await t.createMerchant();
  });
  after(() => t.close());

  test("concurrent GET user: each its own user, another merchant's ids 404, repeats answered alike", async () => {
    const ofA = await Promise.all(Array.from({ length: 5 }, () => createUser(t, a)));
    const ofB = await Promise.all(Array.from({ length: 5 }, () => createUser(t, b)));
    const asks = [
      ...ofA.map((u) => ({ u, as: a, own: true })),
      ...ofB.map((u) => ({ u, as: b, own: true })),
      ...ofA.map((u) => ({ u, as: b, own: false })),
    ];
    const all = [...asks, ...asks, ...asks];
    const answers = await Promise.all(all.map(({ u, as }) => t.request('GET', `/api/v1/users/${u.id}`, { as })));
    for (const [i, res] of answers.entries()) {
      const { u, own } = all[i]!;
      if (!own) {
        assert.equal(res.status, 404);
        assert.equal(res.body.errors[0].code, 'UserNotFound');
        continue;
      }
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.id, u.id);
      assert.equal(res.body.data.attributes.phoneNumber, u.attributes.phoneNumber);
    }
    // Upper-case ids in the path find the same users.
    const upper = await t.request('GET', `/api/v1/users/${ofA[0]!.id.toUpperCase()}`, { as: a });
    assert.equal(upper.status, 200);
  });

  test('concurrent balance reads of the same wallets: the same figures as one read alone, never summed twice', async () => {
    const one = await fundedWallet(t, a, 12_345);
    const two = await fundedWallet(t, a, 500);
    const alone = [await balanceOf(t, a, one.wallet.id), await balanceOf(t, a, two.wallet.id)];
    assert.equal(alone[0].total.total, 12_345);
    const reads = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t.request('GET', `/api/v1/wallets/${[one, two][i % 2]!.wallet.id}/balance`, { as: a }),
      ),
    );
    for (const [i, res] of reads.entries()) {
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data.attributes.balance, alone[i % 2]);
    }
    const foreign = await Promise.all(
      [one, two].map((w) => t.request('GET', `/api/v1/wallets/${w.wallet.id}/balance`, { as: b })),
    );
    assert.deepEqual(
      foreign.map((r) => r.status),
      [404, 404],
    );
  });
});
