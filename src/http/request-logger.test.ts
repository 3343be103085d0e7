// A request's logger (req.log) is made when something logs through it, and then logs as the
// child Fastify would have made: the request's id on each line, the redaction on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TestClock } from '../clock.ts';
import { createLogger } from '../log.ts';
import { logCapture, testConfig } from '../test/harness.ts';
import { RequestLogger } from './request-logger.ts';
import { createServer } from './server.ts';

describe('request logger', () => {
  const { stream, lines } = logCapture();
  const config = testConfig();
  const app = createServer({
    listener: 'test',
    config,
    clock: new TestClock(new Date('2026-06-01T12:00:00Z')),
    logger: createLogger({ ...config, logLevel: 'info' }, stream as never),
  });
  let children = 0;
  before(async () => {
    app.get('/quiet', { schema: { hide: true } }, async (_req, reply) => {
      reply.type('application/json');
      return { ok: true };
    });
    app.get('/loud', { schema: { hide: true } }, async (req, reply) => {
      req.log.warn({ secret: 'sk_sandbox_not-for-logs', card: { number: '4242424242424242' } }, 'from the handler');
      req.log.info('a second line');
      reply.type('application/json');
      return { ok: true };
    });
    await app.ready();
    // Fastify hands its own logger to the factory: count the children made of it.
    const child = app.log.child.bind(app.log);
    app.log.child = ((...args: Parameters<typeof child>) => {
      children++;
      return child(...args);
    }) as typeof app.log.child;
  });
  after(() => app.close());

  test('a request that logs nothing through req.log makes no child logger', async () => {
    children = 0;
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await app.inject({ method: 'GET', url: '/quiet', headers: { accept: 'application/json' } })).statusCode,
        200,
      );
    assert.equal(children, 0);
  });

  test("what a handler logs carries the request's id and is redacted; the child is made once", async () => {
    children = 0;
    const res = await app.inject({
      method: 'GET',
      url: '/loud',
      headers: { 'x-request-id': 'lazy-log-1', accept: 'application/json' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(children, 1, 'one child for the two lines');
    const mine = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.reqId === 'lazy-log-1' && l.msg !== 'request');
    assert.deepEqual(
      mine.map((l) => l.msg),
      ['from the handler', 'a second line'],
    );
    assert.equal(mine[0]!.secret, '[redacted]');
    assert.deepEqual(mine[0]!.card, { number: '[redacted]' });
    assert.equal(mine[0]!.level, 40);
  });

  test("its level is the route's, else the parent's, without making the child", () => {
    children = 0;
    assert.equal(new RequestLogger(app.log, { reqId: 'x' }, {}).level, 'info');
    assert.equal(new RequestLogger(app.log, { reqId: 'x' }, { level: 'debug' }).level, 'debug');
    assert.equal(children, 0);
  });
});
