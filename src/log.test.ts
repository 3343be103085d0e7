// The log: one line per request with its fields, and redaction still on for every other line
// (the request line is written by a logger without the redaction paths: src/http/server.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, logCapture, type Merchant, type TestApp } from './test/harness.ts';

describe('log', () => {
  let t: TestApp;
  let m: Merchant;
  const { stream, lines } = logCapture();
  before(async () => {
    t = await createTestApp({ logStream: stream });
    m = await t.createMerchant();
  });
  after(() => t.close());

  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

  test('each request is one line with its request id, method, URL, status and time', async () => {
    const res = await t.request('GET', '/api/v1/users?page[limit]=1', {
      as: m,
      headers: { 'x-request-id': 'log-test-1' },
    });
    assert.equal(res.status, 200);
    const mine = parsed().filter((l) => l.reqId === 'log-test-1');
    assert.equal(mine.length, 1, JSON.stringify(mine));
    const line = mine[0]!;
    assert.equal(line.msg, 'request');
    assert.equal(line.method, 'GET');
    assert.equal(line.url, '/api/v1/users?page[limit]=[redacted]');
    assert.equal(line.status, 200);
    assert.equal(typeof line.ms, 'number');
    assert.ok(!JSON.stringify(mine).includes(m.secret), 'no secret in the request line');
  });

  test('query values are redacted from the logged URL, their names kept (e-mails and phone numbers travel there)', async () => {
    const res = await t.request(
      'GET',
      '/api/v1/users?filter[email]=ada.log%40example.com&filter[phoneNumber]=%2B14155550123&page[limit]=2&bare',
      {
        as: m,
        headers: { 'x-request-id': 'log-test-3' },
      },
    );
    assert.equal(res.status, 400, 'an unknown parameter (bare) is refused; the line is written all the same');
    const line = parsed().find((l) => l.reqId === 'log-test-3')!;
    assert.equal(
      line.url,
      '/api/v1/users?filter[email]=[redacted]&filter[phoneNumber]=[redacted]&page[limit]=[redacted]&bare',
    );
    const text = lines.join('\n');
    for (const leaked of ['ada.log', '14155550123']) assert.ok(!text.includes(leaked), `${leaked} was logged`);
  });

  test("other lines are still redacted, the server's and each request's, top level and one level down", async () => {
    const before = lines.length;
    t.api.log.warn({ secret: 'top-level-secret', details: { token: 'nested-token', cvc: '123' } }, 'server line');
    // A request's own logger (req.log) is a child of the same logger.
    t.api.log
      .child({ reqId: 'log-test-2' })
      .warn({ authorization: 'Bearer abc', card: { number: '4242424242424242' } }, 'request line');
    const text = lines.slice(before).join('\n');
    for (const leaked of ['top-level-secret', 'nested-token', '"123"', 'Bearer abc', '4242424242424242'])
      assert.ok(!text.includes(leaked), `${leaked} was logged: ${text}`);
    assert.equal((text.match(/\[redacted\]/g) ?? []).length, 5, text);
  });
});
