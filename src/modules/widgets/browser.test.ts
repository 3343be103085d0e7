// The widgets in a real browser: Debian's Chromium driven by playwright-core. The example shop
// (examples/merchant) runs on http://localhost:<port>; the Coffer API and widget host listen
// on http://127.0.0.1:<port>, so the page and the widgets are different origins, as in
// production. Screenshots go to test-output/widgets/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { seedDemoCustomer, type DemoCustomer } from '../../../examples/merchant/seed.ts';
import { startMerchant } from '../../../examples/merchant/server.ts';
import { systemClock } from '../../clock.ts';
import { createTestApp, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound } from '../../test/money.ts';
import { launchChromium, skipWithoutChromium } from '../../test/chromium.ts';

const OUT = fileURLToPath(new URL('../../../test-output/widgets/', import.meta.url));

type ShopEvent = { name: string; detail: any };

const skip = skipWithoutChromium;

describe('widgets in Chromium', { skip }, () => {
  let t: TestApp;
  let m: Merchant;
  let customer: DemoCustomer;
  let shop: { url: string; close: () => Promise<void> };
  let payUrl: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    t = await createTestApp({ clock: systemClock });
    m = await t.createMerchant({
      captureMode: 'manual',
      widget: {
        buttonText: 'Pay with Bean Wallet',
        togglePosition: 'left',
        toggleStyle: 'checkbox',
        buttonType: 'link',
        successTitle: 'Thanks for your order!',
        successDescription: 'Your rewards covered <reward> of it.',
      },
    });
    const listen = async (app: TestApp['api']) => {
      await app.listen({ host: '127.0.0.1', port: 0 });
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    };
    const apiUrl = await listen(t.api);
    payUrl = await listen(t.pay);
    const acct = { api: `${apiUrl}/api/v1`, clientId: m.clientId, secret: m.secret };
    customer = await seedDemoCustomer(acct, { tick: async () => void (await t.ctx.jobs.runOnce('kyc-decisions')) });
    shop = await startMerchant({ ...acct, payUrl, customer, port: 0, host: 'localhost' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await shop?.close();
    await t?.close();
  });

  const events = (): Promise<ShopEvent[]> => page.evaluate(() => (globalThis as any).shopEvents as ShopEvent[]);
  const named = async (name: string) => (await events()).filter((e) => e.name === name);
  const frame = (selector: string): FrameLocator => page.frameLocator(`${selector} iframe`);
  const shot = async (name: string, ctx: { diagnostic: (s: string) => void }) => {
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    ctx.diagnostic(`screenshot: ${path.relative(process.cwd(), file)}`);
  };

  async function openShop(): Promise<void> {
    page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(shop.url);
    await frame('service-pay[widget="wallet-balance"]').locator('.amount').waitFor();
    assert.deepEqual(errors, []);
  }

  test('the page loads main.js from the widget host: Ready fires, servicePay is there, the widgets show the wallet', async (ctx) => {
    await openShop();
    await frame('service-pay[widget="wallet-balance"]').getByText('$55.00').waitFor();
    assert.notEqual(new URL(shop.url).origin, new URL(payUrl).origin, 'page and widgets are different origins');
    assert.equal((await named('ServicePay::Ready')).length, 1);
    const api = await page.evaluate(() => Object.keys((globalThis as any).servicePay).sort());
    for (const fn of [
      'setBalanceApplied',
      'setHideBalanceToggle',
      'setWalletWidgetData',
      'onApplyBalanceToggle',
      'onGoToWallet',
      'onGetUserData',
      'onPaymentIntentStart',
      'onPaymentIntentUpdate',
    ]) {
      assert.ok(api.includes(fn), fn);
    }
    const rewards = frame('service-pay[widget="wallet-rewards"]');
    await rewards.getByText('$5.00 in rewards can go toward this purchase.').waitFor();
    // The merchant's settings, applied by the host: a checkbox on the left, a link, the button text.
    const balance = frame('service-pay[widget="wallet-balance"]');
    assert.equal(await balance.getByRole('checkbox', { name: 'Apply balance' }).count(), 1);
    assert.equal(await balance.locator('.toggle.toggle-left').count(), 1);
    assert.equal(await balance.locator('a.action-link', { hasText: 'Go to wallet' }).count(), 1);
    await frame('service-pay[flow="wallet"]').getByRole('button', { name: 'Pay with Bean Wallet' }).waitFor();
    await shot('1-loaded', ctx);
  });

  test('the balance toggle works by keyboard and reports to the page; the page can set it and hide it', async (ctx) => {
    const balance = frame('service-pay[widget="wallet-balance"]');
    const toggle = balance.getByRole('checkbox', { name: 'Apply balance' });
    await toggle.focus();
    await page.keyboard.press('Space');
    await page.waitForFunction(() =>
      (globalThis as any).shopEvents.some((e: ShopEvent) => e.name === 'onApplyBalanceToggle'),
    );
    const [first] = await named('onApplyBalanceToggle');
    assert.deepEqual(first!.detail, {
      applied: true,
      walletId: customer.walletId,
      appliedAmount: 2_500,
      purchaseAmount: 2_500,
    });
    assert.equal(await page.locator('#total').textContent(), '$25.00');
    assert.equal(await page.locator('#applied').textContent(), '$25.00');
    await shot('2-balance-applied', ctx);

    await page.evaluate(() => (globalThis as any).servicePay.setBalanceApplied(false));
    await balance.locator('input#apply:not(:checked)').waitFor();
    await page.evaluate(() => (globalThis as any).servicePay.setHideBalanceToggle(true));
    await balance.locator('input#apply').waitFor({ state: 'detached' });
    await page.evaluate(() => (globalThis as any).servicePay.setHideBalanceToggle(false));
    await balance.locator('input#apply').waitFor();

    await balance.getByRole('button', { name: 'Go to wallet' }).click();
    await page.waitForFunction(() => (globalThis as any).shopEvents.some((e: ShopEvent) => e.name === 'onGoToWallet'));
  });

  test('messages from the wrong origin are ignored on both sides', async () => {
    // To the page: a look-alike message from the page's own origin, not the widget host.
    await page.evaluate(() =>
      (globalThis as any).postMessage(
        {
          type: 'ServicePay::PaymentIntentUpdated',
          data: { id: 'forged', attributes: { status: 'PromotedToPayment' } },
        },
        '*',
      ),
    );
    // To a frame: a message from the widget host's origin that is not the embedding page.
    const widget = page.frames().find((f) => f.url().includes('/_/wallet-balance/'))!;
    await widget.evaluate(() =>
      (globalThis as any).postMessage(
        { type: 'ServicePay::StateUpdated', data: { balanceApplied: false, hideBalanceToggle: true } },
        '*',
      ),
    );
    await page.waitForTimeout(300);
    assert.equal((await named('onPaymentIntentUpdate')).length, 0, 'the forged intent update was dropped');
    assert.equal(
      await frame('service-pay[widget="wallet-balance"]').locator('input#apply').count(),
      1,
      'the forged state was dropped',
    );
  });

  test('the inline wallet flow runs through the merchant backend to a captured payment', async (ctx) => {
    await frame('service-pay[flow="wallet"]').getByRole('button', { name: 'Pay with Bean Wallet' }).click();
    await page.waitForFunction(
      () =>
        (globalThis as any).shopEvents.some(
          (e: ShopEvent) => e.name === 'onPaymentIntentUpdate' && e.detail.status === 'PromotedToPayment',
        ),
      null,
      { timeout: 20_000 },
    );
    const list = await events();
    const order = list
      .map((e) => e.name)
      .filter((n) => ['onGetUserData', 'onPaymentIntentStart', 'checkout', 'onPaymentIntentUpdate'].includes(n));
    assert.deepEqual(order, ['onGetUserData', 'onPaymentIntentStart', 'checkout', 'onPaymentIntentUpdate']);
    const userData = list.find((e) => e.name === 'onGetUserData')!.detail;
    assert.deepEqual(userData, {
      referenceId: customer.referenceId,
      email: customer.email,
      phoneNumber: customer.phoneNumber,
    });
    const start = list.find((e) => e.name === 'onPaymentIntentStart')!.detail;
    const reference = await page.locator('main').getAttribute('data-reference');
    assert.deepEqual(start, { walletId: customer.walletId, amount: 2_500, reference, userData });
    const checkout = list.find((e) => e.name === 'checkout')!.detail;
    assert.equal(list.find((e) => e.name === 'onPaymentIntentUpdate')!.detail.id, checkout.paymentIntentId);

    // Coffer's side: one captured payment for the whole amount, the wallet charged.
    const payment = await t.request('GET', `/api/v1/payments/${checkout.paymentId}`, { as: m });
    assert.equal(payment.body.data.attributes.status, 'Processing');
    assert.equal(payment.body.data.attributes.amount, 2_500);
    const payments = await t.request('GET', `/api/v1/payments?filter[reference]=${reference}`, { as: m });
    assert.equal(payments.body.meta.total, 1);

    // The page: the success widget with the merchant's text and the reward, the balance refreshed.
    const success = frame('service-pay[widget="wallet-payment-success"]');
    await success.getByRole('heading', { name: 'Thanks for your order!' }).waitFor();
    assert.equal((await success.locator('.note').textContent())?.trim(), 'Your rewards covered $5.00 of it.');
    await frame('service-pay[widget="wallet-balance"]').getByText('$30.00').waitFor();
    assert.equal(
      await page.locator('#pay-area').isHidden(),
      true,
      'the shop swapped the pay button for its confirmation',
    );
    await shot('3-paid', ctx);
    await assertLedgerSound(t);
  });

  test("a page that passes a number other than the user's current one is asked to use the updated number", async (ctx) => {
    await page.close();
    await openShop();
    // The shop's session still holds the old number: the wallet refuses and says why.
    await page.route('**/api/me', (route) =>
      route.fulfill({
        json: { referenceId: customer.referenceId, email: customer.email, phoneNumber: '+14155550000' },
      }),
    );
    await frame('service-pay[flow="wallet"]').getByRole('button', { name: 'Pay with Bean Wallet' }).click();
    const alert = frame('service-pay[flow="wallet"]').getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /Use your updated number, or contact support/);
    assert.equal((await named('onPaymentIntentStart')).length, 0, 'no intent was started');
    await shot('4-wrong-phone', ctx);
  });
});
