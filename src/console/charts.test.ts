// The overview's figures and charts through HTTP, against the payments themselves: they come from
// the hourly rollup (statement-level triggers on payments append deltas; the
// console-payment-rollup job folds them), and must equal a count over the payments table after
// every kind of change (created, captured, refunded, failed, canceled, settled), before and after
// the fold, and for writes grouped into one statement.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import type { App } from '../http/server.ts';
import { buildConsoleListener } from '../listeners/console.ts';
import { dailyPaymentStats } from '../modules/payments/sql.ts';
import { browser, call, signIn, type Browser } from '../test/console-browser.ts';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { fundedWallet } from '../test/money.ts';

const DAY = 86_400_000;

describe('console charts', () => {
  let t: TestApp;
  let app: App;
  let m: Merchant;
  let b: Browser;
  let walletId: string;

  before(async () => {
    t = await createTestApp();
    app = await buildConsoleListener(t.ctx);
    await app.ready();
    m = await t.createMerchant();
    ({
      wallet: { id: walletId },
    } = await fundedWallet(t, m, 500_000));
    await freshSession();
  });
  after(async () => {
    await app.close();
    await t.close();
  });

  /** Sessions last hours: a test that moves the clock by days signs in again. */
  const freshSession = async () => {
    b = browser();
    assert.equal((await signIn(app, b, { role: 'merchant', clientId: m.clientId, secret: m.secret })).statusCode, 303);
  };
  const authorized = async (amount: number, wallet = walletId) => {
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount, walletId: wallet } } },
    });
    assert.equal(intent.status, 201, intent.raw);
    const res = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID() } } },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.included[0].id as string;
  };
  const ok = async (res: Promise<{ status: number; raw: string }>) => {
    const r = await res;
    assert.ok(r.status === 200 || r.status === 201, r.raw);
  };
  const capture = (id: string, amount: number) =>
    ok(
      t.request('POST', `/api/v1/payments/${id}/capture`, {
        as: m,
        body: { data: { type: 'CapturePayment', attributes: { amount } } },
      }),
    );
  const refund = (id: string, amount: number) =>
    ok(
      t.request('POST', `/api/v1/payments/${id}/refund`, {
        as: m,
        body: { data: { type: 'Refund', attributes: { amount, idempotencyKey: randomUUID() } } },
      }),
    );
  const failPull = (id: string) => ok(t.request('POST', `/api/v1/simulation/payments/${id}/fail-bank-pull`, { as: m }));
  const cancel = (id: string) => ok(t.request('POST', `/api/v1/payments/${id}/cancel`, { as: m }));
  const fold = async () => {
    // Folds everything waiting (other test files' merchants' deltas too: they share the database).
    while ((await t.ctx.jobs.runOnce('console-payment-rollup')) > 0);
  };
  const deltasOf = async (clientId: string) =>
    Number(
      rowsOf<{ n: number | string }>(
        await t.ctx.db.execute(
          sql`select count(*) as n from console_payment_rollup_deltas where client_id = ${clientId}`,
        ),
      )[0]!.n,
    );

  /** The first of the chart's 30 UTC days. */
  const since = () => {
    const now = t.clock.now();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 29 * DAY);
  };

  /** The same figures counted from the payments table: what the rollup must equal. */
  async function truth() {
    const rows = rowsOf<Record<string, string | number>>(
      await t.ctx.db.execute(sql`
        select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, count(*) as count, count(*) filter (where status = 'Failed') as failed,
          sum(amount) as amount, coalesce(sum(captured_amount) filter (where status <> 'Failed'), 0) as captured, sum(refunded_amount) as refunded
        from payments where client_id = ${m.clientId} and created_at >= ${since().toISOString()}::timestamptz
        group by 1 order by 1`),
    );
    return rows.map((r) => ({
      day: String(r.day),
      count: Number(r.count),
      failed: Number(r.failed),
      amount: Number(r.amount),
      captured: Number(r.captured),
      refunded: Number(r.refunded),
    }));
  }

  /** The overview page's figures (the cards) and the bars of its per-day charts, by day. */
  async function overview() {
    const res = await call(app, b, 'GET', `/m/${m.clientId}`);
    assert.equal(res.statusCode, 200);
    const figure = (name: string) => new RegExp(`data-figure="${name}">([^<]*)<`).exec(res.body)?.[1];
    const bars = (caption: string) => {
      const chart = res.body
        .split('<figure class="chart">')
        .find((c) => c.includes(`<figcaption>${caption}</figcaption>`));
      assert.ok(chart, caption);
      return Object.fromEntries(
        [...chart.matchAll(/<rect [^>]*><title>(\d\d-\d\d): ([^<]*)<\/title>/g)]
          .filter((x) => x[2] !== '0' && x[2] !== '$0.00')
          .map((x) => [x[1], x[2]]),
      );
    };
    return {
      payments: figure('payments'),
      captured: figure('captured'),
      refunded: figure('refunded'),
      successRate: figure('success-rate'),
      perDay: bars('Payments per day'),
      capturedPerDay: bars('Captured volume per day (UTC)'),
    };
  }

  /** The page shows `expected`, and the rollup (with its deltas) equals the count over payments. */
  async function expectFigures(
    expected: { payments: string; captured: string; refunded: string; successRate: string },
    perDay?: Record<string, string>,
  ) {
    const page = await overview();
    assert.deepEqual(
      { payments: page.payments, captured: page.captured, refunded: page.refunded, successRate: page.successRate },
      expected,
    );
    if (perDay) assert.deepEqual(page.perDay, perDay);
    assert.deepEqual(await dailyPaymentStats(t.ctx.db, m.clientId, since()), await truth());
  }

  test('the figures follow payments as they are created, captured, refunded, failed, canceled and settled, before and after the fold', async () => {
    await expectFigures({ payments: '0', captured: '$0.00', refunded: '$0.00', successRate: '—' });
    const today = t.clock.now().toISOString().slice(5, 10);

    const p1 = await authorized(2_500);
    const p2 = await authorized(1_000);
    const p3 = await authorized(4_000);
    await expectFigures(
      { payments: '3', captured: '$0.00', refunded: '$0.00', successRate: '100.0%' },
      { [today]: '3' },
    );
    assert.ok((await deltasOf(m.clientId)) > 0, 'the changes wait as deltas');

    await capture(p1, 2_500);
    await capture(p2, 1_000);
    await expectFigures({ payments: '3', captured: '$35.00', refunded: '$0.00', successRate: '100.0%' });
    await fold();
    assert.equal(await deltasOf(m.clientId), 0, 'the fold took every delta');
    await expectFigures({ payments: '3', captured: '$35.00', refunded: '$0.00', successRate: '100.0%' });

    // After a fold, changes land in new deltas on top of the folded rows.
    await refund(p1, 500);
    await expectFigures({ payments: '3', captured: '$35.00', refunded: '$5.00', successRate: '100.0%' });
    // A failed bank pull: one payment in three Failed, its capture no longer counted.
    await failPull(p2);
    await expectFigures({ payments: '3', captured: '$25.00', refunded: '$5.00', successRate: '66.7%' });
    // Canceled is not Failed.
    await cancel(p3);
    await expectFigures({ payments: '3', captured: '$25.00', refunded: '$5.00', successRate: '66.7%' });
    // Settling (Processing → Sent) changes none of the figures.
    t.clock.advance(1_000);
    await t.ctx.jobs.runOnce('payment-settlement');
    assert.equal((await t.request('GET', `/api/v1/payments/${p1}`, { as: m })).body.data.attributes.status, 'Sent');
    await expectFigures({ payments: '3', captured: '$25.00', refunded: '$5.00', successRate: '66.7%' });
    await fold();
    await expectFigures(
      { payments: '3', captured: '$25.00', refunded: '$5.00', successRate: '66.7%' },
      { [today]: '3' },
    );

    // The next day: its own bar; a refund of a payment of the day before counts on that day.
    t.clock.advance(DAY);
    await freshSession();
    const tomorrow = t.clock.now().toISOString().slice(5, 10);
    const p4 = await authorized(700);
    await capture(p4, 700);
    await refund(p1, 2_000);
    const page = await overview();
    assert.deepEqual(page.perDay, { [today]: '3', [tomorrow]: '1' });
    assert.deepEqual(page.capturedPerDay, { [today]: '$25.00', [tomorrow]: '$7.00' });
    await expectFigures({ payments: '4', captured: '$32.00', refunded: '$25.00', successRate: '75.0%' });
    await fold();
    await expectFigures({ payments: '4', captured: '$32.00', refunded: '$25.00', successRate: '75.0%' });

    // 30 days on, the first day has left the chart.
    t.clock.advance(29 * DAY);
    await freshSession();
    await expectFigures(
      { payments: '1', captured: '$7.00', refunded: '$0.00', successRate: '100.0%' },
      { [tomorrow]: '1' },
    );
  });

  test('authorizes and captures arriving together (one grouped statement for many payments) are each counted once', async () => {
    const wallets: string[] = [];
    for (let i = 0; i < 6; i++) wallets.push((await fundedWallet(t, m, 50_000)).wallet.id);
    const before = await overview();
    const n = Number(before.payments);
    const ids = await Promise.all(wallets.flatMap((w, i) => [authorized(100 + i, w), authorized(200 + i, w)]));
    await Promise.all(ids.map((id, i) => capture(id, i % 2 === 0 ? 100 + i / 2 : 200 + (i - 1) / 2)));
    const page = await overview();
    assert.equal(Number(page.payments), n + ids.length);
    assert.deepEqual(await dailyPaymentStats(t.ctx.db, m.clientId, since()), await truth());
    await Promise.all(ids.slice(0, 4).map((id) => failPull(id)));
    assert.deepEqual(await dailyPaymentStats(t.ctx.db, m.clientId, since()), await truth());
    await fold();
    assert.deepEqual(await dailyPaymentStats(t.ctx.db, m.clientId, since()), await truth());
    // Another merchant's figures are its own.
    const other = await t.createMerchant();
    assert.deepEqual(await dailyPaymentStats(t.ctx.db, other.clientId, since()), []);
  });
});
