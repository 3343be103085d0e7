// What the database holds after a campaign, read for the checker (plain rows, no Coffer code
// but the ledger's own invariant check, which runs on the same database).
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { verifyLedger, type Violation } from '../src/ledger/invariants.ts';

export interface Facts {
  /**
   * When the drain found no delivery pending. The processes' jobs go on making events until
   * they stop (a payment settling): one committed in the moments after is left pending.
   */
  drainedAt?: number;
  /** Events with a delivery still pending when the processes stopped. */
  pendingEvents?: { id: string }[];
  transactions: { id: string; wallet_id: string; amount: number; status: string }[];
  withdrawals: { id: string; wallet_id: string; amount: number }[];
  rewards: { id: string; wallet_id: string | null; amount: number }[];
  refunds: { id: string; payment_id: string; amount: number }[];
  payments: {
    id: string;
    intent_id: string | null;
    wallet_id: string | null;
    gift_id: string | null;
    rail: string;
    status: string;
    amount: number;
    captured_amount: number;
    network_authorized: number;
    sourcing: { merchantReward: number; accrueReward: number; deposit: number };
  }[];
  /** The sandbox card network's authorizations and captures. */
  cardAuthorizations: { payment_id: string; status: string; amount: number }[];
  cardCaptures: { payment_id: string; amount: number; success: boolean }[];
  counterparties: { id: string }[];
  payouts: { id: string; counterparty_id: string; amount: number; status: string }[];
  incomingPayments: { id: string; counterparty_id: string; amount: number }[];
  intents: { id: string; status: string }[];
  users: { id: string }[];
  wallets: { id: string }[];
  gifts: { look_up_id: string }[];
  entries: { id: string; kind: string; ref_type: string; ref_id: string }[];
  postings: { entry_id: string; account_id: string; amount: number }[];
  accounts: {
    id: string;
    owner_id: string;
    code: string;
    balance: number;
    tracked: boolean;
    allow_negative: boolean;
  }[];
  events: { id: string; client_id: string; topic: string; created_at: number }[];
  webhooks: { id: string; client_id: string; url: string; created_at: number }[];
  /** What verifyLedger (src/ledger/invariants.ts) reports. */
  ledgerViolations: Violation[];
  /** After the faults: processes that did not answer /health, work left undone. */
  stuck: string[];
}

const QUERIES = {
  transactions: 'select id, wallet_id, amount::float8 as amount, status from transactions',
  withdrawals: 'select id, wallet_id, amount::float8 as amount from withdrawals',
  rewards: 'select id, wallet_id, amount::float8 as amount from rewards',
  refunds: 'select id, payment_id, amount::float8 as amount from refunds',
  payments:
    'select id, intent_id, wallet_id, gift_id, rail, status, amount::float8 as amount, captured_amount::float8 as captured_amount, network_authorized::float8 as network_authorized, sourcing from payments',
  cardAuthorizations: 'select payment_id, status, amount::float8 as amount from card_authorizations',
  cardCaptures: 'select payment_id, amount::float8 as amount, success from card_captures',
  counterparties: 'select id from counterparties',
  payouts: 'select id, counterparty_id, amount::float8 as amount, status from counterparty_payouts',
  incomingPayments: 'select id, counterparty_id, amount::float8 as amount from counterparty_incoming_payments',
  intents: 'select id, status from payment_intents',
  users: 'select id from users',
  wallets: 'select id from wallets',
  gifts: 'select look_up_id from gifts',
  entries: 'select id, kind, ref_type, ref_id from ledger_entries',
  postings: 'select entry_id, account_id, amount::float8 as amount from ledger_postings',
  accounts: 'select id, owner_id, code, balance::float8 as balance, tracked, allow_negative from ledger_accounts',
  events: 'select id, client_id, topic, (extract(epoch from created_at) * 1000)::float8 as created_at from events',
  pendingEvents: "select distinct event_id as id from event_deliveries where state = 'pending'",
  webhooks: 'select id, client_id, url, (extract(epoch from created_at) * 1000)::float8 as created_at from webhooks',
} as const;

export async function loadFacts(databaseUrl: string, stuck: string[], drainedAt: number): Promise<Facts> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const out: Record<string, unknown> = {};
    // Every fact from one snapshot.
    const client = await pool.connect();
    try {
      await client.query('begin isolation level repeatable read');
      for (const [k, q] of Object.entries(QUERIES)) out[k] = (await client.query(q)).rows;
      await client.query('commit');
    } finally {
      client.release();
    }
    out.drainedAt = drainedAt;
    out.ledgerViolations = await verifyLedger(drizzle({ client: pool }) as never);
    out.stuck = stuck;
    return out as unknown as Facts;
  } finally {
    await pool.end();
  }
}
