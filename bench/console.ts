// The console at scale: node --import tsx bench/console.ts [--db postgres|pglite] [--payments 1000000]
//   [--requests 50] [--duration 10] [--connections 10] [--keep] [--reuse]
//
// 1. A Coffer server (its own fresh database) runs the migrations; a merchant is created through
//    the admin API and a few payments go through the API (authorized, captured, settled, one
//    refunded, one failed), so a payment's page has a whole timeline.
// 2. The database is seeded with set-based SQL (generate_series): `--payments` payments, each with
//    its intent, spread over the last 35 days with mixed statuses; users and wallets; an event per
//    payment; request-log rows over the last 7 days. Then ANALYZE.
// 3. The server starts again with the console listener; the bench signs in as the merchant like a
//    browser (the sign-in form's token and cookie, then the session cookie) and times each page:
//    `--requests` sequential requests (after a pass over every page and 3 requests of its own,
//    not counted), then every page in turn from
//    `--connections` connections for `--duration` seconds (autocannon).
// Prints a markdown table (p50/p99 ms per page). `--keep` keeps the seeded database (and writes
// its address to bench/results/console-seed.json); `--reuse` runs step 3 on the kept one.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.ts';
import { openDatabase, type Database } from '../src/db/open.ts';
import { freePort } from '../src/test/process.ts';
import {
  approvedWallets,
  dropDatabases,
  freshDatabase,
  fundWallets,
  json,
  machine,
  merchant,
  percentileOf,
  post,
  startCoffer,
  writeResults,
  type CofferServer,
} from './lib.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'postgres' },
    payments: { type: 'string', default: '1000000' },
    requests: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    keep: { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
  },
});
const db = values.db === 'pglite' ? 'pglite' : 'postgres';
const N = Number(values.payments);
const REQUESTS = Number(values.requests);
const DURATION_S = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const pgServer = loadConfig(process.env).databaseUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SEED_FILE = new URL('./results/console-seed.json', import.meta.url);

/** What step 3 needs of steps 1 and 2. */
interface Seeded {
  db: 'postgres' | 'pglite';
  payments: number;
  databaseUrl?: string;
  dataDir: string;
  clientId: string;
  secret: string;
  /** A payment made through the API (authorized, captured, settled, refunded in part). */
  paymentId: string;
  /** A user and a wallet made through the API. */
  userId: string;
  walletId: string;
  webhookId: string;
  /** A seeded payment's reference (an exact-match search). */
  reference: string;
  seedSeconds: Record<string, number>;
}

const say = (s: string) => process.stderr.write(`${s}\n`);

// ----- 1. a server, a merchant, payments through the API --------------------------------------

async function throughApi(): Promise<Omit<Seeded, 'seedSeconds' | 'reference'>> {
  const databaseUrl = db === 'postgres' ? await freshDatabase(pgServer, 'coffer_console') : undefined;
  const coffer = await startCoffer({ databaseUrl });
  try {
    const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
    const wallets = await approvedWallets(coffer, auth, 2);
    await fundWallets(coffer, auth, wallets, 10_000_000);
    const pay = async (walletId: string, amount: number) => {
      const intent = await post(coffer, auth, '/api/v1/payment-intents', {
        data: { type: 'CreatePaymentIntent', attributes: { amount, walletId, reference: `api-${amount}` } },
      });
      const res = await post(coffer, auth, `/api/v1/payment-intents/${intent.data.id}/authorize`, {
        data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: `bench-${intent.data.id}` } },
      });
      return res.included[0].id as string;
    };
    const paymentIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      const id = await pay(wallets[i % 2]!.walletId, 1_000 + i);
      await post(coffer, auth, `/api/v1/payments/${id}/capture`, {
        data: { type: 'CapturePayment', attributes: { amount: 1_000 + i } },
      });
      paymentIds.push(id);
    }
    await post(coffer, auth, `/api/v1/payments/${paymentIds[0]}/refund`, {
      data: { type: 'RefundPayment', attributes: { amount: 300, idempotencyKey: `refund-${paymentIds[0]}` } },
    });
    await post(coffer, auth, `/api/v1/simulation/payments/${paymentIds[1]}/fail-bank-pull`).catch(() => undefined);
    // The sandbox settles captured payments about a second later.
    await new Promise((r) => setTimeout(r, 2_000));
    const wallet = await json(`${coffer.url}/api/v1/wallets/${wallets[0]!.walletId}`, { headers: auth });
    // The seeded deliveries' webhook: subscribed to a topic the bench never sends, so nothing is delivered.
    const hook = await post(coffer, auth, '/api/v1/webhooks', {
      data: {
        type: 'Webhook',
        attributes: { name: 'Bench', url: 'https://hooks.example.com/coffer', topics: ['RewardCreated'] },
      },
    });
    return {
      db,
      payments: N,
      databaseUrl,
      dataDir: coffer.dataDir,
      clientId: auth['client-id'],
      secret: auth.authorization.slice('Bearer '.length),
      paymentId: paymentIds[0]!,
      userId: wallet.data.attributes.userId ?? wallet.data.relationships?.user?.data?.id,
      walletId: wallets[0]!.walletId,
      webhookId: hook.data.id,
    };
  } finally {
    await coffer.stop();
  }
}

