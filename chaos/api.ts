// How a campaign client talks to Coffer: the SDK (@coffer/client) with its retry rules, over a
// fetch that sends each attempt to a Coffer process that is up (as a load balancer would) and
// records every attempt in the history.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createCoffer, type Coffer } from '@coffer/client';
import type { History } from './history.ts';

/** The Coffer processes currently up (changes as faults kill and restart them): a process's API and secure card listener. */
export interface Upstreams {
  pick(): Promise<{ url: string; cardUrl: string } | undefined>;
}

/** Card reads go to the secure card listener; everything else to the API. */
const CARD_READ = /^\/api\/v1\/payments\/[^/]+\/card$/;

export interface Merchant {
  name: string;
  clientId: string;
  secret: string;
}

export const currentOp = new AsyncLocalStorage<{
  seq: number;
  attempts: { status?: number; code?: string; error?: string }[];
}>();

export function clientFor(m: Merchant, upstreams: Upstreams, history: History): Coffer {
  const routed = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = input instanceof Request ? input : new Request(input, init);
    const op = currentOp.getStore();
    const u = new URL(req.url);
    const at = Date.now();
    const note = (a: { status?: number; code?: string; error?: string }) => {
      op?.attempts.push(a);
      if (op)
        history.write({
          kind: 'attempt',
          seq: op.seq,
          method: req.method,
          path: u.pathname,
          at,
          end: Date.now(),
          ...a,
        });
    };
    const up = await upstreams.pick();
    const base = up && (req.method === 'GET' && CARD_READ.test(u.pathname) ? up.cardUrl : up.url);
    if (!base) {
      note({ error: 'no process up' });
      throw new TypeError('fetch failed: no Coffer process up');
    }
    try {
      const res = await fetch(new Request(`${base}${u.pathname}${u.search}`, req));
      let code: string | undefined;
      if (res.status >= 400) {
        try {
          code = ((await res.clone().json()) as { errors?: { code?: string }[] }).errors?.[0]?.code;
        } catch {
          code = undefined;
        }
      }
      note({ status: res.status, code });
      return res;
    } catch (err) {
      note({
        error:
          (err as Error).name === 'TimeoutError'
            ? 'timeout'
            : String((err as Error).cause ?? (err as Error).message).slice(0, 200),
      });
      throw err;
    }
  };
  return createCoffer({
    baseUrl: 'http://coffer.invalid',
    clientId: m.clientId,
    secret: m.secret,
    fetch: routed as typeof fetch,
    retry: { maxRetries: 8, baseDelayMs: 100, maxDelayMs: 2_000, timeoutMs: 8_000, authorizeTimeoutMs: 20_000 },
  });
}
