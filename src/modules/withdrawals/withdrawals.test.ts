// Withdrawals, rewards and gifts (docs/adr/0003-double-entry-ledger.md, docs/money.md#withdrawals); counterparties are in modules/counterparties.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { SandboxBankTransfers } from '../../providers/bank-transfers.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  clearPending,
  createWallet,
  deposit,
  fundedWallet,
  linkAccount,
} from '../../test/money.ts';
import { genericPlan } from '../../test/plans.ts';
import { PUSH_BATCH } from './domain.ts';
import { largestRemainder } from './split.ts';
import { unsentWithdrawals } from './sql.ts';

const withdraw = (t: TestApp, m: Merchant, walletId: string, amount: unknown, extra: Record<string, unknown> = {}) =>
  t.request('POST', `/api/v1/wallets/${walletId}/withdraw`, {
    as: m,
    body: { data: { type: 'Withdraw', attributes: { amount, ...extra } } },
  });

const reward = (
  t: TestApp,
  m: Merchant,
  walletId: string,
  amount: number,
  key = randomUUID(),
  extra: Record<string, unknown> = {},
) =>
  t.request('POST', '/api/v1/rewards', {
    as: m,
    body: { data: { type: 'IssueReward', attributes: { walletId, amount, idempotencyKey: key, ...extra } } },
  });

