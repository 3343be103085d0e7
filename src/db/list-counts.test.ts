// The API lists' exact totals (docs/internals.md#counters): meta.total of every list, with and
// without each counted filter, equals the rows the list holds, and the counters (list_counts and
// their deltas, kept by triggers, folded by list-count-fold) equal a count over the tables,
// after inserts, status changes, an intent's expiry, concurrent writes, and the fold.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { desc, eq, sql, type SQLWrapper } from 'drizzle-orm';
import { pageStats } from './coalesced-pages.ts';
import { countedPage, countedTotal, DEEP_OFFSET, totalStats } from './list-counts.ts';
import { events, payments, users } from './schema.ts';
import { rowsOf } from './open.ts';
import { createTestApp, createUser, type Merchant, type TestApp } from '../test/harness.ts';
import { webhookBody } from '../test/fixtures.ts';
import { countsFromTables, countsKept } from '../test/list-counts.ts';
import { fundedWallet, intentFor } from '../test/money.ts';

describe('list totals', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let walletId: string;
  let otherWalletId: string;

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
    ({
      wallet: { id: walletId },
    } = await fundedWallet(t, m, 500_000));
    ({
      wallet: { id: otherWalletId },
    } = await fundedWallet(t, other, 10_000));
  });
  after(() => t.close());

  const authorize = async (as: Merchant, wallet: string, amount: number, attrs: Record<string, unknown> = {}) => {
    const intentId = await intentFor(t, as, wallet, amount);
    const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
      as,
      body: {
        data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID(), ...attrs } },
      },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.included[0].id as string;
  };
  const fold = async () => {
    // Folds everything waiting (other merchants' deltas too).
    while ((await t.ctx.jobs.runOnce('list-count-fold')) > 0);
  };

  /** The list's meta.total, checked against the rows it pages through. */
  const total = async (url: string, as = m) => {
    let rows = 0;
    let first: number | undefined;
    for (let offset = 0; ; offset += 50) {
      const res = await t.request(
        'GET',
        `${url}${url.includes('?') ? '&' : '?'}page[limit]=50&page[offset]=${offset}`,
        { as },
      );
      assert.equal(res.status, 200, res.raw);
      first ??= res.body.meta.total as number;
      assert.equal(res.body.meta.total, first, `${url}: every page has the same total`);
      rows += res.body.data.length;
      if (res.body.data.length < 50) break;
    }
    assert.equal(first, rows, `${url}: meta.total is the rows listed`);
    return rows;
  };
  const count = async (q: ReturnType<typeof sql>) =>
    Number(rowsOf<{ n: number | string }>(await t.ctx.db.execute(q))[0]!.n);

  /** Every list and counted filter against a count over its table; the counters against the tables. */
  async function assertTotals(as: Merchant = m, wallet = walletId) {
    const c = as.clientId;
    assert.equal(
      await total('/api/v1/users', as),
      await count(sql`select count(*) as n from users where client_id = ${c}`),
    );
    assert.equal(
      await total('/api/v1/wallets', as),
      await count(sql`select count(*) as n from wallets where client_id = ${c}`),
    );
    assert.equal(
      await total(`/api/v1/wallets/${wallet}/transactions`, as),
      await count(sql`select count(*) as n from transactions where wallet_id = ${wallet}`),
    );
    assert.equal(
      await total('/api/v1/payment-intents', as),
      await count(sql`select count(*) as n from payment_intents where client_id = ${c}`),
    );
    for (const status of ['Promotable', 'PromotedToPayment', 'Canceled', 'Expired'])
      await total(`/api/v1/payment-intents?filter[status]=${status}`, as);
    await total(
      '/api/v1/payment-intents?filter[status]=PromotedToPayment&filter[initiator]=Merchant&filter[paymentMethod]=Wallet',
      as,
    );
    assert.equal(
      await total('/api/v1/payments', as),
      await count(sql`select count(*) as n from payments where client_id = ${c}`),
    );
    for (const status of ['Created', 'Processing', 'Canceled']) {
      assert.equal(
        await total(`/api/v1/payments?filter[status]=${status}`, as),
        await count(sql`select count(*) as n from payments where client_id = ${c} and status = ${status}`),
      );
    }
    for (const channel of ['web', 'pos']) {
      assert.equal(
        await total(`/api/v1/payments?filter[channel]=${channel}`, as),
        await count(sql`select count(*) as n from payments where client_id = ${c} and channel = ${channel}`),
      );
      await total(`/api/v1/payments?filter[channel]=${channel}&filter[status]=Created`, as);
    }
    assert.equal(
      await total('/api/v1/webhook-events', as),
      await count(sql`select count(*) as n from events where client_id = ${c}`),
    );
    const topics = rowsOf<{ topic: string }>(
      await t.ctx.db.execute(sql`select distinct topic from events where client_id = ${c}`),
    );
    assert.ok(topics.length > 1);
    for (const { topic } of topics) await total(`/api/v1/webhook-events?filter[topic]=${topic}`, as);
    // This file's merchants only: the whole suite shares one database.
    const mine = [m.clientId, other.clientId];
    assert.deepEqual(
      await countsKept(t.ctx.db, mine),
      await countsFromTables(t.ctx.db, mine),
      'the counters equal a count over the tables',
    );
  }

  test('after inserts and status changes, before and after the fold', async () => {
    await createUser(t, m);
    await createUser(t, m, { email: `${randomUUID()}@example.com` });
    const web = await authorize(m, walletId, 1_000, { channel: 'web' });
    await authorize(m, walletId, 2_000, { channel: 'pos', reference: 'order-1' });
    await authorize(m, walletId, 3_000);
    await intentFor(t, m, walletId, 4_000);
    await assertTotals();
    // A capture moves a payment from Created to Processing; a cancel to Canceled.
    const cap = await t.request('POST', `/api/v1/payments/${web}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 1_000 } } },
    });
    assert.equal(cap.status, 200, cap.raw);
    const canceled = await authorize(m, walletId, 500, { channel: 'web' });
    assert.equal((await t.request('POST', `/api/v1/payments/${canceled}/cancel`, { as: m })).status, 200);
    const intent = await intentFor(t, m, walletId, 700);
    assert.equal((await t.request('POST', `/api/v1/payment-intents/${intent}/cancel`, { as: m })).status, 200);
    await assertTotals();
    assert.equal(await total('/api/v1/payments?filter[channel]=web&filter[status]=Processing'), 1);
    assert.equal(await total('/api/v1/payments?filter[reference]=order-1'), 1);
    await fold();
    assert.equal(
      await count(
        sql`select count(*) as n from list_count_deltas where client_id in (${m.clientId}::uuid, ${other.clientId}::uuid)`,
      ),
      0,
      'the fold empties the deltas',
    );
    await assertTotals();
    await assertTotals(other, otherWalletId);
  });

  test('an intent past expiresAt counts as Expired before the expiry job stores it, and after', async () => {
    const before = await total('/api/v1/payment-intents?filter[status]=Expired');
    const promotable = await total('/api/v1/payment-intents?filter[status]=Promotable');
    assert.ok(promotable > 0);
    t.clock.advance(7 * 86_400_000);
    assert.equal(await total('/api/v1/payment-intents?filter[status]=Expired'), before + promotable);
    assert.equal(await total('/api/v1/payment-intents?filter[status]=Promotable'), 0);
    await t.ctx.jobs.runOnce('payment-intent-expiry');
    assert.equal(await total('/api/v1/payment-intents?filter[status]=Expired'), before + promotable);
    await assertTotals();
  });

  test('concurrent writes from several connections', async () => {
    await Promise.all([
      ...Array.from({ length: 12 }, () => createUser(t, m)),
      ...Array.from({ length: 6 }, (_, i) => authorize(m, walletId, 100 + i, { channel: i % 2 ? 'web' : 'pos' })),
      ...Array.from({ length: 4 }, () => intentFor(t, other, otherWalletId, 100)),
    ]);
    await assertTotals();
    await Promise.all([
      fold(),
      ...Array.from({ length: 4 }, (_, i) => authorize(m, walletId, 200 + i, { channel: 'web' })),
      fold(),
    ]);
    await assertTotals();
    await fold();
    await assertTotals();
    await assertTotals(other, otherWalletId);
  });

  test('an offset past the end reads the total alone', async () => {
    const res = await t.request('GET', '/api/v1/payments?page[offset]=10000', { as: m });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.length, 0);
    assert.equal(
      res.body.meta.total,
      await count(sql`select count(*) as n from payments where client_id = ${m.clientId}`),
    );
    const tx = await t.request('GET', `/api/v1/wallets/${walletId}/transactions?page[offset]=10000`, { as: m });
    assert.equal(
      tx.body.meta.total,
      await count(sql`select count(*) as n from transactions where wallet_id = ${walletId}`),
    );
  });

  test("a counted page is read only below its total: at or past it, the page's index is never read (countedPage)", async () => {
    await createUser(t, m);
    const n = await count(sql`select count(*) as n from users where client_id = ${m.clientId}`);
    const statement = (offset: number) =>
      countedPage(t.ctx.db, {
        table: users,
        where: eq(users.clientId, m.clientId),
        orderBy: [desc(users.createdAt), desc(users.id)],
        total: countedTotal(m.clientId, 'users', {}),
        limit: 10,
        offset,
      }) as unknown as SQLWrapper;
    // The plan's line for the page's scan of users (an index scan, or a sequential one on a small table).
    const scanOf = async (offset: number) => {
      const plan = rowsOf<Record<string, string>>(
        await t.ctx.db.execute(sql`explain (analyze, costs off, timing off, summary off) ${statement(offset)}`),
      ).map((r) => Object.values(r)[0]!);
      const line = plan.find((l) => /Scan.* on users\b/.test(l));
      assert.ok(line, plan.join('\n'));
      return line;
    };
    for (const offset of [n, n + 5]) assert.match(await scanOf(offset), /never executed/);
    assert.doesNotMatch(await scanOf(n - 1), /never executed/);
    const rows = (await statement(n - 1)) as unknown as { row: { id: string }; total: number }[];
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.total, n);
  });

  test('an empty first page is one statement: its total is 0, not read again', async () => {
    const none = [
      '/api/v1/payment-intents?filter[status]=Promotable&filter[initiator]=Customer&filter[paymentMethod]=Gift',
      '/api/v1/payments?filter[status]=Returned',
      '/api/v1/webhook-events?filter[topic]=CounterpartyPayoutCreated',
    ];
    for (const url of none) {
      const before = totalStats.alone;
      const res = await t.request('GET', url, { as: m });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.length, 0, url);
      assert.equal(res.body.meta.total, 0, url);
      assert.equal(totalStats.alone, before, `${url}: the total was not read alone`);
      // Past the end of the same list, the total is read alone.
      const past = await t.request('GET', `${url}&page[offset]=5`, { as: m });
      assert.equal(past.body.meta.total, 0, url);
      assert.equal(totalStats.alone, before + 1, `${url}: a page past the end reads its total alone`);
    }
  });

  test("an empty page's total is its list's, for every list and counted filter, each merchant its own", async () => {
    const urls = (wallet: string) => [
      '/api/v1/users',
      '/api/v1/wallets',
      `/api/v1/wallets/${wallet}/transactions`,
      '/api/v1/payment-intents',
      ...['Promotable', 'PromotedToPayment', 'Canceled', 'Expired'].map(
        (s) => `/api/v1/payment-intents?filter[status]=${s}`,
      ),
      '/api/v1/payment-intents?filter[status]=Promotable&filter[initiator]=Customer',
      '/api/v1/payment-intents?filter[status]=PromotedToPayment&filter[initiator]=Merchant&filter[paymentMethod]=Wallet',
      '/api/v1/payments',
      '/api/v1/payments?filter[status]=Created',
      '/api/v1/payments?filter[channel]=web&filter[status]=Processing',
      '/api/v1/webhook-events',
      '/api/v1/webhook-events?filter[topic]=PaymentCreated',
    ];
    // Twice over, the two merchants in turn: the statements are built once per shape and run
    // with each request's values.
    for (let round = 0; round < 2; round++) {
      for (const [as, wallet] of [
        [m, walletId],
        [other, otherWalletId],
      ] as const) {
        for (const url of urls(wallet)) {
          const first = await t.request('GET', url, { as });
          const past = await t.request('GET', `${url}${url.includes('?') ? '&' : '?'}page[offset]=10000`, { as });
          assert.equal(past.status, 200, past.raw);
          assert.equal(past.body.data.length, 0, url);
          assert.equal(
            past.body.meta.total,
            first.body.meta.total,
            `${url}: the empty page's total is the first page's`,
          );
        }
      }
    }
    // Not a count of zero everywhere: the merchants' lists differ.
    const mine = await t.request('GET', '/api/v1/payments?page[offset]=10000', { as: m });
    const theirs = await t.request('GET', '/api/v1/payments?page[offset]=10000', { as: other });
    assert.ok(
      mine.body.meta.total > 0 && mine.body.meta.total !== theirs.body.meta.total,
      `${mine.body.meta.total} and ${theirs.body.meta.total}`,
    );
  });

  test('a deep page (its ids first, then its rows) reads the rows a direct read does, at every offset', async () => {
    const lists = [
      { table: users, orderBy: [desc(users.createdAt), desc(users.id)], list: 'users' },
      { table: payments, orderBy: [desc(payments.createdAt), desc(payments.id)], list: 'payments' },
      {
        table: events,
        orderBy: [desc(events.createdAt), desc(events.id)],
        list: 'events',
        also: { topic: sql<string>`"page"."topic" || '!'` },
      },
    ] as const;
    for (const l of lists) {
      const where = eq(l.table.clientId, m.clientId);
      const n = await count(sql`select count(*) as n from ${l.table} where ${where}`);
      assert.ok(n >= 3, `${l.list}: ${n} rows`);
      for (let offset = 0; offset <= n; offset++) {
        const read = (deep: boolean) =>
          countedPage(t.ctx.db, {
            table: l.table,
            where,
            orderBy: [...l.orderBy],
            total: countedTotal(m.clientId, l.list, {}),
            limit: 2,
            offset,
            deep,
            ...('also' in l ? { also: l.also } : {}),
          }) as unknown as Promise<unknown[]>;
        const direct = await read(false);
        assert.equal(direct.length, Math.min(2, n - offset), `${l.list} at ${offset}`);
        assert.deepEqual(await read(true), direct, `${l.list} at ${offset}`);
      }
    }
  });

  test(`events from page[offset]=${DEEP_OFFSET} on (read by their ids first) go on from the pages before them`, async () => {
    const deep = await t.createMerchant();
    // A webhook, so that each intent's creation records an event.
    const hook = await t.request('POST', '/api/v1/webhooks', {
      as: deep,
      body: webhookBody({ url: 'https://example.com/hook', topics: ['PaymentIntentCreated'] }),
    });
    assert.equal(hook.status, 201, hook.raw);
    const { wallet } = await fundedWallet(t, deep, 100_000);
    const n = DEEP_OFFSET + 6;
    const intents: string[] = [];
    for (let i = 0; i < n; i += 25)
      intents.push(
        ...(await Promise.all(Array.from({ length: Math.min(25, n - i) }, () => intentFor(t, deep, wallet.id, 100)))),
      );
    const page = async (offset: number, limit: number) => {
      const res = await t.request('GET', `/api/v1/webhook-events?page[offset]=${offset}&page[limit]=${limit}`, {
        as: deep,
      });
      assert.equal(res.status, 200, res.raw);
      return res.body as {
        data: { id: string; attributes: { topic: string }; relationships: { event: { data: { id: string } } } }[];
        meta: { total: number };
      };
    };
    const before = await page(DEEP_OFFSET - 4, 10);
    const after = await page(DEEP_OFFSET, 10);
    const total = before.meta.total;
    assert.ok(total >= n, `${total}`);
    assert.equal(after.meta.total, total);
    assert.equal(after.data.length, Math.min(10, total - DEEP_OFFSET));
    assert.deepEqual(
      after.data.slice(0, 6).map((r) => r.id),
      before.data.slice(4).map((r) => r.id),
    );
    // Paged through by 50 (the last pages deep), every event once, each intent's among them.
    const all: string[] = [];
    const about = new Set<string>();
    for (let offset = 0; offset < total; offset += 50) {
      for (const e of (await page(offset, 50)).data) {
        all.push(e.id);
        if (e.attributes.topic === 'PaymentIntentCreated') about.add(e.relationships.event.data.id);
      }
    }
    assert.equal(all.length, total);
    assert.equal(new Set(all).size, total);
    assert.deepEqual([...about].sort(), [...intents].sort());
    // Asked for together, deep pages go to the database as one statement, each its own page.
    const stats = { ...pageStats };
    const together = await Promise.all([page(DEEP_OFFSET, 10), page(DEEP_OFFSET + 2, 3), page(DEEP_OFFSET - 4, 10)]);
    assert.equal(pageStats.fallbacks, stats.fallbacks);
    assert.ok(pageStats.batches > stats.batches, 'the pages went together');
    assert.deepEqual(together[0], after);
    assert.deepEqual(together[1].data, after.data.slice(2, 5));
    assert.deepEqual(together[2], before);
    // Its deliveries canceled, so that no later test's delivery job tries example.com 506 times.
    assert.equal((await t.request('DELETE', `/api/v1/webhooks/${hook.body.data.id}`, { as: deep })).status, 204);
  });
});
