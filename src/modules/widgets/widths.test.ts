// The example shop and its widgets at phone widths and on a desktop, in Chromium (as in
// browser.test.ts), with the widget settings a new merchant gets: a switch on the right with its
// label. Nothing overlaps, nothing scrolls sideways, the page and the pay widget show one total,
// and once paid the total is what was paid and the balance toggle is disabled.
// Screenshots go to test-output/widgets/widths/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { seedDemoCustomer } from '../../../examples/merchant/seed.ts';
import { startMerchant } from '../../../examples/merchant/server.ts';
import { systemClock } from '../../clock.ts';
import { createTestApp, type TestApp } from '../../test/harness.ts';
import { launchChromium, recordPageProblems, skipWithoutChromium } from '../../test/chromium.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const OUT = path.join(ROOT, 'test-output/widgets/widths');
const WIDTHS = [360, 375, 390, 414, 1280];
const TALL = 2000;

type Box = { x: number; y: number; width: number; height: number };
type ShopEvent = { name: string; detail: any };

const skip = skipWithoutChromium;

/** Whether two boxes share more than a hairline. */
const overlap = (a: Box, b: Box) =>
  a.x + 0.5 < b.x + b.width && b.x + 0.5 < a.x + a.width && a.y + 0.5 < b.y + b.height && b.y + 0.5 < a.y + a.height;
const inside = (a: Box, outer: Box) =>
  a.x >= outer.x - 0.5 &&
  a.y >= outer.y - 0.5 &&
  a.x + a.width <= outer.x + outer.width + 0.5 &&
  a.y + a.height <= outer.y + outer.height + 0.5;