describe('withdrawals', () => {
  let t: TestApp;
  let m: Merchant;
  const bank = new SandboxBankTransfers();
  before(async () => {
    t = await createTestApp({ providers: { bankTransfers: bank } });
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('split in proportion to what each connected account deposited (largest remainder)', async () => {
    const user = await approvedUser(t, m);
    const a = await linkAccount(t, m, user.id, { institutionName: 'Alpha Bank', accountMask: '1111' });
    const b = await linkAccount(t, m, user.id, { institutionName: 'Beta Bank', accountMask: '2222' });
    const wallet = await createWallet(t, m, user.id);
    await deposit(t, m, wallet.id, 3000, a.id);
    await deposit(t, m, wallet.id, 1000, b.id);
    await clearPending(t, m, wallet.id);
    const res = await withdraw(t, m, wallet.id, 1001);
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.data.type, 'Withdraw');
    assert.deepEqual(res.body.data.attributes.split, [
      { linkedAccountId: a.id, institutionName: 'Alpha Bank', accountMask: '1111', amount: 751 },
      { linkedAccountId: b.id, institutionName: 'Beta Bank', accountMask: '2222', amount: 250 },
    ]);
    const bal = await balanceOf(t, m, wallet.id, '?includeWithdrawableAmount=true');
    assert.equal(bal.available.deposit, 2999);
    assert.deepEqual(bal.withdrawable, { total: 2999 });
    await t.ctx.jobs.runOnce('bank-pushes');
    const pushes = [...bank.transfers.values()].filter(
      (x) => x.direction === 'push' && x.reference.startsWith(res.body.data.id),
    );
    assert.deepEqual(pushes.map((p) => p.amount).sort(), [250, 751]);
    await assertLedgerSound(t);
  });

  test("one round of the bank-pushes job records each withdrawal the bank took with its pushes' references; one it refused is sent next round", async () => {
    const user = await approvedUser(t, m);
    const a = await linkAccount(t, m, user.id);
    const b = await linkAccount(t, m, user.id);
    const wallet = await createWallet(t, m, user.id);
    await deposit(t, m, wallet.id, 3000, a.id);
    await deposit(t, m, wallet.id, 1000, b.id);
    await clearPending(t, m, wallet.id);
    const made = [];
    for (const amount of [400, 300, 200]) made.push((await withdraw(t, m, wallet.id, amount)).body.data);
    const [split, other, refused] = made as { id: string; attributes: { split: { linkedAccountId: string }[] } }[];
    assert.equal(split!.attributes.split.length, 2);
    const refs = async () => {
      const rows = rowsOf<{ id: string; provider_ref: string | null }>(
        await t.ctx.db.execute(
          sql`select id, provider_ref from withdrawals where id in (${split!.id}, ${other!.id}, ${refused!.id})`,
        ),
      );
      return Object.fromEntries(rows.map((r) => [r.id, r.provider_ref]));
    };
    const pushRefs = (w: typeof split) =>
      w!.attributes.split.map((s) => `ach_push_${w!.id}:${s.linkedAccountId}`).join(',');
    const initiatePush = bank.initiatePush.bind(bank);
    bank.initiatePush = async (r) => {
      if (r.reference.startsWith(refused!.id)) throw new Error('the bank is unreachable');
      return initiatePush(r);
    };
    try {
      await t.ctx.jobs.runOnce('bank-pushes');
    } finally {
      bank.initiatePush = initiatePush;
    }
    assert.deepEqual(await refs(), { [split!.id]: pushRefs(split), [other!.id]: pushRefs(other), [refused!.id]: null });
    await t.ctx.jobs.runOnce('bank-pushes');
    assert.deepEqual(await refs(), {
      [split!.id]: pushRefs(split),
      [other!.id]: pushRefs(other),
      [refused!.id]: pushRefs(refused),
    });
  });

  test('the bank-pushes job finds the unsent withdrawals through withdrawals_unsent_idx, in a generic plan (no scan of every withdrawal)', async () => {
    const plan = await genericPlan(t.ctx.db, unsentWithdrawals(t.ctx.db, PUSH_BATCH).toSQL());
    assert.match(plan, /withdrawals_unsent_idx/, plan);
    assert.doesNotMatch(plan, /Seq Scan|Sort/, plan);
  });

  test('a disconnected account gets nothing; equal shares when no connected account deposited', async () => {
    const user = await approvedUser(t, m);
    const a = await linkAccount(t, m, user.id);
    const wallet = await createWallet(t, m, user.id);
    await deposit(t, m, wallet.id, 2000, a.id);
    await clearPending(t, m, wallet.id);
    await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${a.id}`, { as: m });
    const none = await withdraw(t, m, wallet.id, 100);
    assert.equal(none.status, 400);
    assert.equal(errorsOf(none)[0]!.code, 'LinkedAccountMissing');
    const b = await linkAccount(t, m, user.id);
    const c = await linkAccount(t, m, user.id);
    const res = await withdraw(t, m, wallet.id, 101);
    assert.deepEqual(
      res.body.data.attributes.split.map((s: { linkedAccountId: string; amount: number }) => [
        s.linkedAccountId,
        s.amount,
      ]),
      [
        [b.id, 51],
        [c.id, 50],
      ],
    );
  });

  test('never more than the withdrawable amount; rewards and pending money are not withdrawable', async () => {
    const { wallet, account } = await fundedWallet(t, m, 1000);
    await reward(t, m, wallet.id, 500);
    await deposit(t, m, wallet.id, 700, account.id); // pending
    const bal = await balanceOf(t, m, wallet.id, '?includeWithdrawableAmount=true');
    assert.equal(bal.available.total, 1500);
    assert.deepEqual(bal.withdrawable, { total: 1000 });
    const over = await withdraw(t, m, wallet.id, 1001);
    assert.equal(over.status, 400);
    assert.equal(errorsOf(over)[0]!.code, 'InsufficientWithdrawableBalance');
    assert.equal(errorsOf(over)[0]!.source?.pointer, '/data/attributes/amount');
    assert.equal((await withdraw(t, m, wallet.id, 1000)).status, 201);
    assert.equal((await withdraw(t, m, wallet.id, 1)).status, 400);
    const after = await balanceOf(t, m, wallet.id);
    assert.equal(after.available.deposit, 0);
    assert.equal(after.available.reward.merchant, 500);
    assert.equal(after.pending.deposit, 700);
    await assertLedgerSound(t);
  });

  test('KYC must be Approved; bodies are validated', async () => {
    const u = await createUser(t, m);
    await linkAccount(t, m, u.id);
    const w = await createWallet(t, m, u.id);
    const res = await withdraw(t, m, w.id, 100);
    assert.equal(res.status, 400);
    assert.equal(errorsOf(res)[0]!.code, 'InvalidKycStatus');
    for (const amount of [0, -5, 1.5, '100', null]) {
      const bad = await withdraw(t, m, w.id, amount);
      assert.equal(bad.status, 400, String(amount));
      assert.equal(errorsOf(bad)[0]!.code, 'ValidationError');
    }
  });

  test('an idempotency key, when sent, makes retries replay', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const key = randomUUID();
    const first = await withdraw(t, m, wallet.id, 400, { idempotencyKey: key });
    const again = await withdraw(t, m, wallet.id, 400, { idempotencyKey: key });
    assert.equal(again.raw, first.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 600);
    assert.equal((await withdraw(t, m, wallet.id, 300, { idempotencyKey: key })).status, 409);
    const over = await withdraw(t, m, wallet.id, 601, { idempotencyKey: randomUUID() });
    assert.equal(over.status, 400, over.raw);
    assert.equal(errorsOf(over)[0]!.code, 'InsufficientWithdrawableBalance');
    for (const body of [{ idempotencyKey: randomUUID() }, {}]) {
      const missing = await withdraw(t, m, randomUUID(), 100, body);
      assert.equal(missing.status, 404, missing.raw);
      assert.equal(errorsOf(missing)[0]!.code, 'WalletNotFound');
    }
  });

  test('withdrawals racing for one balance: never more than it holds, the rest refused 400', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, n) =>
        withdraw(t, m, wallet.id, 300, n % 2 ? {} : { idempotencyKey: randomUUID() }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 3, results.map((r) => r.raw).join('\n'));
    for (const r of results.filter((r) => r.status !== 201))
      assert.equal(errorsOf(r)[0]!.code, 'InsufficientWithdrawableBalance', r.raw);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 100);
    await assertLedgerSound(t);
  });

  test('largest remainder splits exactly', () => {
    assert.deepEqual(largestRemainder(100, [1, 1, 1]), [34, 33, 33]);
    assert.deepEqual(largestRemainder(10, [0, 0]), [5, 5]);
    assert.deepEqual(largestRemainder(1, [3, 1]), [1, 0]);
    assert.deepEqual(largestRemainder(999_999_999_999, [999_999_999_999, 1]), [999_999_999_998, 1]);
    for (let i = 0; i < 200; i++) {
      const weights = Array.from({ length: 1 + (i % 5) }, (_, k) => (i * 7919 + k * 104729) % 10_000);
      const total = (i * 31337) % 1_000_000;
      assert.equal(
        largestRemainder(total, weights).reduce((a, b) => a + b, 0),
        total,
      );
    }
  });
});

describe('rewards', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({ rewardMinimumPurchase: 1000 });
  });
  after(() => t.close());

  test('issuing credits the merchant reward bucket at once; idempotent', async () => {
    const { wallet } = await fundedWallet(t, m, 0);
    const key = randomUUID();
    const res = await reward(t, m, wallet.id, 300, key, { message: 'Thanks!' });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.type, 'Reward');
    const { walletId, amount, message, kind, status } = res.body.data.attributes;
    assert.deepEqual(
      { walletId, amount, message, kind, status },
      { walletId: wallet.id, amount: 300, message: 'Thanks!', kind: 'immediate', status: 'Credited' },
    );
    const again = await reward(t, m, wallet.id, 300, key, { message: 'Thanks!' });
    assert.equal(again.raw, res.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const reused = await reward(t, m, wallet.id, 301, key, { message: 'Thanks!' });
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.available.reward.merchant, 300);
    assert.equal(b.total.total, 300);
    await assertLedgerSound(t);
  });

  test('an unknown wallet is 400 WalletNotFound; bodies are validated', async () => {
    const res = await reward(t, m, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 100);
    assert.equal(res.status, 400);
    assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
    assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/walletId');
    const { wallet } = await fundedWallet(t, m, 0);
    for (const attributes of [
      { walletId: wallet.id, amount: 0, idempotencyKey: 'a' },
      { walletId: wallet.id, amount: 5 },
      { walletId: wallet.id, amount: 5, idempotencyKey: 'b', message: '' },
    ]) {
      const bad = await t.request('POST', '/api/v1/rewards', {
        as: m,
        body: { data: { type: 'IssueReward', attributes } },
      });
      assert.equal(bad.status, 400, JSON.stringify(attributes));
    }
  });

  test('purchaseAmount: rewards usable only from rewardMinimumPurchase, never more than the purchase', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    await reward(t, m, wallet.id, 700); // merchant
    // An accrue reward too, via a merchant that pays deposit rewards.
    const all = await balanceOf(t, m, wallet.id);
    assert.equal(all.available.reward.total, 700);
    assert.equal(all.available.total, 5700);
    const below = await balanceOf(t, m, wallet.id, '?purchaseAmount=999');
    assert.deepEqual(below.available.reward, { accrue: 0, merchant: 0, total: 0 });
    assert.equal(below.available.total, 5000);
    assert.equal(below.total.total, 5700, 'total is what the wallet holds');
    const at = await balanceOf(t, m, wallet.id, '?purchaseAmount=1000');
    assert.deepEqual(at.available.reward, { accrue: 0, merchant: 700, total: 700 });
    const capped = await fundedWallet(t, m, 0);
    await reward(t, m, capped.wallet.id, 5000);
    const c = await balanceOf(t, m, capped.wallet.id, '?purchaseAmount=1200');
    assert.deepEqual(c.available.reward, { accrue: 0, merchant: 1200, total: 1200 }, 'never more than the purchase');
  });

  test('accrue rewards come from cleared deposits and are used after merchant rewards', async () => {
    const am = await t.createMerchant({ depositRewardBps: 1000, rewardMinimumPurchase: 0 });
    const { wallet } = await fundedWallet(t, am, 2000); // 10% → 200 accrue
    await reward(t, am, wallet.id, 150);
    const b = await balanceOf(t, am, wallet.id, '?purchaseAmount=250');
    assert.deepEqual(b.available.reward, { accrue: 100, merchant: 150, total: 250 });
    assert.equal(b.available.total, 2250);
  });
});

describe('gifts', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('the sandbox creates a gift with a 19-digit id; GET reads what is left', async () => {
    const res = await t.request('POST', '/api/v1/simulation/gifts', {
      as: m,
      body: { data: { type: 'Gift', attributes: { amount: 2500 } } },
    });
    assert.equal(res.status, 201);
    assert.match(res.body.data.id, /^\d{19}$/);
    assert.deepEqual(res.body.data.attributes, { available: 2500, originalAmount: 2500 });
    const got = await t.request('GET', `/api/v1/gifts/${res.body.data.id}`, { as: m });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.data, res.body.data);
    await assertLedgerSound(t);
  });

  test('gifts are scoped to the merchant; wallet barcodes and unknown ids are 404 GiftNotFound', async () => {
    const g = (
      await t.request('POST', '/api/v1/simulation/gifts', {
        as: m,
        body: { data: { type: 'Gift', attributes: { amount: 100 } } },
      })
    ).body.data;
    const u = await createUser(t, m);
    const w = await createWallet(t, m, u.id);
    const barcode = (await t.request('POST', `/api/v1/simulation/wallets/${w.id}/barcodes`, { as: m })).body.data
      .attributes.lookUpId;
    for (const [as, id] of [
      [other, g.id],
      [m, barcode],
      [m, '1234567890123456789'],
      [m, w.id],
    ] as const) {
      const res = await t.request('GET', `/api/v1/gifts/${id}`, { as });
      assert.equal(res.status, 404, id);
      assert.equal(errorsOf(res)[0]!.code, 'GiftNotFound');
    }
  });

  test('bad gift bodies are 400', async () => {
    for (const amount of [0, -1, 1.5, 'lots']) {
      const res = await t.request('POST', '/api/v1/simulation/gifts', {
        as: m,
        body: { data: { type: 'Gift', attributes: { amount } } },
      });
      assert.equal(res.status, 400, String(amount));
    }
  });
});
