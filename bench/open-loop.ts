// Fixed-rate (open-loop) load: requests offered on a clock at a fixed arrival rate, each sent when
// it is due whether or not earlier ones were answered, and its latency measured from when it was
// due. A closed loop (autocannon: each connection sends its next request when the last is
// answered) sends less while the server is slow, so its latencies never show the queue that
// real arrivals would have built; these do.
import { Pool } from 'undici';
import { percentileOf } from './lib.ts';
import type { ApiRequest } from './requests.ts';

export interface OpenLoopResult {
  name: string;
  /** Offered requests per second. */
  rate: number;
  durationS: number;
  /** Requests due in the timed part. */
  offered: number;
  answered: number;
  /** Answers other than 2xx. */
  non2xx: number;
  /** Requests that failed without an answer (connection errors, timeouts). */
  errors: number;
  /** Requests not sent because `maxOutstanding` were already in flight: errors too. */
  unsent: number;
  /** Latencies from the scheduled send time to the answer, in ms (two decimals). */
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** Requests in flight at most; past it a due request is counted as unsent, not queued. */
export const MAX_OUTSTANDING = 20_000;

/**
 * Runs `send` `rate` times a second for `warmupS` (not counted) then `durationS`. The i-th call is
 * due at start + i / rate and is made as soon as the timer sees it due (the timer runs about
 * every millisecond); its latency runs from when it was due, so the generator's own delays count
 * against the server, as a real client's would. `send` resolves true for a success and false for
 * a refusal (non-2xx); a rejection is an error.
 */
export async function fixedRate(
  name: string,
  o: { rate: number; durationS: number; warmupS?: number; maxOutstanding?: number; send: () => Promise<boolean> },
): Promise<OpenLoopResult> {
  const warmupS = o.warmupS ?? 1;
  const interval = 1000 / o.rate;
  const counted = Math.round(o.rate * warmupS);
  const total = counted + Math.round(o.rate * o.durationS);
  const maxOutstanding = o.maxOutstanding ?? MAX_OUTSTANDING;
  const latencies = new Float64Array(total - counted);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  let unsent = 0;
  let outstanding = 0;
  let next = 0;
  let finished = 0;
  const start = performance.now() + 10;
  await new Promise<void>((resolve) => {
    const done = () => {
      if (++finished === total) resolve();
    };
    const issue = (i: number, due: number) => {
      const timed = i >= counted;
      if (outstanding >= maxOutstanding) {
        if (timed) unsent++;
        return done();
      }
      outstanding++;
      o.send()
        .then(
          (ok) => {
            if (timed) {
              latencies[answered++] = performance.now() - due;
              if (!ok) non2xx++;
            }
          },
          () => {
            if (timed) errors++;
          },
        )
        .finally(() => {
          outstanding--;
          done();
        });
    };
    const tick = () => {
      const now = performance.now();
      for (; next < total && start + next * interval <= now; next++) issue(next, start + next * interval);
      if (next < total) setTimeout(tick, Math.min(1, Math.max(0, start + next * interval - performance.now())));
    };
    setTimeout(tick, 10);
  });
  const sorted = latencies.subarray(0, answered).sort();
  const ms = (v: number) => Math.round(v * 100) / 100;
  return {
    name,
    rate: o.rate,
    durationS: o.durationS,
    offered: total - counted,
    answered,
    non2xx,
    errors,
    unsent,
    p50: ms(percentileOf(sorted, 50)),
    p99: ms(percentileOf(sorted, 99)),
    p999: ms(percentileOf(sorted, 99.9)),
    max: ms(sorted.at(-1) ?? 0),
  };
}

/**
 * `fixedRate` over HTTP: each request `next()` sent to `url` through an undici Pool of
 * `connections` (enough that the pool does not cap what is in flight at these rates: a request
 * that finds them all busy waits in the pool's queue, and that wait is part of its latency).
 */
export async function openLoop(
  name: string,
  o: {
    url: string;
    headers: Record<string, string>;
    rate: number;
    durationS: number;
    warmupS?: number;
    connections?: number;
    next: () => ApiRequest;
  },
): Promise<OpenLoopResult> {
  const pool = new Pool(o.url, { connections: o.connections ?? 256, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const headers = { 'content-type': 'application/vnd.api+json', ...o.headers };
  let reported = false;
  try {
    return await fixedRate(name, {
      ...o,
      send: async () => {
        const req = o.next();
        const res = await pool.request({ path: req.path, method: req.method, body: req.body, headers });
        const ok = res.statusCode < 300;
        if (ok || reported) await res.body.dump();
        else {
          reported = true;
          process.stderr.write(`${name}: first failed request: ${res.statusCode} ${await res.body.text()}\n`);
        }
        return ok;
      },
    });
  } finally {
    await pool.close();
  }
}