describe('the shop and its widgets at phone widths, in Chromium', { skip }, () => {
  let t: TestApp;
  let shop: { url: string; close: () => Promise<void> };
  let payUrl: string;
  let browser: Browser;
  let page: Page;
  const failures: string[] = [];

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    t = await createTestApp({ clock: systemClock });
    const m = await t.createMerchant({ captureMode: 'manual' });
    const listen = async (app: TestApp['api']) => {
      await app.listen({ host: '127.0.0.1', port: 0 });
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    };
    const apiUrl = await listen(t.api);
    payUrl = await listen(t.pay);
    const acct = { api: `${apiUrl}/api/v1`, clientId: m.clientId, secret: m.secret };
    const customer = await seedDemoCustomer(acct, {
      tick: async () => void (await t.ctx.jobs.runOnce('kyc-decisions')),
    });
    shop = await startMerchant({ ...acct, payUrl, customer, port: 0, host: 'localhost' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 375, height: TALL } });
    recordPageProblems(page, failures);
    await page.goto(shop.url);
    await frame('wallet-balance').locator('.amount').waitFor();
    await frame('wallet').locator('.amount').waitFor();
    await frame('wallet-rewards').locator('.amount').waitFor();
  });
  after(async () => {
    await browser?.close();
    await shop?.close();
    await t?.close();
  });

  const frame = (kind: string): FrameLocator =>
    page.frameLocator(`service-pay[${kind === 'wallet' ? 'flow' : 'widget'}="${kind}"] iframe`);
  const box = async (f: FrameLocator, selector: string): Promise<Box> => {
    const b = await f.locator(selector).first().boundingBox();
    assert.ok(b, `${selector} is on the page`);
    return b;
  };
  const frameBox = async (kind: string): Promise<Box> => {
    const b = await page
      .locator(`service-pay[${kind === 'wallet' ? 'flow' : 'widget'}="${kind}"] iframe`)
      .boundingBox();
    assert.ok(b, `the ${kind} frame is on the page`);
    return b;
  };
  const text = async (selector: string) => ((await page.locator(selector).textContent()) ?? '').trim();
  const events = (): Promise<ShopEvent[]> => page.evaluate(() => (globalThis as any).shopEvents as ShopEvent[]);
  const shot = async (name: string, ctx: { diagnostic: (s: string) => void }) => {
    const file = path.join(OUT, `${name}.png`);
    // The viewport is as tall as the page (Chromium leaves cross-origin frames below the fold
    // unpainted in a full-page capture); the picture stops where the page does.
    const height = await page.evaluate(() => (globalThis as any).document.body.scrollHeight);
    await page.screenshot({ path: file, clip: { x: 0, y: 0, width: page.viewportSize()!.width, height } });
    ctx.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
  };
  /** After a resize: the frames report their new heights (ResizeObserver → postMessage) and are sized. */
  const settle = () => page.waitForTimeout(400);

  /** What a width must hold: no sideways scroll, and each widget's parts apart and unclipped. */
  async function checkLayout(width: number) {
    const scroll = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
    assert.ok(scroll <= width, `the page scrolls sideways at ${width}px (${scroll}px wide)`);

    const balance = frame('wallet-balance');
    const outer = await frameBox('wallet-balance');
    const parts: Record<string, Box> = {
      switch: await box(balance, 'input#apply'),
      label: await box(balance, '.toggle-label'),
      icon: await box(balance, '.icon'),
      caption: await box(balance, '.caption'),
      amount: await box(balance, '.amount'),
      button: await box(balance, '.action'),
    };
    const names = Object.keys(parts);
    for (const [i, a] of names.entries()) {
      assert.ok(inside(parts[a]!, outer), `${width}px: the balance widget's ${a} is inside its frame`);
      for (const b of names.slice(i + 1))
        assert.ok(!overlap(parts[a]!, parts[b]!), `${width}px: the balance widget's ${a} and ${b} overlap`);
    }
    // The caption and the amount keep a readable width (the switch squeezed them to 17px).
    assert.ok(parts.amount!.width >= 50, `${width}px: the amount is ${parts.amount!.width}px wide`);

    for (const kind of ['wallet', 'wallet-rewards']) {
      const f = frame(kind);
      const o = await frameBox(kind);
      const caption = await box(f, '.caption');
      const amount = await box(f, '.amount');
      const icon = await box(f, '.icon');
      for (const [n, b] of Object.entries({ caption, amount, icon }))
        assert.ok(inside(b, o), `${width}px: the ${kind} widget's ${n} is inside its frame`);
      assert.ok(!overlap(caption, amount) && !overlap(icon, caption) && !overlap(icon, amount), `${width}px: ${kind}`);
    }
    // No frame scrolls or clips: each is as tall and as wide as its content.
    const frames = page.frames().filter((f) => f.url().includes('/_/'));
    assert.equal(frames.length, 3);
    for (const f of frames) {
      const [sw, cw, sh, ch] = await f.evaluate(() => [
        (globalThis as any).document.documentElement.scrollWidth,
        (globalThis as any).document.documentElement.clientWidth,
        Math.ceil((globalThis as any).document.body.getBoundingClientRect().height),
        (globalThis as any).document.documentElement.clientHeight,
      ]);
      assert.ok(sw <= cw, `${width}px: ${f.url()} scrolls sideways (${sw} > ${cw})`);
      assert.ok(Math.abs(sh - ch) <= 1, `${width}px: ${f.url()} is ${ch}px tall for ${sh}px of content`);
    }
  }

  test('at 360, 375, 390, 414 and 1280 px nothing overlaps or scrolls sideways', async (ctx) => {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: TALL });
      await settle();
      await checkLayout(width);
      await shot(`${width}-loaded`, ctx);
    }
  });

  test('the page and the pay widget show one total, with the balance applied or not', async (ctx) => {
    await page.setViewportSize({ width: 375, height: TALL });
    await settle();
    const flowTotal = async () =>
      /Total (\$[\d,.]+)/.exec((await frame('wallet').locator('.caption').textContent()) ?? '')?.[1];
    assert.equal(await text('#total'), '$25.00');
    assert.equal(await flowTotal(), '$25.00');
    assert.equal(await page.locator('#applied-line').isHidden(), true);

    await frame('wallet-balance').getByRole('switch', { name: 'Apply balance' }).click();
    await page.waitForFunction(() =>
      (globalThis as any).shopEvents.some((e: ShopEvent) => e.name === 'onApplyBalanceToggle'),
    );
    await frame('wallet-balance').getByRole('switch', { name: 'Balance applied' }).waitFor();
    assert.equal(await text('#total'), '$25.00', 'applying the balance does not change the total');
    assert.equal(await flowTotal(), '$25.00');
    assert.equal(await text('#applied'), '$25.00', 'the balance covers the whole order');
    await settle();
    await checkLayout(375);
    await shot('375-balance-applied', ctx);
  });

  test('after paying: the total is what was paid and the toggle is disabled', async (ctx) => {
    await frame('wallet').getByRole('button', { name: 'Pay with wallet' }).click();
    await frame('wallet-payment-success')
      .getByRole('heading', { name: 'Payment complete' })
      .waitFor({ timeout: 20_000 });
    const checkout = (await events()).find((e) => e.name === 'checkout')!.detail;
    assert.equal(await text('#total-label'), 'Paid');
    assert.equal(await text('#total'), `$${(checkout.amount / 100).toFixed(2)}`);
    assert.equal(await page.locator('#applied-line').isHidden(), true);
    assert.equal(await text('#paid h3'), 'Order confirmed');

    const balance = frame('wallet-balance');
    await balance.getByText('$30.00').waitFor();
    const toggle = balance.locator('input#apply');
    await balance.locator('input#apply:disabled').waitFor();
    const toggles = (await events()).filter((e) => e.name === 'onApplyBalanceToggle').length;
    await toggle.click({ force: true });
    await page.waitForTimeout(200);
    assert.equal((await events()).filter((e) => e.name === 'onApplyBalanceToggle').length, toggles);

    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: TALL });
      await settle();
      const scroll = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
      assert.ok(scroll <= width, `${width}px: ${scroll}px wide`);
      await shot(`${width}-paid`, ctx);
    }
  });

  test('favicons: the shop and the widget host answer 200, and nothing the page loaded failed', async () => {
    for (const url of [`${shop.url}/favicon.svg`, `${payUrl}/favicon.svg`, `${payUrl}/favicon.ico`]) {
      const res = await fetch(url);
      assert.equal(res.status, 200, url);
      assert.equal(res.headers.get('content-type'), 'image/svg+xml', url);
      assert.match(await res.text(), /^<svg /);
    }
    assert.deepEqual(failures, []);
  });
});