// ----- 2. the seed -------------------------------------------------------------------------------

/** A time-ordered uuid (version 7's layout) from a timestamp and a seed text, in SQL. */
const uuidv7Sql = (ts: string, seed: string) =>
  `(lpad(to_hex((extract(epoch from ${ts}) * 1000)::bigint), 12, '0') || '7' || substr(md5(${seed}), 1, 3) || '8' || substr(md5(${seed}), 4, 15))::uuid`;

async function seed(database: Database, s: Omit<Seeded, 'seedSeconds' | 'reference'>): Promise<Record<string, number>> {
  const users = Math.max(100, Math.min(50_000, Math.round(N / 20)));
  const requests = Math.max(1_000, Math.round(N / 4));
  const M = `'${s.clientId}'::uuid`;
  const X = Math.max(20, Math.floor(N / 10));
  // One time for every statement (now() is each statement's own): ids derived from it match across tables.
  const T0 = `'${new Date().toISOString()}'::timestamptz`;
  const seconds: Record<string, number> = {};
  const step = async (name: string, text: string) => {
    const t0 = performance.now();
    await database.db.execute(sql.raw(text));
    seconds[name] = Math.round((performance.now() - t0) / 100) / 10;
    say(`  ${name}: ${seconds[name]} s`);
  };
  say(`Seeding ${N.toLocaleString('en-US')} payments (${db})…`);
  await step(
    `users (${users.toLocaleString('en-US')}, a wallet each)`,
    `insert into users (id, client_id, public_id, first_name, last_name, email, phone_number, kyc_status, created_at, updated_at)
       select md5('u' || k)::uuid, ${M}, 'seed-' || k, 'Seed', 'User ' || k, 'seed' || k || '@example.com', '+1999' || lpad(k::text, 7, '0'), 'Approved',
         ${T0} - interval '40 days' + k * interval '1 second', ${T0} - interval '40 days' + k * interval '1 second'
       from generate_series(1, ${users}) k`,
  );
  await step(
    'wallets',
    `insert into wallets (id, client_id, user_id, status, created_at, updated_at)
       select md5('w' || k)::uuid, ${M}, md5('u' || k)::uuid, 'Active', ${T0} - interval '40 days' + k * interval '1 second', ${T0} - interval '40 days' + k * interval '1 second'
       from generate_series(1, ${users}) k`,
  );
  // Payment i: created (35 days × i / N) after 35 days ago; its status by i % 100: 60 Sent (5 of
  // them refunded in half), 10 Processing, 10 Created (Canceled past their 7-day expiry),
  // 10 Failed, 5 Canceled, 5 Returned.
  const base = `select i, ts, md5('u' || (1 + i % ${users}))::uuid as user_id, md5('w' || (1 + i % ${users}))::uuid as wallet_id,
       100 + (i::bigint * 7919) % 50000 as amount, i % 100 as r
     from (select i, ${T0} - interval '35 days' * ((${N} - i)::float8 / ${N}) as ts from generate_series(1, ${N}) i) g`;
  await step(
    'payment intents',
    `insert into payment_intents (id, client_id, wallet_id, user_id, amount, status, reference, initiator, payment_method, balance, expires_at, created_at, updated_at)
       select ${uuidv7Sql('ts', `'i' || i`)}, ${M}, wallet_id, user_id, amount,
         'PromotedToPayment', 'order-' || i, 'Merchant', 'Wallet',
         '{"available": 0, "eligibleReward": 0, "upperLimit": 0}'::jsonb, ts + interval '1 hour', ts, ts
       from (${base}) b`,
  );
  await step(
    'payments',
    `insert into payments (id, client_id, intent_id, wallet_id, user_id, rail, status, amount, captured_amount, refunded_amount, channel, reference,
         sourcing, captured, external_payments, disbursement, failure_reason, expires_at, created_at, updated_at, captured_at, settled_at, canceled_at)
       select ${uuidv7Sql('ts', `'p' || i`)}, ${M}, ${uuidv7Sql('ts', `'i' || i`)}, wallet_id, user_id, 'bank', status, amount,
         case when captured then amount else 0 end,
         case when r < 5 then amount / 2 when status = 'Returned' then amount else 0 end,
         case i % 10 when 0 then 'Store:nyc-' || (i % 7) when 1 then 'App:ios' else null end, 'order-' || i,
         jsonb_build_object('merchantReward', 0, 'accrueReward', 0, 'deposit', amount, 'linked', 0, 'gift', 0),
         case when captured then jsonb_build_object('merchantReward', 0, 'accrueReward', 0, 'deposit', amount, 'linked', 0, 'gift', 0) end,
         '[]'::jsonb, '[]'::jsonb, case when status = 'Failed' then 'Declined by the bank' end,
         ts + interval '7 days', ts, ts + interval '1 minute',
         case when captured then ts + interval '1 minute' end, case when status in ('Sent', 'Returned') then ts + interval '1 day' end,
         case when status = 'Canceled' then ts + interval '7 days' end
       from (select b.*, status, status in ('Sent', 'Processing', 'Returned') as captured
             from (${base}) b, lateral (select case
               when r < 60 then 'Sent' when r < 70 then 'Processing'
               when r < 80 then case when ts > ${T0} - interval '7 days' then 'Created' else 'Canceled' end
               when r < 90 then 'Failed' when r < 95 then 'Canceled' else 'Returned' end as status) st) p`,
  );
  await step(
    `payment intents never authorized (${X.toLocaleString('en-US')}: Expired, Canceled, Invalid; 1 in 50 a gift's)`,
    `insert into payment_intents (id, client_id, wallet_id, user_id, amount, status, reference, initiator, payment_method, balance, expires_at, created_at, updated_at)
       select ${uuidv7Sql('ts', `'x' || k`)}, ${M}, md5('w' || (1 + k % ${users}))::uuid, md5('u' || (1 + k % ${users}))::uuid, 100 + k % 5000,
         case when k > ${X} - 20 then 'Promotable' when k % 10 < 7 then 'Expired' when k % 10 < 9 then 'Canceled' else 'Invalid' end, null, 'Merchant',
         case when k % 50 = 0 then 'Gift' else 'Wallet' end, '{"available": 0, "eligibleReward": 0, "upperLimit": 0}'::jsonb, ts + interval '1 hour', ts, ts
       from (select k, ${T0} - interval '35 days' * ((${X} - k)::float8 / ${X}) as ts from generate_series(1, ${X}) k) g`,
  );
  // The weeks the events and requests fall in, as a server running for 40 days would have them
  // (else they would sit in the default partitions: docs/operations.md#retention).
  await step(
    'event and request log weeks',
    `select create_event_partitions(w::date), create_request_log_partition(w::date) from generate_series(date_trunc('week', ${T0} - interval '41 days'), ${T0}, interval '7 days') w`,
  );
  await step(
    'events (one per payment)',
    `insert into events (id, client_id, topic, user_id, wallet_id, resource_type, resource_id, body, created_at)
       select ${uuidv7Sql('ts', `'e' || i`)}, ${M}, case when r < 70 then 'PaymentCaptured' else 'PaymentCreated' end, user_id, wallet_id, 'Payment', (${uuidv7Sql('ts', `'p' || i`)})::text,
         json_build_object('type', 'PaymentCaptured', 'data', json_build_object('id', ${uuidv7Sql('ts', `'p' || i`)}, 'amount', amount, 'walletId', wallet_id))::text, ts
       from (${base}) b`,
  );
  // Deliveries of 70% of the events to one webhook, as a receiver's history leaves them: the
  // newest 2,000 events' pending (the backlog; due in 30 days, so nothing is sent during the run), a
  // third of a day's failed 11 to 12 days ago (an outage: failed after three days of retries),
  // the rest succeeded; 30% have none.
  await step(
    'event deliveries',
    `insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, attempt_count, next_attempt_at, last_status_code, completed_at, created_at, updated_at)
       select ${uuidv7Sql('ts', `'d' || i`)}, ${M}, ${uuidv7Sql('ts', `'e' || i`)}, '${s.webhookId}'::uuid, 'event', state,
         case when state = 'pending' then 0 else 1 end, case when state = 'pending' then ${T0} + interval '30 days' else ts end,
         case state when 'succeeded' then 200 when 'failed' then 500 end, case when state <> 'pending' then ts + interval '1 second' end, ts, ts
       from (select i, ts, case when i > ${N} - 2000 then 'pending'
               when ts between ${T0} - interval '12 days' and ${T0} - interval '11 days' and i % 3 = 0 then 'failed' else 'succeeded' end as state
             from (${base}) b where i % 100 < 70) d`,
  );
  await step(
    'the queue of pending deliveries',
    `insert into event_delivery_queue (id, event_id, client_id, webhook_id, attempt_count, next_attempt_at, created_at)
       select id, event_id, client_id, webhook_id, attempt_count, next_attempt_at, created_at from event_deliveries where state = 'pending'`,
  );
  await step(
    `request log (${requests.toLocaleString('en-US')} rows over 7 days)`,
    `insert into request_log (id, client_id, request_id, method, route, path, status, duration_ms, idempotency_key, body, created_at)
       select ${uuidv7Sql('ts', `'r' || k`)}, ${M}, 'req-' || k, case when k % 3 = 0 then 'GET' else 'POST' end,
         '/api/v1/payment-intents/:intentId/authorize', '/api/v1/payment-intents/' || md5('i' || k)::uuid || '/authorize',
         case when k % 50 = 0 then 404 when k % 20 = 0 then 400 when k % 3 = 0 then 200 else 201 end, 5 + k % 40,
         case when k % 3 <> 0 then 'key-' || k end, '{"data":{"type":"AuthorizePaymentIntent","attributes":{"amount":1000}}}', ts
       from (select k, ${T0} - interval '7 days' * ((${requests} - k)::float8 / ${requests}) as ts from generate_series(1, ${requests}) k) g`,
  );
  await step('vacuum analyze', 'vacuum analyze');
  return seconds;
}

