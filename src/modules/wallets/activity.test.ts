// GET /api/v1/wallets/{walletId}/activity: every movement of the wallet's money from its ledger
// postings, newest first, paged, filtered by kind and time; another merchant's wallet is 404.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { capturedPayment, clearPending, deposit, fundedWallet } from '../../test/money.ts';

describe('wallet activity', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let walletId: string;
  let accountId: string;
  let paymentId: string;
  let withdrawalId: string;
  /** The clock before each step, to cut time ranges between them. */
  const at: Record<string, string> = {};
  const step = (name: string) => {
    t.clock.advance(60_000);
    at[name] = t.clock.now().toISOString();
  };

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
    step('deposit');
    const funded = await fundedWallet(t, m, 10_000);
    walletId = funded.wallet.id;
    accountId = funded.account.id;
    step('reward');
    const reward = await t.request('POST', '/api/v1/rewards', {
      as: m,
      body: { data: { type: 'IssueReward', attributes: { walletId, amount: 700, idempotencyKey: randomUUID() } } },
    });
    assert.equal(reward.status, 200, reward.raw);
    step('payment');
    paymentId = await capturedPayment(t, m, walletId, 2000);
    step('refund');
    await t.request('POST', `/api/v1/simulation/payments/${paymentId}/settle`, { as: m });
    const refund = await t.request('POST', `/api/v1/payments/${paymentId}/refund`, {
      as: m,
      body: { data: { type: 'Refund', attributes: { amount: 500, idempotencyKey: randomUUID() } } },
    });
    assert.equal(refund.status, 200, refund.raw);
    step('withdrawal');
    const w = await t.request('POST', `/api/v1/wallets/${walletId}/withdraw`, {
      as: m,
      body: { data: { type: 'Withdraw', attributes: { amount: 1000 } } },
    });
    assert.equal(w.status, 201, w.raw);
    withdrawalId = w.body.data.id;
    step('end');
  });
  after(() => t.close());

  const activity = (q = '', as = m) => t.request('GET', `/api/v1/wallets/${walletId}/activity${q}`, { as });
  const all = async (q = '') => {
    const res = await activity(`?page[limit]=50${q}`);
    assert.equal(res.status, 200, res.raw);
    return res.body;
  };

  test('every movement, newest first, with its kind, source and balance changes', async () => {
    const { data, meta } = await all();
    assert.equal(meta.total, data.length);
    const kinds = data.map((a: any) => a.attributes.kind);
    for (const k of ['deposit', 'reward', 'payment', 'refund', 'withdrawal'])
      assert.ok(kinds.includes(k), `${k} in ${kinds}`);
    const times = data.map((a: any) => a.attributes.createdAt);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
    assert.equal(data[0].attributes.kind, 'withdrawal');
    assert.deepEqual(data[0].attributes.source, { type: 'withdrawal', id: withdrawalId });
    assert.equal(data[0].attributes.amount, -1000);
    assert.deepEqual(data[0].attributes.changes, { 'deposit.available': -1000 });
    assert.equal(data[0].attributes.walletId, walletId);
    assert.equal(data[0].type, 'WalletActivity');
    const deposit0 = data.filter((a: any) => a.attributes.kind === 'deposit').at(-1).attributes;
    assert.equal(deposit0.entryKind, 'deposit.initiate');
    assert.equal(deposit0.amount, 10_000);
    assert.equal(deposit0.source.type, 'transaction');
    const reward = data.find((a: any) => a.attributes.kind === 'reward').attributes;
    assert.equal(reward.amount, 700);
    const refund = data.find((a: any) => a.attributes.kind === 'refund').attributes;
    assert.ok(refund.amount > 0, 'a refund gives money back');
    // The net of every movement is the wallet's money now.
    const net = data.reduce((s: number, a: any) => s + a.attributes.amount, 0);
    assert.equal(net, 10_000 + 700 - 2000 + 500 - 1000);
  });

  test('pages: limit, offset, total and links', async () => {
    const { data: everything } = await all();
    const p = await activity('?page[limit]=2&page[offset]=1');
    assert.equal(p.status, 200, p.raw);
    assert.deepEqual(
      p.body.data.map((a: any) => a.id),
      everything.slice(1, 3).map((a: any) => a.id),
    );
    assert.equal(p.body.meta.total, everything.length);
    assert.ok(p.body.links.next);
    const past = await activity('?page[offset]=500');
    assert.deepEqual(past.body.data, []);
    assert.equal(past.body.meta.total, everything.length);
  });

  test('filter[kind]', async () => {
    const withdrawals = await all('&filter[kind]=withdrawal');
    assert.deepEqual(
      withdrawals.data.map((a: any) => a.attributes.source.id),
      [withdrawalId],
    );
    const payments = await all('&filter[kind]=payment');
    assert.ok(payments.data.length >= 2, 'reserve and capture');
    for (const a of payments.data) assert.equal(a.attributes.kind, 'payment');
    const deposits = await all('&filter[kind]=deposit');
    assert.deepEqual(deposits.data.map((a: any) => a.attributes.entryKind).sort(), [
      'deposit.clear',
      'deposit.initiate',
    ]);
    assert.equal((await all('&filter[kind]=gift')).meta.total, 0);
    const bad = await activity('?filter[kind]=bonus');
    assert.equal(bad.status, 400);
    assert.ok((errorsOf(bad)[0]!.meta.allowedFilters as string[]).includes('filter[kind]'));
  });

  test('filter[createdAfter] and filter[createdBefore]', async () => {
    const between = await all(`&filter[createdAfter]=${at.payment}&filter[createdBefore]=${at.withdrawal}`);
    const kinds = new Set(between.data.map((a: any) => a.attributes.kind));
    assert.deepEqual([...kinds].sort(), ['payment', 'refund']);
    const beforeReward = await all(`&filter[createdBefore]=${at.reward}`);
    for (const a of beforeReward.data) assert.equal(a.attributes.kind, 'deposit');
    assert.equal((await all(`&filter[createdAfter]=${at.end}`)).meta.total, 0);
  });

  test("another merchant's wallet, or none, is 404", async () => {
    const theirs = await activity('', other);
    assert.equal(theirs.status, 404, theirs.raw);
    assert.equal(errorsOf(theirs)[0]!.code, 'WalletNotFound');
    const none = await t.request('GET', `/api/v1/wallets/${randomUUID()}/activity`, { as: m });
    assert.equal(none.status, 404);
  });

  test('a withdrawal can be fetched and listed; not by another merchant', async () => {
    const one = await t.request('GET', `/api/v1/withdrawals/${withdrawalId}`, { as: m });
    assert.equal(one.status, 200, one.raw);
    assert.equal(one.body.data.type, 'Withdraw');
    assert.equal(one.body.data.attributes.amount, 1000);
    assert.equal(one.body.data.attributes.split[0].linkedAccountId, accountId);
    const theirs = await t.request('GET', `/api/v1/withdrawals/${withdrawalId}`, { as: other });
    assert.equal(theirs.status, 404, theirs.raw);
    assert.equal(errorsOf(theirs)[0]!.code, 'WithdrawalNotFound');
    const second = await t.request('POST', `/api/v1/wallets/${walletId}/withdraw`, {
      as: m,
      body: { data: { type: 'Withdraw', attributes: { amount: 100 } } },
    });
    assert.equal(second.status, 201, second.raw);
    const list = await t.request('GET', `/api/v1/wallets/${walletId}/withdrawals`, { as: m });
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(
      list.body.data.map((w: { id: string }) => w.id),
      [second.body.data.id, withdrawalId],
    );
    assert.equal(list.body.meta.total, 2);
    const paged = await t.request('GET', `/api/v1/wallets/${walletId}/withdrawals?page[limit]=1&page[offset]=1`, {
      as: m,
    });
    assert.deepEqual(
      paged.body.data.map((w: { id: string }) => w.id),
      [withdrawalId],
    );
    const otherList = await t.request('GET', `/api/v1/wallets/${walletId}/withdrawals`, { as: other });
    assert.equal(otherList.status, 404, otherList.raw);
    assert.equal(errorsOf(otherList)[0]!.code, 'WalletNotFound');
  });

  test('a later deposit shows up first', async () => {
    step('again');
    const { data: before } = await all();
    const res = await deposit(t, m, walletId, 300, accountId);
    assert.equal(res.status, 201, res.raw);
    await clearPending(t, m, walletId);
    const { data } = await all();
    assert.equal(data.length, before.length + 2);
    assert.equal(data[0].attributes.entryKind, 'deposit.clear');
    assert.equal(data[1].attributes.entryKind, 'deposit.initiate');
    assert.equal(data[1].attributes.source.id, res.body.data.id);
  });
});
