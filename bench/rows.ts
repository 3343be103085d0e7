// The rows that `compare` and `report` run in rounds (bench/compare.ts, bench/report.ts), each
// against a server set up once (a Fixture): what a row sends, what it needs made first (an
// authorize needs intents, a refund captured payments), and its yardstick.
import {
  approvedWallets,
  fundWallets,
  json,
  load,
  merchant,
  type Auth,
  type CofferServer,
  type LoadResult,
} from './lib.ts';
import * as api from './requests.ts';
import { type ApiRequest, cannon, cycle, each, take, type Wallet } from './requests.ts';

/** What a server's rows act on: a merchant, 50 wallets to deposit to, 50 funded ones to spend from, users to read. */
export interface Fixture {
  coffer: CofferServer;
  auth: Auth;
  wallets: Wallet[];
  spenders: Wallet[];
  userIds: string[];
}

/**
 * Sets up a server's fixture. Spending comes from other wallets than deposits go to: funding a
 * wallet is the sandbox's clear-pending, which clears every pending deposit of the wallet in one
 * request, and the deposit rows leave tens of thousands on theirs (bench/run.ts's money scenario).
 */
export async function fixture(coffer: CofferServer): Promise<Fixture> {
  const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
  const wallets = await approvedWallets(coffer, auth, 50);
  const spenders = await approvedWallets(coffer, auth, 50, 50);
  await fundWallets(coffer, auth, spenders, 50_000_000);
  const users = await json(`${coffer.url}/api/v1/users?page[limit]=100`, { headers: auth });
  return { coffer, auth, wallets, spenders, userIds: users.data.map((u: { id: string }) => u.id) };
}

/** `count` payment intents over the funded wallets; their ids. */
export async function intents(f: Fixture, count: number): Promise<string[]> {
  const ids: string[] = [];
  const from = cycle(f.spenders);
  await each(`(set-up) ${count} payment intents`, f, {
    count,
    next: () => api.createIntent(from()),
    keep: { pick: (b) => b.data.id, into: ids },
  });
  return ids;
}

/** `count` authorized intents; their payments' ids. */
export async function authorized(f: Fixture, count: number): Promise<string[]> {
  const ids: string[] = [];
  const next = take(await intents(f, count), 'intents');
  await each(`(set-up) ${count} authorizes`, f, {
    count,
    next: () => api.authorize(next()),
    keep: { pick: (b) => b.included[0].id, into: ids },
  });
  return ids;
}

/** `count` captured payments; their ids. */
export async function captured(f: Fixture, count: number): Promise<string[]> {
  const ids = await authorized(f, count);
  const next = take(ids, 'payments');
  await each(`(set-up) ${count} captures`, f, { count, next: () => api.capture(next()) });
  return ids;
}

export type Yardstick = 'bare' | 'raw';

/** A row: what it sends and beside which yardstick its rate is read. */
export interface Row {
  key: string;
  name: string;
  /** Reads beside the bare Fastify route, money movements beside the raw pg transfer. */
  yardstick: Yardstick;
  /**
   * The requests, one per call; for a row whose requests use up what they act on (`consumes`),
   * what `count` requests act on is made first. Absent for the checkout flow, which has its own run.
   */
  source?: (f: Fixture, count: number) => Promise<() => ApiRequest>;
  consumes?: boolean;
  /** A closed-loop run of its own (the checkout flow); otherwise `source` at 50 connections. */
  closed?: (f: Fixture, durationS: number) => Promise<LoadResult>;
}

/**
 * A closed-loop run of a row that uses up what it acts on is a fixed number of requests: this
 * many per second of the duration (about half a second's worth at 2,000 a second), after up to
 * 2,000 more not counted, as bench/run.ts's checkout rows.
 */
const CONSUMED_PER_S = 1000;

/**
 * A row's closed-loop run (50 connections), ready to start: what it acts on is made when this
 * resolves, so that the timed part can follow its yardstick at once.
 */
export async function closedLoop(row: Row, f: Fixture, durationS: number): Promise<() => Promise<LoadResult>> {
  if (row.closed) return () => row.closed!(f, durationS);
  if (!row.consumes) {
    const next = await row.source!(f, 0);
    return () =>
      load(row.name, {
        url: f.coffer.url,
        headers: f.auth,
        serverPid: f.coffer.proc.pid,
        durationS,
        requests: cannon(next),
      });
  }
  const count = CONSUMED_PER_S * durationS;
  const warmup = Math.min(2000, Math.ceil(count / 2));
  const next = await row.source!(f, count + warmup);
  return () => each(row.name, f, { count, warmup, next });
}

