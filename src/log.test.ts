// The log: one line per request with its fields, and redaction still on for every other line
// (the request line is written by a logger without the redaction paths: src/http/server.ts).
// Database errors are logged with their class, code and message, never the values they carry.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createServer } from './http/server.ts';
import { createTestApp, createUser, logCapture, type Merchant, type TestApp } from './test/harness.ts';
import { createWallet } from './test/money.ts';

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

  test("a gift's or a barcode's lookUpId (a bearer secret) is redacted from the logged URL", async () => {
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: m,
      body: { data: { type: 'Gift', attributes: { amount: 500 } } },
    });
    assert.equal(gift.status, 201, gift.raw);
    const user = await createUser(t, m);
    const wallet = await createWallet(t, m, user.id);
    const barcode = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`, { as: m });
    assert.equal(barcode.status, 201, barcode.raw);
    const giftId: string = gift.body.data.id;
    const barcodeId: string = barcode.body.data.attributes.lookUpId;
    const reads: [string, number, string][] = [
      [`/api/v1/gifts/${giftId}`, 200, '/api/v1/gifts/[redacted]'],
      [`/api/v1//gifts/${giftId}/?include=x`, 400, '/api/v1//gifts/[redacted]/?include=[redacted]'],
      [`/api/v1/wallets/barcode/${barcodeId}`, 200, '/api/v1/wallets/barcode/[redacted]'],
      [`/api/v1/simulation/barcodes/${barcodeId}`, 200, '/api/v1/simulation/barcodes/[redacted]'],
      // The router decodes the path, so an escaped letter still reaches the gift.
      [`/api/v1/%67ifts/${giftId}`, 200, '/api/v1/gifts/[redacted]'],
    ];
    for (const [i, [url, status, logged]] of reads.entries()) {
      const res = await t.request('GET', url, { as: m, headers: { 'x-request-id': `log-test-look-up-${i}` } });
      assert.equal(res.status, status, `${url}: ${res.raw}`);
      assert.equal(parsed().find((l) => l.reqId === `log-test-look-up-${i}`)?.url, logged);
    }
    const text = lines.join('\n');
    for (const secret of [giftId, barcodeId]) assert.ok(!text.includes(secret), `${secret} was logged`);
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

  // Values no line may show: a query's parameters, and what PostgreSQL quotes of them.
  const EMAIL = 'leak.probe@example.com';
  const CARD = '4000056655665556';
  const assertNoValues = (text: string) => {
    for (const leaked of [EMAIL, 'leak.probe', CARD, '4000 0566'])
      assert.ok(!text.includes(leaked), `${leaked} was logged: ${text}`);
  };

  test("a job's failed query is logged with its class, code and message, never its parameters", async () => {
    const before = lines.length;
    // PostgreSQL's message quotes the value it could not read.
    t.ctx.jobs.register({
      name: 'log-test-query',
      intervalMs: 60_000,
      run: async () => {
        await t.ctx.db.execute(sql`select ${EMAIL}::int as n, ${CARD}::text as c`);
        return 1;
      },
    });
    assert.equal(await t.ctx.jobs.runOnce('log-test-query'), 0);
    const text = lines.slice(before).join('\n');
    assertNoValues(text);
    const line = parsed()
      .slice(before)
      .find((l) => l.msg === 'job failed' && l.job === 'log-test-query');
    assert.ok(line, text);
    const err = line.err as { type: string; message: string; code?: string; stack: string; cause?: { code: string } };
    assert.equal(err.type, 'DrizzleQueryError');
    assert.equal(err.message, 'Failed query');
    assert.equal(err.cause?.code, '22P02');
    assert.match(JSON.stringify(err.cause), /invalid input syntax for type integer/);
    assert.match(err.stack, /\n\s+at /, 'the stack frames are kept');
  });

  test('a 500 from a failed query logs its code and message, never its parameters or detail', async () => {
    const app = createServer({ listener: 'log-test', config: t.ctx.config, clock: t.clock, logger: t.ctx.log });
    // A unique violation: PostgreSQL's detail quotes the duplicate key's value.
    app.post('/probe', { schema: { hide: true } }, async () => {
      await t.ctx.db.transaction(async (tx) => {
        await tx.execute(sql`create temp table leak_probe (email text primary key, card text) on commit drop`);
        await tx.execute(sql`insert into leak_probe values (${EMAIL}, ${CARD}), (${EMAIL}, ${CARD})`);
      });
      return {};
    });
    await app.ready();
    const before = lines.length;
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/probe',
        headers: { 'x-request-id': 'log-test-500', 'content-type': 'application/json' },
        payload: '{}',
      });
      assert.equal(res.statusCode, 500);
    } finally {
      await app.close();
    }
    const text = lines.slice(before).join('\n');
    assertNoValues(text);
    assert.ok(!text.includes('already exists'), `the detail was logged: ${text}`);
    const line = parsed()
      .slice(before)
      .find((l) => l.reqId === 'log-test-500' && l.msg === 'unhandled error');
    assert.ok(line, text);
    const err = JSON.stringify(line.err);
    assert.match(err, /"code":"23505"/);
    assert.match(err, /duplicate key value violates unique constraint \\"leak_probe_pkey\\"/);
  });
});
