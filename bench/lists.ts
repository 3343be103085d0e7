// The `lists` scenario of bench/run.ts: every API list at 50 connections with 1,000,000 rows of
// its kind in one merchant's table (users, wallets, one wallet's transactions, payment intents,
// payments, events), on PostgreSQL only (PGlite would take hours to seed).
//
// A server runs the migrations and a merchant is created through the admin API; with the server
// stopped, the tables are seeded by set-based SQL (generate_series, as bench/console.ts does) with
// the counters' triggers on, so list_counts and its deltas count the seeded rows exactly as they
// count the API's writes; then VACUUM ANALYZE, and the server starts again (its list-count-fold
// job folds the seed's deltas). Each list is timed: first page, a counted filter, a selective
// filter, page[offset]=1000, against the bare Fastify route of the same run. Every response's
// meta.total is checked against a count(*) made once before the load.
import { envelope } from '../src/modules/events/record.ts';
import type { AnyTopic } from '../src/modules/events/topics.ts';
import { paymentResource } from '../src/modules/payments/render.ts';
import type { PaymentRow } from '../src/modules/payments/sql.ts';
import {
  type Auth,
  BareBeside,
  type CofferServer,
  freshDatabase,
  json,
  load,
  merchant,
  PG_SERVER,
  runOn,
  startCoffer,
  type LoadResult,
} from './lib.ts';

const say = (s: string) => process.stderr.write(`${s}\n`);

/** Rows of each kind (the lists scenario's; LISTS_ROWS sets another). */
export const LIST_ROWS = Number(process.env.LISTS_ROWS ?? 1_000_000);

/** A time-ordered uuid (version 7's layout) from a timestamp and a seed text, in SQL. */
const uuidv7Sql = (ts: string, seed: string) =>
  `(lpad(to_hex((extract(epoch from ${ts}) * 1000)::bigint), 12, '0') || '7' || substr(md5(${seed}), 1, 3) || '8' || substr(md5(${seed}), 4, 15))::uuid`;

const [EVENT_ID, PAYMENT_ID, INTENT_ID, TOPIC, AT] = ['@event-id@', '@payment-id@', '@intent-id@', '@topic@', '@at@'];

/**
 * The body of a seeded event, as Coffer writes one (envelope() around a rendered payment, about
 * 1.2 KB) with placeholders for what differs per event; so a page of events parses and sends
 * what a real one would.
 */
function eventBodyTemplate(clientId: string): string {
  const at = new Date(0);
  const payment = paymentResource(
    {
      id: PAYMENT_ID,
      intentId: INTENT_ID,
      status: 'Sent',
      amount: 4250,
      capturedAmount: 4250,
      refundedAmount: 0,
      rail: 'bank',
      channel: 'Store:nyc-3',
      reference: 'order-20261128-000417',
      disbursement: [],
      externalPayments: [],
      failureReason: null,
      expiresAt: at,
      updatedAt: at,
      createdAt: at,
    } as unknown as PaymentRow,
    { baseUrl: 'https://api.coffer.example', secureUrl: 'https://secure.coffer.example' },
  );
  const body = envelope(EVENT_ID, { clientId, topic: TOPIC as AnyTopic, resource: payment, now: at });
  return body.replaceAll(at.toISOString(), AT);
}

