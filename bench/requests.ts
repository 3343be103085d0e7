// The API requests the benchmarks send, built once here for every scenario: bench/run.ts's
// closed-loop rows (autocannon), and bench/rows.ts's rounds and fixed-rate rows (undici).
import type autocannon from 'autocannon';
import { type Auth, type CofferServer, type LoadResult, load } from './lib.ts';

/** A user's wallet and the linked account its deposits come from (approvedWallets, lib.ts). */
export interface Wallet {
  walletId: string;
  accountId: string;
}

export interface ApiRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

const post = (path: string, type?: string, attributes?: Record<string, unknown>): ApiRequest => ({
  method: 'POST',
  path,
  ...(type ? { body: JSON.stringify({ data: { type, attributes } }) } : {}),
});

let keys = 0;
/** An idempotency key no other request of the process uses. */
const freshKey = () => `bench-${keys++}-${Math.random()}`;

export const deposit = (w: Wallet, amount = 1000) =>
  post(`/api/v1/wallets/${w.walletId}/transactions`, 'OneTimeDeposit', {
    amount,
    linkedAccountId: w.accountId,
    idempotencyKey: freshKey(),
  });
export const withdraw = (w: Wallet, amount = 100) =>
  post(`/api/v1/wallets/${w.walletId}/withdraw`, 'Withdraw', { amount, idempotencyKey: freshKey() });
export const directPayment = (w: Wallet, amount = 100) =>
  post('/api/v1/payments', 'CreatePayment', { amount, walletId: w.walletId, idempotencyKey: freshKey() });
export const createIntent = (w: Wallet, amount = 100) =>
  post('/api/v1/payment-intents', 'CreatePaymentIntent', { amount, walletId: w.walletId });
export const authorize = (intentId: string, amount = 100) =>
  post(`/api/v1/payment-intents/${intentId}/authorize`, 'AuthorizePaymentIntent', {
    amount,
    idempotencyKey: `${intentId}-a`,
  });
export const capture = (paymentId: string, amount = 100) =>
  post(`/api/v1/payments/${paymentId}/capture`, 'CapturePayment', { amount });
export const refund = (paymentId: string, amount = 100) =>
  post(`/api/v1/payments/${paymentId}/refund`, 'Refund', { amount, idempotencyKey: `${paymentId}-r` });
export const cancelPayment = (paymentId: string) => post(`/api/v1/payments/${paymentId}/cancel`);
export const cancelIntent = (intentId: string) => post(`/api/v1/payment-intents/${intentId}/cancel`);

/** Each call the next of `items`, round and round. */
export function cycle<T>(items: readonly T[]): () => T {
  let i = 0;
  return () => items[i++ % items.length]!;
}

/** An autocannon request that sends `next()` each time, with `extra` (onResponse, say) added. */
export function cannon(next: () => ApiRequest, extra: Partial<autocannon.Request> = {}): autocannon.Request[] {
  return [{ ...extra, setupRequest: (req: autocannon.Request) => ({ ...req, ...next() }) } as autocannon.Request];
}

/** autocannon requests that walk through `paths` in turn, one per request. */
export function rotate(paths: string[]): autocannon.Request[] {
  const next = cycle(paths);
  return cannon(() => ({ method: 'GET', path: next() }));
}

/**
 * The checkout flow, each connection in turn: create a payment intent from the next wallet,
 * authorize it, capture its payment. Three requests a flow.
 */
export function checkoutFlow(nextWallet: () => Wallet): autocannon.Request[] {
  type Ctx = { intentId?: string; paymentId?: string };
  const step = (build: (ctx: Ctx) => ApiRequest, read?: (answer: any, ctx: Ctx) => void) => ({
    setupRequest: (req: autocannon.Request, ctx: Ctx) => ({ ...req, ...build(ctx) }),
    ...(read ? { onResponse: (_status: number, body: string, ctx: Ctx) => read(JSON.parse(body), ctx) } : {}),
  });
  return [
    step(
      () => createIntent(nextWallet()),
      (a, ctx) => void (ctx.intentId = a.data?.id),
    ),
    step(
      (ctx) => authorize(ctx.intentId!),
      (a, ctx) => void (ctx.paymentId = a.included?.[0]?.id),
    ),
    step((ctx) => capture(ctx.paymentId!)),
  ] as autocannon.Request[];
}

/**
 * `count` requests, each `next()`, after `warmup` more (not counted) on the same 50 connections
 * (or `connections`). From each 2xx answer, `keep.pick` reads an id into `keep.into` (the
 * warm-up's into `keep.warmInto`). The first failed request of the run is printed.
 */
export function each(
  label: string,
  f: { coffer: CofferServer; auth: Auth },
  o: {
    count: number;
    warmup?: number;
    connections?: number;
    next: () => ApiRequest;
    keep?: { pick: (body: any) => string; into: string[]; warmInto?: string[] };
  },
): Promise<LoadResult> {
  const warmup = o.warmup ?? 0;
  let answered = 0;
  let reported = false;
  const onResponse = (status: number, body: string) => {
    const warm = answered++ < warmup;
    if (status >= 300) {
      if (!reported) process.stderr.write(`${label}: first failed request: ${status} ${body}\n`);
      reported = true;
    } else if (o.keep) (warm ? o.keep.warmInto : o.keep.into)?.push(o.keep.pick(JSON.parse(body)));
  };
  return load(label, {
    url: f.coffer.url,
    headers: f.auth,
    serverPid: f.coffer.proc.pid,
    amount: o.count,
    warmupAmount: warmup,
    connections: o.connections,
    requests: cannon(o.next, { onResponse } as never),
  });
}

/**
 * Each call the next of `ids`, once each. Past the last, an id that matches nothing (the request
 * is answered 404 and counted as failed, said once on stderr): a throw here would end autocannon's
 * run, and the benchmark, mid-row.
 */
export function take(ids: readonly string[], what: string): () => string {
  let i = 0;
  return () => {
    if (i < ids.length) return ids[i++]!;
    if (i++ === ids.length) process.stderr.write(`${what}: all ${ids.length} made were used; the rest fail\n`);
    return '00000000-0000-0000-0000-000000000000';
  };
}
