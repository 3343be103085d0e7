// The spec's retry rules, as a fetch wrapper under the typed client:
// - retry on 5xx, 429, 408, and on 409 only for IdempotencyKeyInUse / AlreadyExists (the first
//   request is still running), with exponential backoff, full jitter, and Retry-After honoured;
// - a request that may have been applied (a timeout, a 5xx) is retried only when repeating it
//   is safe: reads, deletes, and writes that carry an idempotency key;
// - an idempotency key is made once per logical authorize, deposit, withdrawal, direct payment,
//   refund, reward, counterparty payout or transfer, or authorization increase, before the first
//   attempt, so every retry sends the same key and a replay returns the first result;
// - each attempt has a timeout: authorize 90 s (the spec asks at least 60), others 10 s.
import { randomUUID } from 'node:crypto';

export interface RetryOptions {
  /** Attempts after the first. */
  maxRetries: number;
  /** First backoff step; doubles per attempt up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  authorizeTimeoutMs: number;
  fetch: typeof fetch;
  /** Called before each retry (for logs and tests). */
  onRetry?: (e: { attempt: number; delayMs: number; reason: string; method: string; url: string }) => void;
}

export const DEFAULT_RETRY: Omit<RetryOptions, 'fetch'> = {
  maxRetries: 6,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  timeoutMs: 10_000,
  authorizeTimeoutMs: 90_000,
};

/** Operations whose request body carries `data.attributes.idempotencyKey`. */
const KEYED = [
  /\/payment-intents\/[^/]+\/authorize$/,
  /\/wallets\/[^/]+\/transactions$/,
  /\/wallets\/[^/]+\/withdraw$/,
  /\/payments\/[^/]+\/refund$/,
  // A direct payment (POST /payments, no intent).
  /\/api\/v1\/payments$/,
  /\/rewards$/,
  // Counterparty payouts and transfers.
  /\/counterparties\/[^/]+\/payouts$/,
  /\/counterparty-transfers$/,
  /\/payments\/[^/]+\/increase-authorization$/,
];
const AUTHORIZE = /\/payment-intents\/[^/]+\/authorize$/;
const IN_PROGRESS = new Set(['IdempotencyKeyInUse', 'AlreadyExists']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Adds an idempotency key to a keyed operation's body if the caller sent none. */
function withKey(path: string, body: string | undefined): { body: string | undefined; keyed: boolean } {
  if (!body || !KEYED.some((re) => re.test(path))) return { body, keyed: false };
  try {
    const doc = JSON.parse(body) as { data?: { attributes?: Record<string, unknown> } };
    const attrs = doc.data?.attributes;
    if (!attrs) return { body, keyed: false };
    attrs.idempotencyKey ??= randomUUID();
    return { body: JSON.stringify(doc), keyed: true };
  } catch {
    return { body, keyed: false };
  }
}

function retryAfterMs(res: Response): number {
  const h = res.headers.get('retry-after');
  if (!h) return 0;
  const s = Number(h);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(h);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

async function errorCode(res: Response): Promise<string | undefined> {
  try {
    const body = (await res.clone().json()) as { errors?: { code?: string }[] };
    return body.errors?.[0]?.code;
  } catch {
    return undefined;
  }
}

export function retryingFetch(opts: RetryOptions): (input: Request) => Promise<Response> {
  return async (input: Request) => {
    const url = new URL(input.url);
    const original = input.method === 'GET' || input.method === 'HEAD' ? undefined : await input.text();
    const { body, keyed } =
      input.method === 'POST' || input.method === 'PATCH'
        ? withKey(url.pathname, original)
        : { body: original, keyed: false };
    const safeToRepeat = ['GET', 'HEAD', 'DELETE', 'PUT'].includes(input.method) || keyed;
    const timeoutMs = AUTHORIZE.test(url.pathname) ? opts.authorizeTimeoutMs : opts.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const backoff = () => Math.random() * Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
      let reason: string;
      let wait = 0;
      try {
        const res = await opts.fetch(
          new Request(input.url, {
            method: input.method,
            headers: input.headers,
            body,
            signal: AbortSignal.timeout(timeoutMs),
          }),
        );
        const s = res.status;
        const retryable =
          s === 429 ||
          (s === 409 && IN_PROGRESS.has((await errorCode(res)) ?? '')) ||
          ((s === 408 || s >= 500) && safeToRepeat);
        if (!retryable || attempt >= opts.maxRetries) return res;
        reason = `HTTP ${s}`;
        wait = retryAfterMs(res);
        await res.body?.cancel();
      } catch (err) {
        // No answer: the request may or may not have been applied.
        if (!safeToRepeat || attempt >= opts.maxRetries) throw err;
        reason =
          (err as Error).name === 'TimeoutError'
            ? `timeout after ${timeoutMs} ms`
            : `network error: ${(err as Error).message}`;
      }
      const delayMs = Math.max(wait, backoff());
      opts.onRetry?.({ attempt: attempt + 1, delayMs, reason, method: input.method, url: input.url });
      await sleep(delayMs);
    }
  };
}
