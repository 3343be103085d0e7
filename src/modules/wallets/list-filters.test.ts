// GET /api/v1/wallets filters on the wallet (userId, status, creation time), and every list's
// filter errors name the filters the list takes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { createWallet } from '../../test/money.ts';

const WALLET_FILTERS = [
  'filter[phoneNumber]',
  'filter[email]',
  'filter[referenceId]',
  'filter[userId]',
  'filter[status]',
  'filter[createdAfter]',
  'filter[createdBefore]',
];

describe('wallet list filters', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const made: { walletId: string; userId: string; createdAt: string }[] = [];
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
    for (let i = 0; i < 3; i++) {
      const user = await createUser(t, m);
      const wallet = await createWallet(t, m, user.id);
      made.push({ walletId: wallet.id, userId: user.id, createdAt: wallet.attributes.createdAt });
      t.clock.advance(60_000);
    }
    await t.ctx.db.execute(sql`update wallets set status = 'Closed' where id = ${made[1]!.walletId}`);
  });
  after(() => t.close());

  const list = (as: Merchant, q: string) => t.request('GET', `/api/v1/wallets?${q}`, { as });
  const ids = (res: { body: any }) => res.body.data.map((w: { id: string }) => w.id);

  test('filter[userId] lists that user’s wallet; another merchant’s user matches nothing', async () => {
    const res = await list(m, `filter[userId]=${made[0]!.userId}`);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(ids(res), [made[0]!.walletId]);
    assert.equal(res.body.meta.total, 1);
    const theirs = await list(other, `filter[userId]=${made[0]!.userId}`);
    assert.equal(theirs.status, 200, theirs.raw);
    assert.deepEqual(ids(theirs), []);
    assert.equal(theirs.body.meta.total, 0);
  });

  test('filter[status]', async () => {
    assert.deepEqual(ids(await list(m, 'filter[status]=Closed')), [made[1]!.walletId]);
    assert.deepEqual(ids(await list(m, 'filter[status]=Active')), [made[2]!.walletId, made[0]!.walletId]);
  });

  test('filter[createdAfter] is inclusive, filter[createdBefore] exclusive; they page and count', async () => {
    const after1 = await list(m, `filter[createdAfter]=${made[1]!.createdAt}`);
    assert.deepEqual(ids(after1), [made[2]!.walletId, made[1]!.walletId]);
    const before2 = await list(m, `filter[createdBefore]=${made[2]!.createdAt}`);
    assert.deepEqual(ids(before2), [made[1]!.walletId, made[0]!.walletId]);
    const paged = await list(m, `filter[createdBefore]=${made[2]!.createdAt}&page[limit]=1&page[offset]=1`);
    assert.deepEqual(ids(paged), [made[0]!.walletId]);
    assert.equal(paged.body.meta.total, 2);
    const past = await list(m, `filter[createdBefore]=${made[2]!.createdAt}&page[limit]=1&page[offset]=5`);
    assert.deepEqual(ids(past), []);
    assert.equal(past.body.meta.total, 2);
    const both = await list(
      m,
      `filter[createdAfter]=${made[1]!.createdAt}&filter[status]=Active&filter[userId]=${made[2]!.userId}`,
    );
    assert.deepEqual(ids(both), [made[2]!.walletId]);
  });

  test('an unknown filter is 400 naming the filters the list takes', async () => {
    const res = await list(m, 'filter[nickname]=x');
    assert.equal(res.status, 400, res.raw);
    const [e] = errorsOf(res);
    assert.equal(e!.code, 'BadRequest');
    assert.equal(e!.source?.parameter, 'filter[nickname]');
    assert.deepEqual(e!.meta.allowedFilters, WALLET_FILTERS);
    for (const f of WALLET_FILTERS) assert.ok(e!.detail.includes(f), e!.detail);
  });

  test('a bad filter value is 400 naming the filters too', async () => {
    for (const q of ['filter[userId]=nope', 'filter[status]=Open', 'filter[createdAfter]=yesterday']) {
      const res = await list(m, q);
      assert.equal(res.status, 400, `${q}: ${res.raw}`);
      const [e] = errorsOf(res);
      assert.equal(e!.source?.parameter, q.split('=')[0], q);
      assert.deepEqual(e!.meta.allowedFilters, WALLET_FILTERS, q);
      assert.match(e!.detail, /this list's filters are filter\[phoneNumber\]/, q);
    }
  });

  test('a list without filters says so; other lists name their own', async () => {
    const none = await t.request('GET', '/api/v1/counterparties?filter[status]=x', { as: m });
    assert.equal(none.status, 400, none.raw);
    assert.deepEqual(errorsOf(none)[0]!.meta.allowedFilters, []);
    assert.match(errorsOf(none)[0]!.detail, /this list takes no filters/);
    const intents = await t.request('GET', '/api/v1/payment-intents?filter[walletIdd]=x', { as: m });
    assert.equal(intents.status, 400, intents.raw);
    assert.ok((errorsOf(intents)[0]!.meta.allowedFilters as string[]).includes('filter[status]'));
    // Not a filter: no allowedFilters.
    const other = await list(m, 'foo=bar');
    assert.equal(other.status, 400);
    assert.equal(errorsOf(other)[0]!.meta.allowedFilters, undefined);
  });
});