async function seed(databaseUrl: string, clientId: string, N: number): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  const M = `'${clientId}'::uuid`;
  const T0 = `'${new Date().toISOString()}'::timestamptz`;
  // Row k of each kind is created (40 days × k / N) after 40 days ago.
  const ts = (k: string) => `${T0} - interval '40 days' * ((${N} - ${k})::float8 / ${N})`;
  const step = async (name: string, text: string, values?: unknown[]) => {
    const t0 = performance.now();
    await c.query(text, values);
    say(`  ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };
  try {
    say(`Seeding ${N.toLocaleString('en-US')} rows of each kind…`);
    await step(
      'users',
      `insert into users (id, client_id, public_id, first_name, email, phone_number, reference_id, kyc_status, created_at, updated_at)
         select md5('u' || k)::uuid, ${M}, 'seed-' || k, 'Seed', 'seed' || k || '@example.com', '+1999' || lpad(k::text, 7, '0'), 'ref-' || k, 'Approved', ${ts('k')}, ${ts('k')}
         from generate_series(1, ${N}) k`,
    );
    await step(
      'wallets (one per user)',
      `insert into wallets (id, client_id, user_id, status, created_at, updated_at)
         select md5('w' || k)::uuid, ${M}, md5('u' || k)::uuid, 'Active', ${ts('k')}, ${ts('k')} from generate_series(1, ${N}) k`,
    );
    await step(
      "transactions (all in user 1's wallet)",
      `insert into transactions (id, client_id, wallet_id, user_id, linked_account_id, type, status, amount, wallet_amount, fee_amount, fee_type, fee_deducted, disbursement, created_at, updated_at)
         select ${uuidv7Sql(ts('k'), `'t' || k`)}, ${M}, md5('w1')::uuid, md5('u1')::uuid, md5('a1')::uuid, 'OneTimeDeposit',
           case when k % 50 = 0 then 'Failed' else 'Cleared' end, 1000 + k % 5000, 1000 + k % 5000, 0, 'None', 0, '[]'::jsonb, ${ts('k')}, ${ts('k')}
         from generate_series(1, ${N}) k`,
    );
    // Intent k by k % 100: 70 PromotedToPayment, 12 Expired, 10 Canceled, 5 Invalid, 3 Promotable
    // (expiring tomorrow); a fifth scanned by the customer; 1 in 50 a gift's.
    await step(
      'payment intents',
      `insert into payment_intents (id, client_id, wallet_id, user_id, amount, status, reference, initiator, payment_method, balance, expires_at, created_at, updated_at)
         select ${uuidv7Sql('ts', `'i' || k`)}, ${M}, md5('w' || (1 + k % 1000))::uuid, md5('u' || (1 + k % 1000))::uuid, 100 + k % 50000,
           case when r < 70 then 'PromotedToPayment' when r < 82 then 'Expired' when r < 92 then 'Canceled' when r < 97 then 'Invalid' else 'Promotable' end,
           'order-' || k, case when k % 5 = 0 then 'Customer' else 'Merchant' end, case when k % 50 = 1 then 'Gift' else 'Wallet' end,
           '{"available": 0, "eligibleReward": 0, "upperLimit": 0}'::jsonb,
           case when r >= 97 then ${T0} + interval '1 day' else ts + interval '1 hour' end, ts, ts
         from (select k, k % 100 as r, ${ts('k')} as ts from generate_series(1, ${N}) k) g`,
    );
    // Payment k by k % 100: 60 Sent, 10 Processing, 10 Created, 10 Failed, 5 Canceled, 5 Returned;
    // channel 'App:ios' for 1 in 10, 'Store:nyc-<0..6>' for 1 in 10, none for the rest.
    await step(
      'payments',
      `insert into payments (id, client_id, intent_id, wallet_id, user_id, rail, status, amount, captured_amount, channel, reference,
           sourcing, external_payments, disbursement, expires_at, created_at, updated_at)
         select ${uuidv7Sql('ts', `'p' || k`)}, ${M}, ${uuidv7Sql('ts', `'i' || k`)}, md5('w' || (1 + k % 1000))::uuid, md5('u' || (1 + k % 1000))::uuid, 'bank',
           case when r < 60 then 'Sent' when r < 70 then 'Processing' when r < 80 then 'Created' when r < 90 then 'Failed' when r < 95 then 'Canceled' else 'Returned' end,
           100 + k % 50000, 0, case k % 10 when 0 then 'Store:nyc-' || (k % 7) when 1 then 'App:ios' end, 'order-' || k,
           '{}'::jsonb, '[]'::jsonb, '[]'::jsonb, ts + interval '7 days', ts, ts
         from (select k, k % 100 as r, ${ts('k')} as ts from generate_series(1, ${N}) k) g`,
    );
    // The weeks the events fall in, as a server running for 40 days would have them (else they
    // would sit in the default partition: docs/operations.md#retention).
    await step(
      'event weeks',
      `select create_event_partitions(w::date) from generate_series(date_trunc('week', ${T0} - interval '41 days'), ${T0}, interval '7 days') w`,
    );
    await step(
      'events',
      `insert into events (id, client_id, topic, resource_type, resource_id, body, created_at)
         select e.id, ${M}, e.topic, 'Payment', e.payment_id,
           replace(replace(replace(replace(replace($1, '${EVENT_ID}', e.id::text), '${PAYMENT_ID}', e.payment_id::text),
             '${INTENT_ID}', e.intent_id::text), '${TOPIC}', e.topic), '${AT}', to_char(e.ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
           e.ts
         from (select ${uuidv7Sql(ts('k'), `'e' || k`)} as id, ${uuidv7Sql(ts('k'), `'p' || k`)} as payment_id, ${uuidv7Sql(ts('k'), `'i' || k`)} as intent_id,
                 case k % 4 when 0 then 'PaymentCreated' when 1 then 'PaymentCaptured' when 2 then 'TransactionCreated' else 'UserCreated' end as topic, ${ts('k')} as ts
               from generate_series(1, ${N}) k) e`,
      [eventBodyTemplate(clientId)],
    );
    await step('vacuum analyze', 'vacuum analyze');
  } finally {
    await c.end();
  }
}

async function keptDatabase(): Promise<string> {
  const name = `coffer_lists_kept_${Date.now()}`;
  await runOn(PG_SERVER, `create database ${name}`);
  const u = new URL(PG_SERVER);
  u.pathname = `/${name}`;
  say(`Kept database: ${u.toString()}`);
  return u.toString();
}

/** count(*) of the rows a list shows, each counted once before the load: what every meta.total must be. */
async function truth(databaseUrl: string, text: string): Promise<number> {
  const [row] = await runOn<{ n: string }>(databaseUrl, text);
  return Number(row!.n);
}

/** A list's page as the benchmark reads it, and the count(*) its meta.total must be. */
export interface ListRow {
  name: string;
  path: string;
  count: string;
  /** A first page, a page with filters, or a page past an offset. */
  kind: 'first' | 'filter' | 'offset';
}

/**
 * A server on a database seeded with `n` rows of each kind for one merchant (on the PostgreSQL
 * server of DATABASE_URL), and the lists to read, each one's meta.total checked against its
 * count(*). The caller stops the server.
 */
export async function seededLists(n: number): Promise<{ coffer: CofferServer; auth: Auth; rows: ListRow[] }> {
  // LISTS_KEEP=1: a database of its own that the run leaves behind (to EXPLAIN the lists' queries on).
  const databaseUrl = process.env.LISTS_KEEP ? await keptDatabase() : await freshDatabase(PG_SERVER, 'coffer_lists');
  let coffer = await startCoffer({ databaseUrl });
  const auth = await merchant(coffer);
  await coffer.stop();
  const clientId = auth['client-id'];
  await seed(databaseUrl, clientId, n);
  // Events are kept longer than the seed's 40 days, so the event-retention job leaves them all.
  coffer = await startCoffer({ databaseUrl, env: { EVENT_RETENTION_DAYS: '60' } });
  try {
    const wallet = (await json(`${coffer.url}/api/v1/wallets?filter[email]=seed1@example.com`, { headers: auth }))
      .data[0].id as string;
    const intentId = (await json(`${coffer.url}/api/v1/payments?filter[reference]=order-777`, { headers: auth }))
      .data[0].relationships.paymentIntent.data.id as string;
    const M = `client_id = '${clientId}'`;
    const now = new Date().toISOString();
    const rows: Omit<ListRow, 'kind'>[] = [
      { name: 'users', path: '/api/v1/users', count: `select count(*) as n from users where ${M}` },
      {
        name: 'users, filter[email]',
        path: '/api/v1/users?filter[email]=seed777@example.com',
        count: `select count(*) as n from users where ${M} and email = 'seed777@example.com'`,
      },
      {
        name: 'users, page[offset]=1000',
        path: '/api/v1/users?page[offset]=1000',
        count: `select count(*) as n from users where ${M}`,
      },
      { name: 'wallets', path: '/api/v1/wallets', count: `select count(*) as n from wallets where ${M}` },
      {
        name: 'wallets, filter[phoneNumber]',
        path: '/api/v1/wallets?filter[phoneNumber]=%2B19990000777',
        count: `select 1 as n`,
      },
      {
        name: 'wallets, page[offset]=1000',
        path: '/api/v1/wallets?page[offset]=1000',
        count: `select count(*) as n from wallets where ${M}`,
      },
      {
        name: "a wallet's transactions",
        path: `/api/v1/wallets/${wallet}/transactions`,
        count: `select count(*) as n from transactions where wallet_id = '${wallet}'`,
      },
      {
        name: "a wallet's transactions, page[offset]=1000",
        path: `/api/v1/wallets/${wallet}/transactions?page[offset]=1000`,
        count: `select count(*) as n from transactions where wallet_id = '${wallet}'`,
      },
      {
        name: 'payment intents',
        path: '/api/v1/payment-intents',
        count: `select count(*) as n from payment_intents where ${M}`,
      },
      {
        name: 'payment intents, filter[status]=Canceled',
        path: '/api/v1/payment-intents?filter[status]=Canceled',
        count: `select count(*) as n from payment_intents where ${M} and status = 'Canceled'`,
      },
      {
        name: 'payment intents, filter[status]=Expired',
        path: '/api/v1/payment-intents?filter[status]=Expired',
        count: `select count(*) as n from payment_intents where ${M} and (status = 'Expired' or (status in ('Promotable', 'RequiresAction') and expires_at <= '${now}'))`,
      },
      {
        name: 'payment intents, filter[status]=Canceled&filter[initiator]=Customer',
        path: '/api/v1/payment-intents?filter[status]=Canceled&filter[initiator]=Customer',
        count: `select count(*) as n from payment_intents where ${M} and status = 'Canceled' and initiator = 'Customer'`,
      },
      {
        // No intent matches both: the page walks every live Promotable intent (30,000) to find none.
        name: 'payment intents, filter[status]=Promotable&filter[initiator]=Customer (none match)',
        path: '/api/v1/payment-intents?filter[status]=Promotable&filter[initiator]=Customer',
        count: `select count(*) as n from payment_intents where ${M} and status = 'Promotable' and initiator = 'Customer' and expires_at > '${now}'`,
      },
      {
        name: 'payment intents, filter[paymentMethod]=Gift',
        path: '/api/v1/payment-intents?filter[paymentMethod]=Gift',
        count: `select count(*) as n from payment_intents where ${M} and payment_method = 'Gift'`,
      },
      {
        name: 'payment intents, page[offset]=1000',
        path: '/api/v1/payment-intents?page[offset]=1000',
        count: `select count(*) as n from payment_intents where ${M}`,
      },
      { name: 'payments', path: '/api/v1/payments', count: `select count(*) as n from payments where ${M}` },
      {
        name: 'payments, filter[status]=Failed',
        path: '/api/v1/payments?filter[status]=Failed',
        count: `select count(*) as n from payments where ${M} and status = 'Failed'`,
      },
      {
        name: 'payments, filter[channel]=App:ios',
        path: '/api/v1/payments?filter[channel]=App:ios',
        count: `select count(*) as n from payments where ${M} and channel = 'App:ios'`,
      },
      {
        name: 'payments, filter[channel]=App:ios&filter[status]=Sent',
        path: '/api/v1/payments?filter[channel]=App:ios&filter[status]=Sent',
        count: `select count(*) as n from payments where ${M} and channel = 'App:ios' and status = 'Sent'`,
      },
      {
        name: 'payments, filter[reference]',
        path: '/api/v1/payments?filter[reference]=order-777',
        count: `select count(*) as n from payments where ${M} and reference = 'order-777'`,
      },
      {
        name: 'payments, filter[paymentIntentId]',
        path: `/api/v1/payments?filter[paymentIntentId]=${intentId}`,
        count: `select count(*) as n from payments where ${M} and intent_id = '${intentId}'`,
      },
      {
        name: 'payments, page[offset]=1000',
        path: '/api/v1/payments?page[offset]=1000',
        count: `select count(*) as n from payments where ${M}`,
      },
      { name: 'webhook events', path: '/api/v1/webhook-events', count: `select count(*) as n from events where ${M}` },
      {
        name: 'webhook events, filter[topic]=PaymentCaptured',
        path: '/api/v1/webhook-events?filter[topic]=PaymentCaptured',
        count: `select count(*) as n from events where ${M} and topic = 'PaymentCaptured'`,
      },
      {
        name: 'webhook events, page[offset]=1000',
        path: '/api/v1/webhook-events?page[offset]=1000',
        count: `select count(*) as n from events where ${M}`,
      },
    ];
    for (const r of rows) {
      const expected = await truth(databaseUrl, r.count);
      const got = await json(`${coffer.url}${r.path}`, { headers: auth });
      if (got.meta.total !== expected) throw new Error(`${r.path}: meta.total ${got.meta.total}, count(*) ${expected}`);
      say(`${r.name}: total ${expected.toLocaleString('en-US')}`);
    }
    const kind = (path: string): ListRow['kind'] =>
      path.includes('page[offset]') ? 'offset' : path.includes('filter[') ? 'filter' : 'first';
    return { coffer, auth, rows: rows.map((r) => ({ ...r, kind: kind(r.path) })) };
  } catch (e) {
    await coffer.stop();
    throw e;
  }
}

export async function listsScenario(
  db: string,
  o: { durationS: number; bare: () => Promise<LoadResult> },
): Promise<LoadResult[]> {
  if (db !== 'postgres') throw new Error('the lists scenario runs on PostgreSQL only (--db postgres)');
  const results: LoadResult[] = [await o.bare()];
  const { coffer, auth, rows } = await seededLists(LIST_ROWS);
  const beside = await BareBeside.start();
  try {
    for (const r of rows) {
      results.push(
        await beside.around(() =>
          load(`GET ${r.name}`, {
            url: `${coffer.url}${r.path}`,
            headers: auth,
            serverPid: coffer.proc.pid,
            durationS: o.durationS,
          }),
        ),
      );
    }
  } finally {
    await beside.stop();
    await coffer.stop();
  }
  return results;
}