const stocked =
  (make: (f: Fixture, count: number) => Promise<string[]>, request: (id: string) => ApiRequest, what: string) =>
  async (f: Fixture, count: number) => {
    // A set-up request that failed left one fewer: make up for it, a few times at most.
    const ids = await make(f, count);
    for (let tries = 0; ids.length < count && tries < 3; tries++) ids.push(...(await make(f, count - ids.length)));
    if (ids.length < count) throw new Error(`${what}: ${ids.length} made of the ${count} needed`);
    const next = take(ids, what);
    return () => request(next());
  };

const fromWallets =
  (which: 'wallets' | 'spenders' | 'hot', request: (w: Wallet) => ApiRequest) =>
  async (f: Fixture): Promise<() => ApiRequest> => {
    const next = cycle(which === 'hot' ? f.wallets.slice(0, 1) : f[which]);
    return () => request(next());
  };

/** A read of `paths` in turn. */
export const reads =
  (paths: (f: Fixture) => string[]) =>
  async (f: Fixture): Promise<() => ApiRequest> => {
    const next = cycle(paths(f));
    return () => ({ method: 'GET', path: next() });
  };

/** Every row, by key (`--rows`). */
export const ROWS: Row[] = [
  {
    key: 'deposits',
    name: 'POST deposit (50 wallets)',
    yardstick: 'raw',
    source: fromWallets('wallets', api.deposit),
  },
  {
    key: 'deposit-hot',
    name: 'POST deposit (one wallet: hot row)',
    yardstick: 'raw',
    source: fromWallets('hot', api.deposit),
  },
  {
    key: 'withdrawals',
    name: 'POST withdraw (50 wallets)',
    yardstick: 'raw',
    source: fromWallets('spenders', api.withdraw),
  },
  {
    key: 'payments',
    name: 'POST /payments (50 wallets)',
    yardstick: 'raw',
    source: fromWallets('spenders', api.directPayment),
  },
  {
    key: 'checkout',
    name: 'checkout flows (create intent, authorize, capture), flows/s',
    yardstick: 'raw',
    closed: async (f, durationS) => {
      const r = await load('checkout flow: create intent → authorize → capture', {
        url: f.coffer.url,
        headers: f.auth,
        serverPid: f.coffer.proc.pid,
        durationS,
        requests: api.checkoutFlow(cycle(f.spenders)),
      });
      // Three requests a flow: the rate is of whole flows, the latencies each request's.
      return { ...r, name: 'checkout flows', rps: Math.round(r.rps / 3) };
    },
  },
  {
    key: 'balance',
    name: 'GET wallet balance (50 wallets)',
    yardstick: 'bare',
    source: reads((f) => f.wallets.map((w) => `/api/v1/wallets/${w.walletId}/balance`)),
  },
  {
    key: 'user',
    name: 'GET /api/v1/users/{id}',
    yardstick: 'bare',
    source: reads((f) => f.userIds.map((id) => `/api/v1/users/${id}`)),
  },
  {
    key: 'users-list',
    name: 'GET /api/v1/users (10 per page)',
    yardstick: 'bare',
    source: reads(() => ['/api/v1/users?page[limit]=10']),
  },
  {
    key: 'intents',
    name: 'POST /payment-intents',
    yardstick: 'raw',
    source: fromWallets('spenders', api.createIntent),
  },
  {
    key: 'authorize',
    name: 'POST /payment-intents/{id}/authorize',
    yardstick: 'raw',
    consumes: true,
    source: stocked(intents, api.authorize, 'intents'),
  },
  {
    key: 'capture',
    name: 'POST /payments/{id}/capture',
    yardstick: 'raw',
    consumes: true,
    source: stocked(authorized, api.capture, 'authorized payments'),
  },
  {
    key: 'cancel',
    name: 'POST /payments/{id}/cancel',
    yardstick: 'raw',
    consumes: true,
    source: stocked(authorized, api.cancelPayment, 'authorized payments'),
  },
  {
    key: 'refund',
    name: 'POST /payments/{id}/refund',
    yardstick: 'raw',
    consumes: true,
    source: stocked(captured, api.refund, 'captured payments'),
  },
  {
    key: 'intent-cancel',
    name: 'POST /payment-intents/{id}/cancel',
    yardstick: 'raw',
    consumes: true,
    source: stocked(intents, api.cancelIntent, 'intents'),
  },
];

/** The rows of `keys` (comma-separated), in the order given. */
export function rowsOf(keys: string): Row[] {
  return keys.split(',').map((k) => {
    const row = ROWS.find((r) => r.key === k.trim());
    if (!row) throw new Error(`unknown row ${k}; known: ${ROWS.map((r) => r.key).join(', ')}`);
    return row;
  });
}

/** The money writes of the fixed-rate rows (bench/fixed-rate.ts). */
export const MONEY_WRITES = ['deposits', 'withdrawals', 'payments', 'authorize', 'capture', 'cancel', 'refund'];
