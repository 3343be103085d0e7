// The banner's addresses answer a browser and an API client with where to go, and README.md
// shows the banner `npm start` really prints.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { banner } from '../banner.ts';
import { loadConfig } from '../config.ts';
import { createTestApp, type TestApp } from '../test/harness.ts';

describe("the banner's addresses", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const cases = () =>
    [
      [t.api, '/api/v1', 'Coffer API'],
      [t.api, '/', 'Coffer API'],
      [t.card, '/', 'Coffer secure card API'],
      [t.pay, '/', 'Coffer widget host'],
      [t.admin, '/admin/v1', 'Coffer admin API'],
    ] as const;

  test('answer an API client with JSON: what the listener is, the reference and the console', async () => {
    for (const [app, url, title] of cases()) {
      const res = await app.inject({ method: 'GET', url, headers: { accept: 'application/vnd.api+json' } });
      assert.equal(res.statusCode, 200, `${title} ${url}: ${res.body}`);
      assert.match(String(res.headers['content-type']), /^application\/vnd\.api\+json/);
      const body = res.json();
      assert.equal(body.meta.title, title);
      assert.ok(body.meta.about.length > 40, body.meta.about);
      assert.equal(body.links.console, t.ctx.config.listeners.console.publicUrl);
      assert.match(body.links.openapi, /\/openapi\.json$/);
      if (app !== t.admin) assert.equal(body.links.reference, `${t.ctx.config.listeners.api.publicUrl}/docs`);
    }
    // Without an Accept header (curl): JSON too.
    const plain = await t.api.inject({ method: 'GET', url: '/api/v1' });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.json().meta.title, 'Coffer API');
    // No token needed to learn what the admin listener is; the admin API itself still wants one.
    assert.equal((await t.admin.inject({ method: 'GET', url: '/admin/v1/clients' })).statusCode, 401);
  });

  test('answer a browser with a page of links', async () => {
    for (const [app, url, title] of cases()) {
      const res = await app.inject({
        method: 'GET',
        url,
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      });
      assert.equal(res.statusCode, 200, `${title} ${url}`);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.body, new RegExp(`<h1>${title}</h1>`));
      assert.ok(res.body.includes(`<a href="${t.ctx.config.listeners.console.publicUrl}">`), 'links to the console');
    }
  });
});

test("README.md's sample banner is the one npm start prints", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = /^```\n(Coffer is running[\s\S]*?)\n```$/m.exec(readme)?.[1];
  assert.ok(block, 'the sample banner in README.md');
  const config = { ...loadConfig({ DATA_DIR: '/home/you/coffer/.coffer/data' }), adminToken: 'cft_sample' };
  const real = banner(
    config,
    'pglite',
    { clientId: '01a1fcb6-0000-7000-8000-000000000000', secret: 'sk_sandbox_sample', created: true },
    { showAdminToken: true },
  )
    .split('\n')
    .slice(1);
  // `…` in the README stands for what differs from run to run.
  const sample = block.split('\n');
  sample.forEach((line, i) => {
    const pattern = new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('…', '.*')}$`);
    assert.match(real[i] ?? '', pattern, `README banner line ${i + 1}`);
  });
});
