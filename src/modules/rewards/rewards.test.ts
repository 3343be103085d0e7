// Rewards (Accrue's Rewards operations, docs/money.md): issue to a wallet or a phone number
// (immediate or pre-issued), claim when a wallet is opened, list, read, change, cancel (what
// is unspent goes back through the ledger) and expiry. Through HTTP, with bad input, another
// merchant's ids, the ledger checked after.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, createUser, errorsOf, phone, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, createWallet, fundedWallet } from '../../test/money.ts';

const DAY = 86_400_000;

const issue = (t: TestApp, m: Merchant, attributes: Record<string, unknown>) =>
  t.request('POST', '/api/v1/rewards', {
    as: m,
    body: { data: { type: 'IssueReward', attributes: { amount: 100, idempotencyKey: randomUUID(), ...attributes } } },
  });
const get = (t: TestApp, m: Merchant, id: string) => t.request('GET', `/api/v1/rewards/${id}`, { as: m });
const list = (t: TestApp, m: Merchant, query = '') => t.request('GET', `/api/v1/rewards${query}`, { as: m });
const update = (
  t: TestApp,
  m: Merchant,
  id: string,
  attributes: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) =>
  t.request('PATCH', `/api/v1/rewards/${id}`, {
    as: m,
    body: { data: { type: 'UpdateReward', attributes, ...extra } },
  });
const cancel = (t: TestApp, m: Merchant, id: string) => t.request('DELETE', `/api/v1/rewards/${id}`, { as: m });
const spend = (t: TestApp, m: Merchant, walletId: string, amount: number) =>
  t.request('POST', '/api/v1/payments', {
    as: m,
    body: { data: { type: 'CreatePayment', attributes: { walletId, amount } } },
  });

/** What the merchant has funded in rewards so far (its funding account runs negative). */
async function funded(t: TestApp, m: Merchant): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(
    await t.ctx.db.execute(
      sql`select coalesce(sum(p.amount), 0) as n from ledger_postings p join ledger_accounts a on a.id = p.account_id
          where a.owner_type = 'client' and a.owner_id = ${m.clientId} and a.code = 'merchant.rewards'`,
    ),
  );
  return -Number(row!.n);
}

async function topicsAbout(t: TestApp, m: Merchant, id: string): Promise<string[]> {
  const res = await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as: m });
  return (res.body.data as any[])
    .filter((e) => e.relationships.event.data.id === id)
    .reverse()
    .map((e) => `${e.attributes.topic}:${e.attributes.payload.included[0].attributes.status}`);
}

