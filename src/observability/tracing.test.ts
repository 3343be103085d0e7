// Traces (docs/operations.md#traces): a server process with OTEL_EXPORTER_OTLP_ENDPOINT sends
// its spans to an OTLP/HTTP receiver (JSON) on loopback. An authorize of a payment intent is one
// trace: the request's span with its route, merchant and status, the database statements as its
// children; the request's log line and an error document carry the trace id.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { freshDatabaseUrl } from '../test/harness.ts';
import { serverEnv, startServer, type ServerProcess } from '../test/process.ts';
import { remoteApprovedWallet, remoteMerchant } from '../test/remote.ts';

const ADMIN_TOKEN = 'cft_A_JMivxWf2IBEsTW8spNc-b4rSqrXa3vubw8Rd2I6hbaHjXc';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service: string;
}

/** An OTLP/HTTP receiver taking JSON on POST /v1/traces, keeping every span. */
async function otlpReceiver(): Promise<{
  url: string;
  spans: ReceivedSpan[];
  contentTypes: Set<string>;
  close(): Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.add(String(req.headers['content-type']));
      const doc = JSON.parse(body) as {
        resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: RawSpan[] }[] }[];
      };
      for (const rs of doc.resourceSpans) {
        const service = String(attrs(rs.resource.attributes)['service.name']);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: s.kind,
              attributes: attrs(s.attributes),
              service,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

type Attr = { key: string; value: { stringValue?: string; intValue?: number | string; boolValue?: boolean } };
type RawSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Attr[];
};
const attrs = (list: Attr[] = []) =>
  Object.fromEntries(
    list.map((a) => [
      a.key,
      a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue),
    ]),
  );

/** Polls until `check` returns a value (spans are sent in batches, about every second). */
async function eventually<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('traces', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let server: ServerProcess;
  let dir: string;
  before(async () => {
    receiver = await otlpReceiver();
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-tracing-'));
    server = await startServer(
      serverEnv(dir, await freshDatabaseUrl(), ADMIN_TOKEN, {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'coffer-test',
        LOG_LEVEL: 'info',
      }),
    );
    await server.waitFor(/Coffer is running/);
  });
  after(async () => {
    server?.kill();
    await server?.exited;
    await receiver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('an authorize is one trace: the request span (route, merchant, status) over its database statements; the trace id in its log line', async () => {
    const { clientId, call } = await remoteMerchant(server, ADMIN_TOKEN);
    const api = server.ports.api;
    const { walletId } = await remoteApprovedWallet(call, api);
    const intent = await call(api, 'POST', '/payment-intents', {
      data: { type: 'CreatePaymentIntent', attributes: { amount: 1500, walletId } },
    });
    assert.equal(intent.status, 201, JSON.stringify(intent.body));
    const res = await call(api, 'POST', `/payment-intents/${intent.body.data.id}/authorize`, {
      data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1500, idempotencyKey: randomUUID() } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));

    const route = '/api/v1/payment-intents/:paymentIntentId/authorize';
    const root = await eventually('the authorize span', () =>
      receiver.spans.find((s) => s.attributes['http.route'] === route),
    );
    assert.equal(root.name, `POST ${route}`);
    assert.equal(root.kind, 2, 'SERVER');
    assert.equal(root.parentSpanId, undefined);
    assert.equal(root.service, 'coffer-test');
    assert.equal(root.attributes['coffer.merchant_id'], clientId);
    assert.equal(root.attributes['http.response.status_code'], 201);
    assert.equal(root.attributes['http.request.method'], 'POST');
    assert.match(root.traceId, /^[0-9a-f]{32}$/);
    // The statements it ran are its children (the client's lookup, the key check, the batch of writes, ...).
    const statements = await eventually('its statements', () => {
      const found = receiver.spans.filter((s) => s.traceId === root.traceId && s.name === 'db.query');
      return found.length >= 3 ? found : undefined;
    });
    for (const s of statements) {
      assert.equal(s.parentSpanId, root.spanId, `${s.name} ${String(s.attributes['db.query.text']).slice(0, 80)}`);
      assert.equal(s.kind, 3, 'CLIENT');
      assert.equal(s.attributes['db.system.name'], 'postgresql');
      assert.equal(typeof s.attributes['db.query.text'], 'string');
    }
    assert.ok(
      statements.some((s) => /ledger/.test(String(s.attributes['db.query.text']))),
      'the ledger writes are among them',
    );
    // Statement text only: the amount (a parameter) is in no attribute.
    for (const s of statements) assert.doesNotMatch(JSON.stringify(s.attributes), /1500/);
    // Every request is its own trace.
    assert.equal(
      new Set(receiver.spans.filter((s) => s.parentSpanId === undefined && s.kind === 2).map((s) => s.traceId)).size,
      receiver.spans.filter((s) => s.parentSpanId === undefined && s.kind === 2).length,
    );
    assert.ok(
      [...receiver.contentTypes].every((c) => c.startsWith('application/json')),
      [...receiver.contentTypes].join(),
    );

    // The request's log line carries the trace id.
    const line = await eventually('the request log line', () =>
      server
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; url?: string; traceId?: string })
        .find((l) => l.msg === 'request' && l.url?.endsWith('/authorize')),
    );
    assert.equal(line.traceId, root.traceId);
  });

  test("an error document's meta carries the request's trace id", async () => {
    const { call } = await remoteMerchant(server, ADMIN_TOKEN);
    const res = await call(server.ports.api, 'GET', `/users/${randomUUID()}`);
    assert.equal(res.status, 404);
    const traceId = res.body.errors[0].meta.traceId as string;
    assert.match(traceId, /^[0-9a-f]{32}$/);
    const span = await eventually('the span of the 404', () =>
      receiver.spans.find((s) => s.traceId === traceId && s.parentSpanId === undefined),
    );
    assert.equal(span.attributes['http.route'], '/api/v1/users/:userId');
    assert.equal(span.attributes['http.response.status_code'], 404);
  });
});
