// Money under concurrency (real on PostgreSQL; PGlite serialises them but they still must
// hold): one idempotency key racing with itself, spenders racing for one balance, movements
// locking the same accounts in opposite orders. The ledger invariants are checked after each.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../test/harness.ts';
import { assertLedgerSound, balanceOf, depositBody, fundedWallet } from '../test/money.ts';

describe('money under concurrency', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('50 simultaneous deposits with one key make exactly one deposit; the rest replay or get 409', async () => {
    const { wallet, account } = await fundedWallet(t, m, 0);
    const body = depositBody(4321, account.id);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body })),
    );
    const created = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
    const replays = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === 'true');
    const inUse = results.filter((r) => r.status === 409);
    assert.equal(created.length, 1, 'exactly one request ran');
    assert.equal(replays.length + inUse.length, 49, results.map((r) => r.status).join(','));
    assert.ok(inUse.every((r) => errorsOf(r)[0]!.code === 'IdempotencyKeyInUse'));
    assert.ok(
      replays.every((r) => r.raw === created[0]!.raw),
      'replays are byte-identical',
    );
    const txns = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions`, { as: m });
    assert.equal(txns.body.meta.total, 1);
    assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 4321);
    await assertLedgerSound(t);
  });

  test('100 simultaneous withdrawals racing for one balance never overdraw', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
          as: m,
          body: { data: { type: 'Withdraw', attributes: { amount: 100 } } },
        }),
      ),
    );
    const ok = results.filter((r) => r.status === 201).length;
    const refused = results.filter(
      (r) => r.status === 400 && errorsOf(r)[0]!.code === 'InsufficientWithdrawableBalance',
    ).length;
    assert.equal(
      ok,
      50,
      results
        .filter((r) => r.status !== 201 && r.status !== 400)
        .map((r) => r.raw)
        .join('\n'),
    );
    assert.equal(refused, 50);
    const b = await balanceOf(t, m, wallet.id, '?includeWithdrawableAmount=true');
    assert.equal(b.available.deposit, 0);
    assert.deepEqual(b.withdrawable, { total: 0 });
    await assertLedgerSound(t);
  });

  test('withdrawals of random sizes racing: what succeeds adds up to at most the balance', async () => {
    const { wallet } = await fundedWallet(t, m, 10_000);
    const sizes = Array.from({ length: 60 }, (_, i) => 100 + ((i * 7919) % 900));
    const results = await Promise.all(
      sizes.map((amount) =>
        t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
          as: m,
          body: { data: { type: 'Withdraw', attributes: { amount } } },
        }),
      ),
    );
    const withdrawn = results.reduce((sum, r, i) => sum + (r.status === 201 ? sizes[i]! : 0), 0);
    assert.ok(results.every((r) => r.status === 201 || r.status === 400));
    assert.ok(withdrawn <= 10_000);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 10_000 - withdrawn);
    await assertLedgerSound(t);
  });

  test('deposits disbursing to the same counterparties in opposite orders never deadlock', async () => {
    const ids: string[] = [];
    for (const label of ['A', 'B']) {
      const res = await t.request('POST', '/api/v1/counterparties', {
        as: m,
        body: {
          data: {
            type: 'Counterparty',
            attributes: { label, accountNumber: '12345678', routingNumber: '011000015', accountType: 'checking' },
          },
        },
      });
      ids.push(res.body.data.id);
    }
    const wallets = await Promise.all(Array.from({ length: 4 }, () => fundedWallet(t, m, 0)));
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const { wallet, account } = wallets[i % 4]!;
        const order = i % 2 ? [ids[0]!, ids[1]!] : [ids[1]!, ids[0]!];
        return t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
          as: m,
          body: depositBody(1000, account.id, {
            disbursement: order.map((counterpartyId) => ({ amount: 10, counterpartyId })),
          }),
        });
      }),
    );
    assert.deepEqual(
      [...new Set(results.map((r) => r.status))],
      [201],
      results
        .filter((r) => r.status !== 201)
        .map((r) => r.raw)
        .join('\n'),
    );
    const a = (await t.request('GET', `/api/v1/counterparties/${ids[0]}`, { as: m })).body.data.attributes.balance;
    assert.deepEqual(a, { pending: 400, available: 0 });
    await assertLedgerSound(t);
  });

  test('a mixed load on several wallets keeps every invariant', async () => {
    const wallets = await Promise.all(Array.from({ length: 5 }, () => fundedWallet(t, m, 3000)));
    const ops = Array.from({ length: 120 }, (_, i) => {
      const { wallet, account } = wallets[i % 5]!;
      switch (i % 4) {
        case 0:
          return t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
            as: m,
            body: depositBody(500 + i, account.id),
          });
        case 1:
          return t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
            as: m,
            body: { data: { type: 'Withdraw', attributes: { amount: 250 } } },
          });
        case 2:
          return t.request('POST', '/api/v1/rewards', {
            as: m,
            body: {
              data: {
                type: 'IssueReward',
                attributes: { walletId: wallet.id, amount: 25, idempotencyKey: randomUUID() },
              },
            },
          });
        default:
          return t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/clear-pending/bank`, { as: m });
      }
    });
    const results = await Promise.all(ops);
    assert.ok(
      results.every((r) => r.status < 500),
      results
        .filter((r) => r.status >= 500)
        .map((r) => r.raw)
        .join('\n'),
    );
    await assertLedgerSound(t);
  });
});
