// The console in a real browser: Debian's Chromium driven by playwright-core. A developer signs
// in, finds a payment by its id, replays an event and clears a deposit; the operator signs in
// and signs out everywhere.
// Screenshots of the main pages go to test-output/console/ (CONSOLE_SCREENSHOTS=docs/console
// writes the ones docs/operations.md shows).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { buildConsoleListener } from '../listeners/console.ts';
import type { App } from '../http/server.ts';
import { webhookBody } from '../test/fixtures.ts';
import { ADMIN_TOKEN, createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { deposit, fundedWallet } from '../test/money.ts';
import { launchChromium, skipWithoutChromium } from '../test/chromium.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.resolve(ROOT, process.env.CONSOLE_SCREENSHOTS ?? 'test-output/console');

const skip = skipWithoutChromium;

describe('console in Chromium', { skip }, () => {
  let t: TestApp;
  let app: App;
  let url: string;
  let m: Merchant;
  let browser: Browser;
  let page: Page;
  let paymentId: string;
  let walletId: string;
  let hookId: string | undefined;

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    t = await createTestApp({ env: { CONSOLE_OPERATOR_SIGN_IN: 'true' } });
    app = await buildConsoleListener(t.ctx);
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    m = await t.createMerchant();
    const hook = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ topics: ['*'] }) });
    assert.equal(hook.status, 201, hook.raw);
    hookId = hook.body.data.id;
    const { wallet, account } = await fundedWallet(t, m, 20_000);
    walletId = wallet.id;
    for (const [amount, capture] of [
      [2_500, true],
      [1_200, false],
      [4_000, true],
    ] as const) {
      const intent = await t.request('POST', '/api/v1/payment-intents', {
        as: m,
        body: { data: { type: 'CreatePaymentIntent', attributes: { amount, walletId } } },
      });
      const auth = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: `order-${amount}` } } },
      });
      assert.equal(auth.status, 201, auth.raw);
      paymentId = auth.body.included[0].id;
      if (capture)
        assert.equal(
          (
            await t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
              as: m,
              body: { data: { type: 'CapturePayment', attributes: { amount } } },
            })
          ).status,
          200,
        );
    }
    assert.equal((await deposit(t, m, walletId, 1_500, account.id)).status, 201);
    await t.ctx.jobs.runOnce('request-log-flush');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
  });
  after(async () => {
    // Its pending deliveries canceled: nothing left for the shared database's other tests to send.
    if (hookId) await t.request('DELETE', `/api/v1/webhooks/${hookId}`, { as: m });
    await browser?.close();
    await app?.close();
    await t?.close();
  });

  const shot = async (name: string, ctx: { diagnostic: (s: string) => void }) => {
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file });
    ctx.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
  };

  test('a developer signs in with its Client-ID and secret', async (ctx) => {
    await page.goto(`${url}/`);
    assert.equal(new URL(page.url()).pathname, '/sign-in');
    await shot('sign-in', ctx);
    const form = page.locator('form', { has: page.locator('input[name="clientId"]') });
    await form.locator('input[name="clientId"]').fill(m.clientId);
    await form.locator('input[name="secret"]').fill(m.secret);
    await form.locator('button').click();
    await page.waitForURL(`${url}/m/${m.clientId}`);
    assert.equal(await page.locator('.chart svg').count(), 3, 'three charts');
    const cookie = (await page.context().cookies()).find((c) => c.name === 'coffer_console')!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    await shot('overview', ctx);
  });

  test('finds a payment by its id', async (ctx) => {
    await page.click('nav >> text=Payments');
    await shot('payments', ctx);
    await page.fill('input[name="id"]', paymentId);
    await page.click('form.filters button');
    await page.waitForURL(`${url}/m/${m.clientId}/payments/${paymentId}`);
    assert.equal(await page.locator('h1').textContent(), 'Payment');
    assert.match((await page.locator('ol.timeline').textContent()) ?? '', /Captured \$40\.00/);
    await shot('payment', ctx);
  });

  test('replays an event', async (ctx) => {
    await page.click('nav >> text=Events');
    await page.selectOption('select[name="topic"]', 'PaymentCaptured');
    await page.click('form.filters button');
    await page.locator('table a.id').first().click();
    await page.click('text=Replay to subscribed webhooks');
    await page.waitForSelector('.flash');
    assert.match((await page.locator('.flash').textContent()) ?? '', /Replay queued \(1 pending replay delivery\)/);
    assert.ok((await page.locator('td', { hasText: /^replay$/ }).count()) >= 1);
    await shot('event', ctx);
  });

  test('runs a simulation: clears the pending bank deposit', async (ctx) => {
    await page.goto(`${url}/m/${m.clientId}/wallets/${walletId}`);
    assert.match((await page.locator('table').nth(1).textContent()) ?? '', /Pending/);
    await page.click('text=Clear pending bank deposits');
    await page.waitForSelector('.flash');
    assert.match((await page.locator('.flash').textContent()) ?? '', /1 pending bank deposit cleared/);
    assert.match((await page.locator('body').textContent()) ?? '', /deposit\.clear/);
    await shot('wallet', ctx);
  });

  test('the request log lists the API requests', async (ctx) => {
    await t.ctx.jobs.runOnce('request-log-flush');
    await page.click('nav >> text=Requests');
    assert.ok((await page.locator('tbody tr').count()) > 5);
    assert.match((await page.locator('tbody').textContent()) ?? '', /order-2500/);
    await shot('requests', ctx);
  });

  test('signs out, and the operator signs in with ADMIN_TOKEN', async (ctx) => {
    await page.click('button:text-is("Sign out")');
    await page.waitForURL(`${url}/sign-in`);
    const form = page.locator('form', { has: page.locator('input[name="adminToken"]') });
    await form.locator('input[name="adminToken"]').fill(ADMIN_TOKEN);
    await form.locator('button').click();
    await page.waitForURL(`${url}/operator`);
    assert.match((await page.locator('main').textContent()) ?? '', /System health/);
    await shot('operator', ctx);
  });

  test('the operator signs out everywhere', async () => {
    await page.click('button:text-is("Sign out everywhere")');
    await page.waitForURL(`${url}/sign-in?notice=signed-out-everywhere`);
    assert.match((await page.locator('.flash').textContent()) ?? '', /Signed out everywhere/);
    await page.goto(`${url}/operator`);
    assert.equal(new URL(page.url()).pathname, '/sign-in');
  });
});
