// /docs (Swagger UI) in Chromium, as in src/console/browser.test.ts: the reference renders under
// its Content-Security-Policy with no violation and no error in the browser's console, and its
// favicon loads. Every listener that serves HTML answers /favicon.ico and /favicon.svg.
// A screenshot goes to test-output/docs/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { buildConsoleListener } from './console.ts';
import { createTestApp, type TestApp } from '../test/harness.ts';
import { launchChromium, recordPageProblems, skipWithoutChromium } from '../test/chromium.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.join(ROOT, 'test-output/docs');

const skip = skipWithoutChromium;

describe('/docs in Chromium', { skip }, () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    t = await createTestApp();
    await t.api.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(t.api.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('renders the reference with no CSP violation or console error; its favicon loads', async (ctx) => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    recordPageProblems(page, errors, { warnings: true });
    await page.addInitScript(() => {
      (globalThis as any).violations = [];
      (globalThis as any).document.addEventListener('securitypolicyviolation', (e: any) =>
        (globalThis as any).violations.push(`${e.violatedDirective} ${e.sourceFile}:${e.lineNumber}`),
      );
    });
    await page.goto(`${url}/docs`);
    await page.locator('.opblock').first().waitFor();
    await page.waitForLoadState('networkidle');
    assert.deepEqual(await page.evaluate(() => (globalThis as any).violations), []);
    assert.deepEqual(errors, []);

    const icons = await page
      .locator('link[rel="icon"]')
      .evaluateAll((links) => links.map((l: any) => l.href as string));
    assert.ok(icons.length > 0, 'the page names a favicon');
    for (const icon of [...icons, `${url}/favicon.ico`]) {
      const res = await page.request.get(icon);
      assert.equal(res.status(), 200, icon);
      assert.equal(res.headers()['content-type'], 'image/svg+xml', icon);
    }
    const file = path.join(OUT, 'docs.png');
    await page.screenshot({ path: file });
    ctx.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
    await page.close();
  });

  test('every listener that serves HTML answers /favicon.ico and /favicon.svg', async () => {
    const consoleApp = await buildConsoleListener(t.ctx);
    try {
      for (const [name, app] of [
        ['api', t.api],
        ['pay', t.pay],
        ['console', consoleApp],
      ] as const) {
        for (const icon of ['/favicon.ico', '/favicon.svg']) {
          const res = await app.inject({ method: 'GET', url: icon });
          assert.equal(res.statusCode, 200, `${name} ${icon}`);
          assert.equal(res.headers['content-type'], 'image/svg+xml', `${name} ${icon}`);
          assert.match(res.body, /^<svg /);
        }
      }
    } finally {
      await consoleApp.close();
    }
  });
});
