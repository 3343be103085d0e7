// The retry rules of retry.ts, against a scripted fetch: which answers are retried, how long it
// waits, and that a write without an idempotency key is never repeated blindly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { retryingFetch } from '../src/retry.ts';

type Step = { status: number; code?: string; headers?: Record<string, string> } | 'network-error';

function scripted(steps: Step[]) {
  const calls: { method: string; url: string; body: string | null }[] = [];
  const fetch = (async (req: Request) => {
    calls.push({ method: req.method, url: req.url, body: req.method === 'GET' ? null : await req.text() });
    const step = steps[Math.min(calls.length - 1, steps.length - 1)]!;
    if (step === 'network-error') throw new TypeError('fetch failed');
    const body = step.code ? JSON.stringify({ errors: [{ status: String(step.status), code: step.code }] }) : '{}';
    return new Response(body, { status: step.status, headers: step.headers });
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

const opts = (fetch: typeof globalThis.fetch, delays: number[] = []) => ({
  maxRetries: 5,
  baseDelayMs: 1,
  maxDelayMs: 5,
  timeoutMs: 1_000,
  authorizeTimeoutMs: 2_000,
  fetch,
  onRetry: (e: { delayMs: number }) => delays.push(e.delayMs),
});

const post = (url: string, attributes: Record<string, unknown>) =>
  new Request(url, {
    method: 'POST',
    body: JSON.stringify({ data: { type: 'X', attributes } }),
    headers: { 'content-type': 'application/vnd.api+json' },
  });

describe('retry rules', () => {
  test('5xx, 408 and 429 are retried for reads; 4xx are not', async () => {
    const s = scripted([{ status: 503 }, { status: 408 }, { status: 429 }, { status: 200 }]);
    const res = await retryingFetch(opts(s.fetch))(new Request('http://x/api/v1/users'));
    assert.equal(res.status, 200);
    assert.equal(s.calls.length, 4);
    const t = scripted([{ status: 404, code: 'UserNotFound' }]);
    assert.equal((await retryingFetch(opts(t.fetch))(new Request('http://x/api/v1/users/1'))).status, 404);
    assert.equal(t.calls.length, 1);
  });

  test('409 is retried only while the first request is still running', async () => {
    const s = scripted([
      { status: 409, code: 'IdempotencyKeyInUse' },
      { status: 409, code: 'AlreadyExists' },
      { status: 201 },
    ]);
    assert.equal(
      (await retryingFetch(opts(s.fetch))(post('http://x/api/v1/payment-intents/i/authorize', { amount: 1 }))).status,
      201,
    );
    assert.equal(s.calls.length, 3);
    const t = scripted([{ status: 409, code: 'IdempotencyKeyReused' }]);
    assert.equal(
      (await retryingFetch(opts(t.fetch))(post('http://x/api/v1/payment-intents/i/authorize', { amount: 1 }))).status,
      409,
    );
    assert.equal(t.calls.length, 1);
  });

  test('one idempotency key is made for a keyed write and sent on every attempt', async () => {
    const s = scripted(['network-error', { status: 500 }, { status: 201 }]);
    await retryingFetch(opts(s.fetch))(post('http://x/api/v1/wallets/w/transactions', { amount: 100 }));
    const keys = s.calls.map((c) => JSON.parse(c.body!).data.attributes.idempotencyKey);
    assert.equal(keys.length, 3);
    assert.match(keys[0], /^[0-9a-f-]{36}$/);
    assert.equal(new Set(keys).size, 1);
    const given = scripted([{ status: 201 }]);
    await retryingFetch(opts(given.fetch))(
      post('http://x/api/v1/payments/p/refund', { amount: 1, idempotencyKey: 'mine' }),
    );
    assert.equal(JSON.parse(given.calls[0]!.body!).data.attributes.idempotencyKey, 'mine');
    // Withdrawals, direct payments, counterparty payouts and transfers carry keys too.
    for (const url of [
      'http://x/api/v1/wallets/w/withdraw',
      'http://x/api/v1/payments',
      'http://x/api/v1/counterparties/c/payouts',
      'http://x/api/v1/counterparty-transfers',
    ]) {
      const k = scripted([{ status: 503 }, { status: 201 }]);
      await retryingFetch(opts(k.fetch))(post(url, { amount: 100 }));
      const sent = k.calls.map((c) => JSON.parse(c.body!).data.attributes.idempotencyKey);
      assert.equal(sent.length, 2, url);
      assert.ok(sent[0] && sent[0] === sent[1], url);
    }
    // A PATCH that moves money (increase-authorization) is keyed too.
    const increase = scripted([{ status: 503 }, { status: 200 }]);
    const patch = new Request('http://x/api/v1/payments/p/increase-authorization', {
      method: 'PATCH',
      body: JSON.stringify({ data: { type: 'IncreaseAuthorization', attributes: { increase: 5 } } }),
    });
    assert.equal((await retryingFetch(opts(increase.fetch))(patch)).status, 200);
    const sent = increase.calls.map((c) => JSON.parse(c.body!).data.attributes.idempotencyKey);
    assert.equal(sent.length, 2);
    assert.match(sent[0], /^[0-9a-f-]{36}$/);
    assert.equal(sent[1], sent[0]);
  });

  test('a write without a key is not repeated after a 5xx or a lost answer, but is after a 429', async () => {
    const s = scripted([{ status: 500 }]);
    assert.equal(
      (await retryingFetch(opts(s.fetch))(post('http://x/api/v1/users', { phoneNumber: '+1' }))).status,
      500,
    );
    assert.equal(s.calls.length, 1);
    const n = scripted(['network-error']);
    await assert.rejects(retryingFetch(opts(n.fetch))(post('http://x/api/v1/users', {})), /fetch failed/);
    assert.equal(n.calls.length, 1);
    const r = scripted([{ status: 429 }, { status: 201 }]);
    assert.equal((await retryingFetch(opts(r.fetch))(post('http://x/api/v1/users', {}))).status, 201);
  });

  test('Retry-After is honoured and backoff stays under its cap; retries stop at maxRetries', async () => {
    const delays: number[] = [];
    const s = scripted([{ status: 429, headers: { 'retry-after': '1' } }, { status: 200 }]);
    await retryingFetch(opts(s.fetch, delays))(new Request('http://x/api/v1/users'));
    assert.ok(delays[0]! >= 1_000, `waited ${delays[0]} ms`);
    const capped: number[] = [];
    const t = scripted([{ status: 503 }]);
    assert.equal((await retryingFetch(opts(t.fetch, capped))(new Request('http://x/api/v1/users'))).status, 503);
    assert.equal(t.calls.length, 6);
    assert.ok(capped.every((d) => d <= 5));
  });
});
