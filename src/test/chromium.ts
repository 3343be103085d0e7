// Debian's Chromium for the browser tests (playwright-core never downloads a browser), launched
// the same way by each, and what makes a page fail a test.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * A browser test's `skip`: skipped where there is no Chromium (a plain `npm test` on a new
 * machine); CI sets REQUIRE_BROWSER so a missing browser fails instead.
 */
export const skipWithoutChromium =
  existsSync(CHROMIUM) || process.env.REQUIRE_BROWSER
    ? false
    : `no Chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
}

/**
 * Records into `problems` what goes wrong on the page: uncaught errors, console errors (and
 * warnings, if asked), and answers of 400 and above except those `ignore` takes.
 */
export function recordPageProblems(
  page: Page,
  problems: string[],
  opts: { warnings?: boolean; ignore?: (status: number, url: URL) => boolean } = {},
): void {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || (opts.warnings && msg.type() === 'warning'))
      problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  page.on('response', (res) => {
    if (opts.ignore?.(res.status(), new URL(res.url()))) return;
    if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
  });
}
