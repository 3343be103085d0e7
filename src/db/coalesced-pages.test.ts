// Coalesced list pages (coalesced-pages.ts): pages of one shape asked for together go to the
// database as one statement, and each request still gets exactly the page, total and scoping
// it gets when asked alone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, createUser, uniqueEmail, type Merchant, type TestApp } from '../test/harness.ts';
import { createWallet, fundedWallet, intentFor } from '../test/money.ts';
import { pageStats } from './coalesced-pages.ts';

describe('coalesced list pages', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  const emails: string[] = [];
  const wallets: { as: Merchant; id: string; intents: string[] }[] = [];
  before(async () => {
    t = await createTestApp();
    a = await t.createMerchant();
    b = await t.createMerchant();
    for (let i = 0; i < 7; i++) {
      const email = uniqueEmail('pages');
      emails.push(email);
      const u = await createUser(t, a, { email });
      await createWallet(t, a, u.id);
      t.clock.advance(1_000);
    }
    for (let i = 0; i < 3; i++) {
      const u = await createUser(t, b);
      await createWallet(t, b, u.id);
      t.clock.advance(1_000);
    }
    // Money lists: a funded wallet each with a few intents, two of them authorized into payments.
    for (const as of [a, b]) {
      const { wallet } = await fundedWallet(t, as, 50_000);
      const intents = [];
      for (let i = 0; i < 4; i++) {
        intents.push(await intentFor(t, as, wallet.id, 100 + i));
        t.clock.advance(1_000);
      }
      for (const id of intents.slice(0, 2)) {
        const res = await t.request('POST', `/api/v1/payment-intents/${id}/authorize`, {
          as,
          body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 50 } } },
        });
        assert.equal(res.status, 201, res.raw);
      }
      wallets.push({ as, id: wallet.id, intents });
    }
  });
  after(() => t.close());

  /** A response but its error objects' ids (each response's own). */
  const comparable = (res: { status: number; body: any }) => ({
    status: res.status,
    body: res.body.errors
      ? { ...res.body, errors: res.body.errors.map(({ id: _, ...e }: Record<string, unknown>) => e) }
      : res.body,
  });

  /** Pages of several shapes, merchants, limits and offsets, past the end and matching nothing among them. */
  const asks = (): { url: string; as: Merchant }[] => [
    ...[0, 2, 5, 6, 7, 50].flatMap((offset) =>
      [1, 3, 10].map((limit) => ({ url: `/api/v1/users?page[limit]=${limit}&page[offset]=${offset}`, as: a })),
    ),
    ...[0, 1, 3].map((offset) => ({ url: `/api/v1/users?page[limit]=2&page[offset]=${offset}`, as: b })),
    ...emails.slice(0, 4).map((e) => ({ url: `/api/v1/users?filter[email]=${encodeURIComponent(e)}`, as: a })),
    { url: `/api/v1/users?filter[email]=${encodeURIComponent(emails[0]!)}`, as: b }, // another merchant's user: none
    ...[0, 4, 9].map((offset) => ({ url: `/api/v1/wallets?page[limit]=4&page[offset]=${offset}`, as: a })),
    ...[0, 2].map((offset) => ({ url: `/api/v1/wallets?page[limit]=4&page[offset]=${offset}`, as: b })),
    ...wallets.flatMap((w) =>
      [0, 1, 5].map((offset) => ({
        url: `/api/v1/wallets/${w.id}/transactions?page[limit]=2&page[offset]=${offset}`,
        as: w.as,
      })),
    ),
    { url: `/api/v1/wallets/${wallets[0]!.id}/transactions`, as: b }, // another merchant's wallet: 404
    ...wallets.flatMap((w) =>
      ['', '&filter[status]=Promotable', '&filter[status]=PromotedToPayment', '&sort=amount', '&include=payments'].map(
        (q) => ({ url: `/api/v1/payment-intents?page[limit]=3${q}`, as: w.as }),
      ),
    ),
    ...wallets.flatMap((w) =>
      ['', '&filter[status]=Created', '&filter[status]=Sent', `&filter[paymentIntentId]=${w.intents[0]}`].map((q) => ({
        url: `/api/v1/payments?page[limit]=3${q}`,
        as: w.as,
      })),
    ),
    ...wallets.flatMap((w) =>
      [0, 1, 4].map((offset) => ({ url: `/api/v1/webhook-events?page[limit]=3&page[offset]=${offset}`, as: w.as })),
    ),
  ];

  test('pages asked for together: each the page, total and merchant it has when asked alone, in fewer statements', async () => {
    const alone = [];
    for (const ask of asks()) {
      const res = await t.request('GET', ask.url, { as: ask.as });
      assert.equal(
        res.status,
        ask.url.includes('/transactions') && ask.as === b && ask.url.includes(wallets[0]!.id) ? 404 : 200,
        `${ask.url}: ${res.raw}`,
      );
      alone.push(comparable(res));
    }
    assert.equal(alone[0]!.body.meta.total, 8, "a's seven users and its funded wallet's");
    assert.equal(alone.find((_p, i) => asks()[i]!.as === b)!.body.meta.total, 4);
    assert.ok(alone.every((p) => p.status === 404 || p.body.meta.total >= 0));

    const before = { ...pageStats };
    const all = [...asks(), ...asks(), ...asks()];
    const together = await Promise.all(all.map((ask) => t.request('GET', ask.url, { as: ask.as })));
    for (const [i, res] of together.entries()) {
      assert.deepEqual(comparable(res), alone[i % alone.length], all[i]!.url);
    }
    // Coalesced, not each alone: several pages per statement, none fell back to one at a time.
    assert.equal(pageStats.fallbacks, before.fallbacks);
    assert.ok(pageStats.batches > before.batches, 'pages went to the database together');
    assert.ok(
      pageStats.batched - before.batched >= all.length / 2,
      `${pageStats.batched - before.batched} of ${all.length} pages went together`,
    );
  });

  test('a page asked for together with others sees every write answered before it was asked', async () => {
    const first = await t.request('GET', '/api/v1/users?page[limit]=1', { as: a });
    const created = await createUser(t, a, { email: uniqueEmail('pages-late') });
    const pages = await Promise.all(
      Array.from({ length: 10 }, () => t.request('GET', '/api/v1/users?page[limit]=1', { as: a })),
    );
    for (const p of pages) {
      assert.equal(p.body.meta.total, first.body.meta.total + 1);
      assert.equal(p.body.data[0].id, created.id);
    }
  });
});
