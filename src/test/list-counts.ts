// The API lists' counters (migration 0021) against the tables they count: what tests of the
// counters compare.
import { sql } from 'drizzle-orm';
import { rowsOf, type Executor } from '../db/open.ts';

type Counts = Record<string, number>;

const of = (clientIds?: string[]) => (clientIds ? sql`where client_id::text in ${clientIds}` : sql``);

type Row = { client_id: string; list: string; key: string; n: number | string };
const keyed = (rows: Row[]): Counts =>
  Object.fromEntries(
    rows.filter((r) => Number(r.n) !== 0).map((r) => [`${r.client_id}|${r.list}|${r.key}`, Number(r.n)]),
  );

/** The merchants' rows (every merchant's by default) counted per list and key, the way the triggers and the migration count them. */
export async function countsFromTables(db: Executor, clientIds?: string[]): Promise<Counts> {
  return keyed(
    rowsOf<Row>(
      await db.execute(sql`
        select client_id::text, list, key, count(*) as n from (
          select client_id, 'users' as list, '{}' as key from users
          union all select client_id, 'wallets', '{}' from wallets
          union all select client_id, 'transactions', jsonb_build_object('walletId', wallet_id)::text from transactions
          union all select client_id, 'payment_intents', jsonb_build_object('status', status, 'initiator', initiator, 'paymentMethod', payment_method)::text from payment_intents
          union all select client_id, 'payments', jsonb_build_object('status', status)::text from payments
          union all select client_id, 'payments/channel=' || channel, jsonb_build_object('status', status)::text from payments where channel is not null
          union all select client_id, 'events', jsonb_build_object('topic', topic)::text from events
        ) x ${of(clientIds)} group by 1, 2, 3`),
    ),
  );
}

/** list_counts and the deltas not yet folded, summed per merchant, list and key (sums of zero left out). */
export async function countsKept(db: Executor, clientIds?: string[]): Promise<Counts> {
  return keyed(
    rowsOf<Row>(
      await db.execute(sql`
        select client_id::text, list, key, sum(n) as n from (
          select client_id, list, key, n from list_counts union all select client_id, list, key, n from list_count_deltas
        ) x ${of(clientIds)} group by 1, 2, 3`),
    ),
  );
}