// ----- 3. the console, signed in ---------------------------------------------------------------

class Browser {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async fetch(path: string, init: { method?: string; form?: Record<string, string> } = {}) {
    const res = await fetch(`${this.base}${path}`, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: { cookie: this.header(), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (value === '' || /Max-Age=0/.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, location: res.headers.get('location'), body: await res.text() };
  }
}

async function signIn(consoleUrl: string, s: Seeded): Promise<Browser> {
  const b = new Browser(consoleUrl);
  const form = await b.fetch('/sign-in');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
  const res = await b.fetch('/sign-in', {
    method: 'POST',
    form: { _csrf: csrf, role: 'merchant', clientId: s.clientId, secret: s.secret },
  });
  if (res.status !== 303 || res.location !== `/m/${s.clientId}`)
    throw new Error(`sign-in: ${res.status} ${res.location} ${res.body.slice(0, 300)}`);
  return b;
}

interface PageResult {
  name: string;
  path: string;
  p50: number;
  p99: number;
  max: number;
  bytes: number;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function timePage(b: Browser, name: string, path: string, expect = 200): Promise<PageResult> {
  let bytes = 0;
  const once = async () => {
    const t0 = performance.now();
    const res = await b.fetch(path);
    const ms = performance.now() - t0;
    if (res.status !== expect)
      throw new Error(`${path}: ${res.status} ${res.location ?? ''} ${res.body.slice(0, 300)}`);
    bytes = res.body.length;
    return ms;
  };
  for (let i = 0; i < 3; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < REQUESTS; i++) times.push(await once());
  times.sort((x, y) => x - y);
  return {
    name,
    path,
    p50: round(percentileOf(times, 50)),
    p99: round(percentileOf(times, 99)),
    max: round(times.at(-1)!),
    bytes,
  };
}

/** The id a seeded intent's authorize request was logged under (request-log rows name intent md5('i' || k)). */
const seededIntent = (k: number) => {
  const h = createHash('md5').update(`i${k}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

function pagesOf(s: Seeded, deepCursorPath: string): { name: string; path: string; expect?: number; mix?: false }[] {
  const m = `/m/${s.clientId}`;
  const half = Math.floor(s.payments / 2);
  return [
    { name: 'Overview (30 days of charts)', path: m },
    { name: 'Payments, first page', path: `${m}/payments` },
    { name: 'Payments, status Failed', path: `${m}/payments?status=Failed` },
    { name: 'Payments, status Processing, 3rd page', path: `${m}/payments?status=Processing&page[offset]=50` },
    { name: 'Payments, channel App:ios', path: `${m}/payments?channel=App:ios` },
    { name: 'Payments, by reference', path: `${m}/payments?reference=${s.reference}` },
    { name: 'Payments, found by id (303 to the payment)', path: `${m}/payments?id=${s.paymentId}`, expect: 303 },
    { name: 'Payments, offset 10,000', path: `${m}/payments?page[offset]=10000` },
    {
      name: `Payments, rows ${(half + 1).toLocaleString('en-US')}–${(half + 25).toLocaleString('en-US')} by the Next link (page[after])`,
      path: deepCursorPath,
    },
    {
      name: `Payments, rows ${(half + 1).toLocaleString('en-US')}–${(half + 25).toLocaleString('en-US')} by page[offset] alone`,
      path: `${m}/payments?page[offset]=${half}`,
      mix: false,
    },
    { name: 'A payment: timeline and postings', path: `${m}/payments/${s.paymentId}` },
    { name: 'Payment intents, first page', path: `${m}/intents` },
    { name: 'Payment intents, status Expired', path: `${m}/intents?status=Expired` },
    { name: 'Payment intents, status Invalid', path: `${m}/intents?status=Invalid` },
    { name: 'Payment intents, method Gift', path: `${m}/intents?paymentMethod=Gift` },
    { name: 'Users, first page', path: `${m}/users` },
    { name: 'Users, by e-mail', path: `${m}/users?email=seed77@example.com` },
    { name: 'A user', path: `${m}/users/${s.userId}` },
    { name: 'Wallets, first page', path: `${m}/wallets` },
    { name: "Wallets, by the user's e-mail", path: `${m}/wallets?email=seed77@example.com` },
    { name: 'A wallet: balances and ledger', path: `${m}/wallets/${s.walletId}` },
    { name: 'Events, first page', path: `${m}/events` },
    { name: 'Events, topic PaymentCreated', path: `${m}/events?topic=PaymentCreated` },
    { name: 'Events, delivery failed', path: `${m}/events?deliveryState=failed` },
    { name: 'Events, delivery pending', path: `${m}/events?deliveryState=pending` },
    { name: 'Events, delivery none', path: `${m}/events?deliveryState=none` },
    { name: 'Request log, first page', path: `${m}/requests` },
    { name: 'Request log, status 4xx', path: `${m}/requests?status=4xx` },
    { name: 'Request log, status 404', path: `${m}/requests?status=404` },
    { name: "Request log, an intent's path", path: `${m}/requests?path=/api/v1/payment-intents/${seededIntent(777)}` },
  ];
}

async function concurrent(consoleUrl: string, b: Browser, paths: string[]) {
  let i = 0;
  const result = await autocannon({
    url: consoleUrl,
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: { cookie: b.header() },
    requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[i++ % paths.length]! }) }],
  });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/**
 * The yardstick: the 30 days of figures summed from the payments table, as one query (what the
 * charts would cost without the rollup), timed `times` times on a connection of its own.
 */
async function yardstick(s: Seeded, times = 3): Promise<number[]> {
  const database = await openDatabase({ databaseUrl: s.databaseUrl, dataDir: s.dataDir, poolSize: 3, migrate: false });
  try {
    const out: number[] = [];
    for (let i = 0; i < times; i++) {
      const t0 = performance.now();
      await database.db.execute(sql`
        select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, count(*), count(*) filter (where status = 'Failed'),
          sum(amount), coalesce(sum(captured_amount) filter (where status <> 'Failed'), 0), sum(refunded_amount)
        from payments where client_id = ${s.clientId} and created_at >= now() - interval '30 days' group by 1 order by 1`);
      out.push(round(performance.now() - t0));
    }
    return out;
  } finally {
    await database.close();
  }
}

async function measure(s: Seeded) {
  say('Yardstick: the 30 days summed from the payments table…');
  const sums = await yardstick(s);
  const consolePort = await freePort();
  const coffer: CofferServer & { dataDir: string } = await startCoffer({
    databaseUrl: s.databaseUrl,
    dataDir: s.dataDir,
    env: {
      LISTENERS: 'api,admin,console',
      CONSOLE_PORT: String(consolePort),
      CONSOLE_RATE_LIMIT_PER_MINUTE: '100000000',
      CONSOLE_SIGN_IN_RATE_LIMIT_PER_MINUTE: '1000',
    },
  });
  try {
    const consoleUrl = `http://127.0.0.1:${consolePort}`;
    const b = await signIn(consoleUrl, s);
    // The page before the middle one, by offset once: its Next link goes to the middle by cursor.
    const before = await b.fetch(`/m/${s.clientId}/payments?page[offset]=${Math.floor(s.payments / 2) - 25}`);
    const next = /<a rel="next" href="([^"]+)"/.exec(before.body)?.[1]?.replace(/&amp;/g, '&');
    if (!next) throw new Error('no Next link on the payments page');
    const results: PageResult[] = [];
    const pages = pagesOf(s, next);
    // A first pass over every page, not counted: the server's code compiled, its pool's
    // connections open and their statements planned, whichever page is timed first.
    for (const p of pages) for (let i = 0; i < 3; i++) await b.fetch(p.path);
    for (const p of pages) {
      results.push(await timePage(b, p.name, p.path, p.expect));
      say(`  ${p.name}: p50 ${results.at(-1)!.p50} ms, p99 ${results.at(-1)!.p99} ms`);
    }
    const mix = pages.filter((p) => !p.expect && p.mix !== false).map((p) => p.path);
    say(`Concurrent: ${mix.length} pages in turn, ${CONNECTIONS} connections, ${DURATION_S} s…`);
    const mixed = await concurrent(consoleUrl, b, mix);
    return { results, mixed, sums, mixPages: mix.length };
  } finally {
    await coffer.stop();
  }
}

// ----- main --------------------------------------------------------------------------------------

let s: Seeded;
if (values.reuse) {
  if (!existsSync(SEED_FILE)) throw new Error('--reuse: no bench/results/console-seed.json (run with --keep first)');
  s = JSON.parse(readFileSync(SEED_FILE, 'utf8')) as Seeded;
  say(`Reusing the seeded ${s.db} database (${s.payments.toLocaleString('en-US')} payments)`);
} else {
  say(`Step 1: migrations, a merchant and payments through the API (${db})`);
  const base = await throughApi();
  const database = await openDatabase({ databaseUrl: base.databaseUrl, dataDir: base.dataDir, poolSize: 3 });
  let seedSeconds: Record<string, number>;
  try {
    seedSeconds = await seed(database, base);
  } finally {
    await database.close();
  }
  s = { ...base, reference: `order-${Math.floor(N / 3)}`, seedSeconds };
  if (values.keep) {
    await writeResults('console-seed', s);
    say('Kept: --reuse runs the pages again on this database.');
  }
}
say('Step 3: the console, signed in as the merchant');
const { results, mixed, sums, mixPages } = await measure(s);
const rows = results.map((r) => `| ${r.name} | ${r.p50} | ${r.p99} | ${(r.bytes / 1024).toFixed(1)} |`);
process.stdout.write(
  `\n### Console on ${s.db === 'postgres' ? 'PostgreSQL 15' : 'PGlite'}, ${s.payments.toLocaleString('en-US')} payments (${REQUESTS} sequential requests per page)\n\n` +
    `| page | p50 ms | p99 ms | KB |\n|---|---:|---:|---:|\n${rows.join('\n')}\n\n` +
    `The ${mixPages} pages above but the typed offset, in turn, from ${CONNECTIONS} connections for ${DURATION_S} s: ${mixed.rps} pages/s, p50 ${mixed.p50} ms, p99 ${mixed.p99} ms, ${mixed.non2xx + mixed.errors} non-2xx + errors\n` +
    `Yardstick: the same 30 days of figures summed from the payments table (one query, no rollup): ${sums.join(', ')} ms\n` +
    `\nMachine: ${machine()}\n`,
);
await writeResults(`console-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}`, {
  machine: machine(),
  seed: s,
  requests: REQUESTS,
  results,
  mixed,
  yardstickMs: sums,
});
if (!values.keep && !values.reuse) await dropDatabases();
