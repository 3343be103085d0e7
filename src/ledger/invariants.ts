// Checks every ledger invariant; tests run it after each concurrent scenario, operators via
// the admin API. Returns the violations found (empty when the ledger is sound).
import { sql } from 'drizzle-orm';
import { rowsOf, type Executor } from '../db/open.ts';

export interface Violation {
  rule: string;
  detail: string;
}

export async function verifyLedger(db: Executor): Promise<Violation[]> {
  const out: Violation[] = [];
  const q = async <T>(query: ReturnType<typeof sql>) => rowsOf<T>(await db.execute(query));

  // 1. All postings together sum to zero: money is only ever moved, never made.
  const [total] = await q<{ s: string | number }>(sql`select coalesce(sum(amount), 0)::text as s from ledger_postings`);
  if (String(total?.s ?? '0') !== '0') out.push({ rule: 'postings sum to zero', detail: `all postings sum to ${total?.s}` });

  // 2. Each entry balances and has at least two postings.
  for (const r of await q<{ entry_id: string; s: string; n: number }>(sql`
      select e.id as entry_id, coalesce(sum(p.amount), 0)::text as s, count(p.id)::int as n
      from ledger_entries e left join ledger_postings p on p.entry_id = e.id
      group by e.id having coalesce(sum(p.amount), 0) <> 0 or count(p.id) < 2`)) {
    out.push({ rule: 'each entry balances', detail: `entry ${r.entry_id}: ${r.n} postings summing to ${r.s}` });
  }

  // 3. Each tracked balance equals the sum of its postings.
  for (const r of await q<{ id: string; code: string; balance: number; s: string }>(sql`
      select a.id, a.code, a.balance, coalesce(sum(p.amount), 0)::text as s
      from ledger_accounts a left join ledger_postings p on p.account_id = a.id
      where a.tracked group by a.id having a.balance <> coalesce(sum(p.amount), 0)`)) {
    out.push({ rule: 'balance equals postings', detail: `account ${r.id} (${r.code}): balance ${r.balance}, postings ${r.s}` });
  }

  // 4. Nothing that must not be negative is.
  for (const r of await q<{ id: string; code: string; balance: number }>(sql`
      select id, code, balance from ledger_accounts where not allow_negative and balance < 0`)) {
    out.push({ rule: 'no forbidden negative', detail: `account ${r.id} (${r.code}) is ${r.balance}` });
  }
  for (const r of await q<{ id: string; code: string; s: string }>(sql`
      select a.id, a.code, sum(p.amount)::text as s from ledger_accounts a join ledger_postings p on p.account_id = a.id
      where not a.allow_negative and not a.tracked group by a.id having sum(p.amount) < 0`)) {
    out.push({ rule: 'no forbidden negative', detail: `untracked account ${r.id} (${r.code}) sums to ${r.s}` });
  }

  // 5. Each wallet's pending deposits equal its pending transactions.
  for (const r of await q<{ wallet_id: string; balance: number; s: string }>(sql`
      select a.owner_id as wallet_id, a.balance, coalesce((select sum(t.wallet_amount) from transactions t
        where t.wallet_id = a.owner_id and t.status = 'Pending'), 0)::text as s
      from ledger_accounts a where a.owner_type = 'wallet' and a.code = 'deposit.pending'
        and a.balance <> coalesce((select sum(t.wallet_amount) from transactions t where t.wallet_id = a.owner_id and t.status = 'Pending'), 0)`)) {
    out.push({ rule: 'pending deposits match', detail: `wallet ${r.wallet_id}: deposit.pending ${r.balance}, pending transactions ${r.s}` });
  }

  // 6. Each posting belongs to an entry and an account that exist. The ledger's tables carry no
  // foreign keys (schema.ts, HOT_PATH_REFERENCES): this is where a dangling reference shows.
  for (const r of await q<{ id: string; entry: boolean; account: boolean }>(sql`
      select p.id, e.id is not null as entry, a.id is not null as account from ledger_postings p
      left join ledger_entries e on e.id = p.entry_id left join ledger_accounts a on a.id = p.account_id
      where e.id is null or a.id is null`)) {
    out.push({ rule: 'postings reference entries and accounts', detail: `posting ${r.id}: ${[!r.entry && 'no entry', !r.account && 'no account'].filter(Boolean).join(', ')}` });
  }
  return out;
}