describe('rewards', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test('to a wallet, or to a phone number whose user has one: credited at once (immediate, Credited), 200 with every member Accrue requires; RewardCreated; idempotent', async () => {
    const { wallet, user } = await fundedWallet(t, m, 0);
    const before = await funded(t, m);
    const byWallet = await issue(t, m, {
      walletId: wallet.id,
      amount: 300,
      message: 'Thanks!',
      reasonCode: 'CX-1',
      costCenter: 'SUPPORT',
      notificationEmail: 'agent@shop.example',
    });
    assert.equal(byWallet.status, 200, byWallet.raw);
    const r = byWallet.body.data;
    assert.equal(r.type, 'Reward');
    assert.equal(r.links.self, `http://api.test/api/v1/rewards/${r.id}`);
    const now = t.clock.now().toISOString();
    assert.deepEqual(r.attributes, {
      kind: 'immediate',
      amount: 300,
      walletId: wallet.id,
      status: 'Credited',
      canUpdate: false,
      canCancel: true,
      claimExpiresAt: null,
      message: 'Thanks!',
      reasonCode: 'CX-1',
      costCenter: 'SUPPORT',
      notificationEmail: 'agent@shop.example',
      phoneNumber: null,
      reversedAmount: 0,
      updatedAt: now,
      createdAt: now,
    });
    const byPhone = await issue(t, m, { phoneNumber: user.attributes.profile.phoneNumber, amount: 200 });
    assert.equal(byPhone.status, 200, byPhone.raw);
    assert.deepEqual(
      [
        byPhone.body.data.attributes.kind,
        byPhone.body.data.attributes.status,
        byPhone.body.data.attributes.walletId,
        byPhone.body.data.attributes.phoneNumber,
      ],
      ['immediate', 'Credited', wallet.id, user.attributes.profile.phoneNumber],
    );
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 500);
    assert.equal((await funded(t, m)) - before, 500);
    assert.deepEqual(await topicsAbout(t, m, r.id), ['RewardCreated:Credited']);

    const key = randomUUID();
    const first = await issue(t, m, { walletId: wallet.id, idempotencyKey: key });
    const again = await issue(t, m, { walletId: wallet.id, idempotencyKey: key });
    assert.equal(again.raw, first.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const reused = await issue(t, m, { walletId: wallet.id, idempotencyKey: key, amount: 101 });
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 600);
    await assertLedgerSound(t);
  });

  test('to a number without a wallet: pre-issued (Created, no money moves, one per number), changed, then claimed when a wallet is opened for it', async () => {
    const number = phone();
    const before = await funded(t, m);
    const res = await issue(t, m, { phoneNumber: number, amount: 400, notificationEmail: 'agent@shop.example' });
    assert.equal(res.status, 200, res.raw);
    const r = res.body.data;
    assert.deepEqual(
      {
        kind: r.attributes.kind,
        status: r.attributes.status,
        walletId: r.attributes.walletId,
        canUpdate: r.attributes.canUpdate,
        canCancel: r.attributes.canCancel,
      },
      { kind: 'preIssued', status: 'Created', walletId: null, canUpdate: true, canCancel: true },
    );
    assert.equal(r.attributes.claimExpiresAt, new Date(t.clock.now().getTime() + 90 * DAY).toISOString());
    assert.equal(await funded(t, m), before, 'nothing moves until it is claimed');
    const twice = await issue(t, m, { phoneNumber: number });
    assert.equal(twice.status, 409);
    assert.equal(errorsOf(twice)[0]!.code, 'PreIssuedConflict');
    assert.equal(errorsOf(twice)[0]!.meta.existingId, r.id, 'the reward that waits');
    assert.ok(errorsOf(twice)[0]!.links!.about!.endsWith(`/api/v1/rewards/${r.id}`));
    assert.equal(
      (await issue(t, other, { phoneNumber: number })).status,
      200,
      "another merchant's rewards are its own",
    );

    const changed = await update(t, m, r.id, { amount: 450, message: 'Welcome!' });
    assert.equal(changed.status, 200, changed.raw);
    assert.deepEqual([changed.body.data.attributes.amount, changed.body.data.attributes.message], [450, 'Welcome!']);

    // A user with that number appears (no wallet yet: still waiting), then opens a wallet.
    const user = await createUser(t, m, { phoneNumber: number });
    assert.equal((await issue(t, m, { phoneNumber: number })).status, 409, 'a user without a wallet still waits');
    const wallet = await createWallet(t, m, user.id);
    const claimed = (await get(t, m, r.id)).body.data.attributes;
    assert.deepEqual(
      [claimed.status, claimed.walletId, claimed.canUpdate, claimed.canCancel],
      ['Claimed', wallet.id, false, true],
    );
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 450);
    assert.equal((await funded(t, m)) - before, 450);
    assert.deepEqual(await topicsAbout(t, m, r.id), [
      'RewardCreated:Created',
      'RewardUpdated:Created',
      'RewardUpdated:Claimed',
    ]);
    const late = await update(t, m, r.id, { message: 'too late' });
    assert.equal(late.status, 409);
    assert.equal(errorsOf(late)[0]!.code, 'InvalidState');
    // Now the number has a wallet: credited at once.
    assert.equal((await issue(t, m, { phoneNumber: number, amount: 50 })).body.data.attributes.status, 'Credited');
    await assertLedgerSound(t);
  });

  test('bad input is 400 and writes nothing; a Closed wallet is 409 WalletNotIssuable; an unknown wallet 400 WalletNotFound', async () => {
    const { wallet, user } = await fundedWallet(t, m, 0);
    const before = await list(t, m);
    for (const attributes of [
      { walletId: wallet.id, phoneNumber: user.attributes.profile.phoneNumber },
      {},
      { phoneNumber: '555-0100' },
      { walletId: wallet.id, amount: 0 },
      { walletId: wallet.id, notificationEmail: 'not-an-email' },
      { walletId: wallet.id, message: '' },
      { walletId: wallet.id, color: 'red' },
    ]) {
      const res = await issue(t, m, attributes);
      assert.equal(res.status, 400, `${JSON.stringify(attributes)}: ${res.raw}`);
    }
    const unknown = await issue(t, m, { walletId: randomUUID() });
    assert.equal(unknown.status, 400);
    assert.equal(errorsOf(unknown)[0]!.code, 'WalletNotFound');
    assert.equal((await issue(t, other, { walletId: wallet.id })).status, 400, "another merchant's wallet is unknown");
    await t.ctx.db.execute(sql`update wallets set status = 'Closed' where id = ${wallet.id}`);
    for (const attributes of [{ walletId: wallet.id }, { phoneNumber: user.attributes.profile.phoneNumber }]) {
      const closed = await issue(t, m, attributes);
      assert.equal(closed.status, 409, closed.raw);
      assert.equal(errorsOf(closed)[0]!.code, 'WalletNotIssuable');
    }
    assert.equal((await list(t, m)).body.meta.total, before.body.meta.total);
    assert.equal((await balanceOf(t, m, wallet.id)).total.total, 0);
  });

  test("read and list: another merchant's or an unknown id is 200 data: null (Accrue's answer); filters by phone number (as issued or the holder's) and status; paged", async () => {
    const lm = await t.createMerchant();
    const { wallet, user } = await fundedWallet(t, lm, 0);
    const credited = (await issue(t, lm, { walletId: wallet.id, amount: 10 })).body.data;
    const waiting = (await issue(t, lm, { phoneNumber: phone(), amount: 20 })).body.data;
    const cancelled = (await issue(t, lm, { phoneNumber: phone(), amount: 30 })).body.data;
    assert.equal((await cancel(t, lm, cancelled.id)).status, 204);

    const one = await get(t, lm, credited.id);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.data, credited);
    for (const [as, id] of [
      [other, credited.id],
      [lm, randomUUID()],
    ] as const) {
      const res = await get(t, as, id);
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(res.body, { data: null });
    }
    assert.equal((await get(t, lm, 'nope')).status, 400);

    const all = await list(t, lm);
    assert.deepEqual(
      all.body.data.map((r: any) => r.id),
      [cancelled.id, waiting.id, credited.id],
      'newest first',
    );
    assert.equal(all.body.meta.total, 3);
    const byHolder = await list(
      t,
      lm,
      `?filter[phoneNumber]=${encodeURIComponent(user.attributes.profile.phoneNumber)}`,
    );
    assert.deepEqual(
      byHolder.body.data.map((r: any) => r.id),
      [credited.id],
      "the wallet's user's number",
    );
    const byIssued = await list(t, lm, `?filter[phoneNumber]=${encodeURIComponent(waiting.attributes.phoneNumber)}`);
    assert.deepEqual(
      byIssued.body.data.map((r: any) => r.id),
      [waiting.id],
    );
    assert.deepEqual(
      (await list(t, lm, '?filter[status]=Cancelled')).body.data.map((r: any) => r.id),
      [cancelled.id],
    );
    assert.deepEqual(
      (await list(t, lm, '?filter[status]=Created')).body.data.map((r: any) => r.id),
      [waiting.id],
    );
    const page = await list(t, lm, '?page[limit]=1&page[offset]=1');
    assert.deepEqual(
      page.body.data.map((r: any) => r.id),
      [waiting.id],
    );
    assert.equal(page.body.links.next, 'http://api.test/api/v1/rewards?page[limit]=1&page[offset]=2');
    assert.equal(
      (await list(t, other)).body.data.filter((r: any) => [credited.id, waiting.id].includes(r.id)).length,
      0,
    );
    for (const q of ['?filter[status]=Spent', '?filter[walletId]=x', '?page[limit]=0', '?sort=amount'])
      assert.equal((await list(t, lm, q)).status, 400, q);
  });

  test("PATCH: only a waiting pre-issued reward; an id in the body must be the path's (409 Conflict); bad bodies 400; another merchant's 404", async () => {
    const { wallet } = await fundedWallet(t, m, 0);
    const credited = (await issue(t, m, { walletId: wallet.id })).body.data;
    const waiting = (await issue(t, m, { phoneNumber: phone() })).body.data;
    const notNow = await update(t, m, credited.id, { message: 'x' });
    assert.equal(notNow.status, 409);
    assert.equal(errorsOf(notNow)[0]!.code, 'InvalidState');
    const conflict = await update(t, m, waiting.id, { amount: 999 }, { id: credited.id });
    assert.equal(conflict.status, 409);
    assert.equal(errorsOf(conflict)[0]!.code, 'Conflict');
    assert.equal(errorsOf(conflict)[0]!.source?.pointer, '/data/id');
    for (const attributes of [
      {},
      { amount: 0 },
      { phoneNumber: phone() },
      { walletId: wallet.id },
      { notificationEmail: 'x' },
    ]) {
      assert.equal((await update(t, m, waiting.id, attributes)).status, 400, JSON.stringify(attributes));
    }
    const theirs = await update(t, other, waiting.id, { amount: 1 });
    assert.equal(theirs.status, 404);
    assert.equal(errorsOf(theirs)[0]!.code, 'NotFound');
    assert.equal((await get(t, m, waiting.id)).body.data.attributes.amount, 100, 'unchanged');
    const ok = await update(t, m, waiting.id, { costCenter: 'MARKETING' }, { id: waiting.id });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.data.attributes.costCenter, 'MARKETING');
  });

  test('DELETE: a waiting reward is cancelled (204); a credited one gives back what is unspent, newest rewards holding what is left; spent or cancelled is 409', async () => {
    const { wallet } = await fundedWallet(t, m, 0);
    const before = await funded(t, m);
    const older = (await issue(t, m, { walletId: wallet.id, amount: 100 })).body.data;
    t.clock.advance(1000);
    const newer = (await issue(t, m, { walletId: wallet.id, amount: 100 })).body.data;
    const paid = await spend(t, m, wallet.id, 150); // merchant rewards first: all of the older, half of the newer
    assert.equal(paid.status, 200, paid.raw);
    assert.equal((await get(t, m, older.id)).body.data.attributes.canCancel, false, 'spent');
    assert.equal((await get(t, m, newer.id)).body.data.attributes.canCancel, true);
    const spent = await cancel(t, m, older.id);
    assert.equal(spent.status, 409);
    assert.equal(errorsOf(spent)[0]!.code, 'InvalidState');
    const res = await cancel(t, m, newer.id);
    assert.equal(res.status, 204, res.raw);
    assert.equal(res.raw, '');
    const after_ = (await get(t, m, newer.id)).body.data.attributes;
    assert.deepEqual([after_.status, after_.reversedAmount, after_.canCancel], ['Cancelled', 50, false]);
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 0);
    assert.equal((await funded(t, m)) - before, 150, 'the 50 unspent went back to the merchant');
    assert.deepEqual(await topicsAbout(t, m, newer.id), ['RewardCreated:Credited', 'RewardUpdated:Cancelled']);
    const again = await cancel(t, m, newer.id);
    assert.equal(again.status, 409);
    assert.equal(errorsOf(again)[0]!.code, 'InvalidState');

    const waiting = (await issue(t, m, { phoneNumber: phone() })).body.data;
    assert.equal((await cancel(t, other, waiting.id)).status, 404);
    assert.equal((await cancel(t, m, randomUUID())).status, 404);
    assert.equal((await cancel(t, m, waiting.id)).status, 204);
    assert.equal((await get(t, m, waiting.id)).body.data.attributes.status, 'Cancelled');
    assert.equal((await funded(t, m)) - before, 150, 'a waiting reward had moved nothing');
    // A refund brings reward money back: a credited reward is cancellable again for what returned.
    const refund = await t.request('POST', `/api/v1/payments/${paid.body.data.id}/refund`, {
      as: m,
      body: { data: { type: 'Refund', attributes: { amount: 150, idempotencyKey: randomUUID() } } },
    });
    assert.equal(refund.status, 200, refund.raw);
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 150);
    assert.equal((await get(t, m, older.id)).body.data.attributes.canCancel, true);
    assert.equal((await cancel(t, m, older.id)).status, 204);
    assert.equal((await get(t, m, older.id)).body.data.attributes.reversedAmount, 100);
    await assertLedgerSound(t);
  });

  test('a pre-issued reward not claimed within 90 days reads Expired, the job records it, and the number may get a new one', async () => {
    const number = phone();
    const r = (await issue(t, m, { phoneNumber: number })).body.data;
    t.clock.advance(90 * DAY);
    const read = (await get(t, m, r.id)).body.data.attributes;
    assert.deepEqual([read.status, read.canUpdate, read.canCancel], ['Expired', false, false]);
    assert.ok((await list(t, m, '?filter[status]=Expired')).body.data.some((x: any) => x.id === r.id));
    assert.equal(errorsOf(await cancel(t, m, r.id))[0]!.code, 'InvalidState');
    assert.equal(errorsOf(await update(t, m, r.id, { amount: 5 }))[0]!.code, 'InvalidState');
    await t.ctx.jobs.runOnce('reward-claim-expiry');
    assert.deepEqual(await topicsAbout(t, m, r.id), ['RewardCreated:Created', 'RewardUpdated:Expired']);
    const fresh = await issue(t, m, { phoneNumber: number });
    assert.equal(fresh.status, 200, fresh.raw);
    // Opening a wallet now claims the new one only.
    const wallet = await createWallet(t, m, (await createUser(t, m, { phoneNumber: number })).id);
    assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 100);
    assert.equal((await get(t, m, r.id)).body.data.attributes.status, 'Expired');
    await assertLedgerSound(t);
  });

  test('racing: a cancel and a checkout spending the same rewards, and pre-issues for one number, never overdraw or duplicate', async () => {
    for (let i = 0; i < 6; i++) {
      const { wallet } = await fundedWallet(t, m, 0);
      const r = (await issue(t, m, { walletId: wallet.id, amount: 300 })).body.data;
      // The cancel starts a little later in some rounds, so both orders happen (on PostgreSQL; PGlite runs them in turn).
      const lag = [0, 5, 15][i % 3]!;
      const [c, p] = await Promise.all([
        new Promise((ok) => setTimeout(ok, lag)).then(() => cancel(t, m, r.id)),
        spend(t, m, wallet.id, 200),
      ]);
      const reversed = (await get(t, m, r.id)).body.data.attributes.reversedAmount;
      const spentAmount = p.status === 200 ? 200 : 0;
      assert.ok(c.status === 204, c.raw);
      assert.equal(reversed + spentAmount, 300, `cancel ${c.status} took ${reversed}, the payment ${p.status}`);
      assert.equal((await balanceOf(t, m, wallet.id)).available.reward.merchant, 0);
    }
    const number = phone();
    const results = await Promise.all(Array.from({ length: 5 }, () => issue(t, m, { phoneNumber: number })));
    assert.equal(results.filter((r) => r.status === 200).length, 1, results.map((r) => r.status).join(','));
    assert.ok(
      results
        .filter((r) => r.status !== 200)
        .every((r) => r.status === 409 && errorsOf(r)[0]!.code === 'PreIssuedConflict'),
    );
    await assertLedgerSound(t);
  });
});
