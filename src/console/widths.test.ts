// Every console page at a phone's width (375 px), in Chromium (as in browser.test.ts): nothing
// scrolls sideways (wide tables scroll inside their own box), amounts read as dollars, the
// favicon loads and the browser reports no error. Screenshots go to test-output/console/375/.
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
import { launchChromium, recordPageProblems, skipWithoutChromium } from '../test/chromium.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.join(ROOT, 'test-output/console/375');
const WIDTH = 375;

const skip = skipWithoutChromium;

/** Figures that look like amounts (1,234.56) and what comes right before them. */
const AMOUNT = /(-?\$?)\b\d{1,3}(?:,\d{3})*\.\d\d\b(?![\d%.])/g;

describe('the console at 375 px, in Chromium', { skip }, () => {
  let t: TestApp;
  let app: App;
  let url: string;
  let m: Merchant;
  let browser: Browser;
  let page: Page;
  let hookId: string | undefined;
  const failures: string[] = [];
  const favicons: number[] = [];
  /** What the pages checked so far got wrong (each test ends by asserting there is nothing). */
  const problems: string[] = [];

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
    const { wallet, account } = await fundedWallet(t, m, 923_400);
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 8_000, walletId: wallet.id } } },
    });
    const auth = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 8_000, idempotencyKey: 'order-80' } } },
    });
    assert.equal(auth.status, 201, auth.raw);
    const paymentId = auth.body.included[0].id;
    const capture = await t.request('POST', `/api/v1/payments/${paymentId}/capture`, {
      as: m,
      body: { data: { type: 'CapturePayment', attributes: { amount: 8_000 } } },
    });
    assert.equal(capture.status, 200, capture.raw);
    assert.equal((await deposit(t, m, wallet.id, 1_500, account.id)).status, 201);
    await t.ctx.jobs.runOnce('request-log-flush');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: WIDTH, height: 760 } });
    // Favicon answers are counted apart (the test asks for them itself).
    recordPageProblems(page, failures, {
      ignore: (status, url) => {
        if (!url.pathname.startsWith('/favicon')) return false;
        favicons.push(status);
        return true;
      },
    });
  });
  after(async () => {
    // Its pending deliveries canceled: nothing left for the shared database's other tests to send.
    if (hookId) await t.request('DELETE', `/api/v1/webhooks/${hookId}`, { as: m });
    await browser?.close();
    await app?.close();
    await t?.close();
  });

  /** The page now open: no sideways scroll, amounts in dollars; a screenshot. */
  async function check(name: string, ctx: { diagnostic: (s: string) => void }) {
    const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
    if (width > WIDTH) problems.push(`${name} (${new URL(page.url()).pathname}) is ${width}px wide`);
    // Amounts outside code and JSON: each reads $1,234.56.
    const text = await page.evaluate(() => {
      const main = (globalThis as any).document.querySelector('main').cloneNode(true);
      for (const e of main.querySelectorAll('pre, code, time, .id, svg')) e.remove();
      // Each text node apart, so figures in neighbouring cells do not run together.
      const doc = (globalThis as any).document;
      const walker = doc.createTreeWalker(main, 4 /* NodeFilter.SHOW_TEXT */);
      const parts: string[] = [];
      while (walker.nextNode()) parts.push(walker.currentNode.textContent);
      return parts.join(' ');
    });
    for (const [figure, prefix] of text.matchAll(AMOUNT))
      if (!prefix!.endsWith('$')) problems.push(`${name}: "${figure}" has no currency`);
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    ctx.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
  }

  /** Opens the first row's link of the list now open (a detail page), if it has one. */
  async function first(name: string, ctx: { diagnostic: (s: string) => void }) {
    const link = page.locator('main table tbody a').first();
    assert.equal(await link.count(), 1, `${name}: the list has a row`);
    await link.click();
    await page.waitForLoadState();
    await check(name, ctx);
  }

  test('sign-in and every merchant page', async (ctx) => {
    await page.goto(`${url}/sign-in`);
    await check('sign-in', ctx);
    const form = page.locator('form', { has: page.locator('input[name="clientId"]') });
    await form.locator('input[name="clientId"]').fill(m.clientId);
    await form.locator('input[name="secret"]').fill(m.secret);
    await form.locator('button').click();
    await page.waitForURL(`${url}/m/${m.clientId}`);
    await check('overview', ctx);
    assert.equal(await page.locator('[data-figure="captured"]').textContent(), '$80.00');

    const base = `${url}/m/${m.clientId}`;
    for (const [list, detail] of [
      ['users', 'user'],
      ['wallets', 'wallet'],
      ['intents', 'intent'],
      ['payments', 'payment'],
      ['events', 'event'],
      ['webhooks', undefined],
      ['requests', 'request'],
    ] as const) {
      await page.goto(`${base}/${list}`);
      await check(list, ctx);
      if (detail) await first(detail, ctx);
    }
    await page.goto(`${base}/wallets`);
    assert.match((await page.locator('main table').textContent()) ?? '', /\$9,154\.00/);
    assert.deepEqual(problems.splice(0), []);
  });

  test('the operator pages', async (ctx) => {
    await page.click('button:text-is("Sign out")');
    await page.waitForURL(`${url}/sign-in`);
    const form = page.locator('form', { has: page.locator('input[name="adminToken"]') });
    await form.locator('input[name="adminToken"]').fill(ADMIN_TOKEN);
    await form.locator('button').click();
    await page.waitForURL(`${url}/operator`);
    await check('operator', ctx);
    await page.goto(`${url}/operator/merchants/${m.clientId}`);
    await check('operator-merchant', ctx);
    assert.deepEqual(problems.splice(0), []);
  });

  test('the favicon loads, and the browser reported no error', async () => {
    // Headless Chromium does not fetch favicons itself: fetch what the page names, and /favicon.ico.
    assert.deepEqual(
      favicons.filter((s) => s !== 200),
      [],
    );
    await page.goto(`${url}/sign-in`);
    const href = await page.locator('link[rel="icon"]').getAttribute('href');
    for (const icon of [new URL(href!, page.url()).href, `${url}/favicon.ico`]) {
      const res = await page.request.get(icon);
      assert.equal(res.status(), 200, icon);
      assert.equal(res.headers()['content-type'], 'image/svg+xml');
    }
    assert.deepEqual(failures, []);
  });
});
