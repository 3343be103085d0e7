// Checks every ledger invariant; tests run it after each concurrent scenario, operators via
// the admin API, and the ledger-check job on a schedule. Returns the violations found (empty
// when the ledger is sound).
//
// Linear in the ledger, so it reads the largest tables as few times as it can: the postings twice
// (summed by account, then by entry) and the entries once, in one read-only snapshot so that every
// rule sees the same ledger while money keeps moving.
import { sql } from 'drizzle-orm';
import { rowsOf, uuidArray, type Db, type Tx } from '../db/open.ts';

export interface Violation {
  rule: string;
  detail: string;
}

// Each account beside the sum of its postings, and each account id that postings name but no
// account has (id null); the last row (kind 'total') is the sum of every posting.
const BY_ACCOUNT = sql`with sums as materialized (
    select account_id, sum(amount) as s from ledger_postings group by account_id)
  select 'account' as kind, sums.account_id as posted_to, a.id, a.code, a.tracked, a.allow_negative as "allowNegative",
    a.balance::text as balance, coalesce(sums.s, 0)::text as s
  from sums full join ledger_accounts a on a.id = sums.account_id
  where a.id is null
    or (a.tracked and a.balance <> coalesce(sums.s, 0))
    or (not a.allow_negative and (case when a.tracked then a.balance else coalesce(sums.s, 0) end) < 0)
  union all
  select 'total', null, null, null, null, null, null, coalesce(sum(s), 0)::text from sums`;

// Each entry that does not balance or has fewer than two postings, and each entry id that
// postings name but no entry has (id null).
const BY_ENTRY = sql`with sums as (
    select entry_id, sum(amount) as s, count(*) as n from ledger_postings group by entry_id)
  select e.id, sums.entry_id as posted_in, coalesce(sums.s, 0)::text as s, coalesce(sums.n, 0)::int as n
  from ledger_entries e full join sums on sums.entry_id = e.id
  where e.id is null or sums.entry_id is null or sums.s <> 0 or sums.n < 2`;

// Each wallet whose pending deposits account differs from its pending transactions.
const PENDING_DEPOSITS = sql`with pending as (
    select wallet_id, sum(wallet_amount) as s from transactions where status = 'Pending' group by wallet_id)
  select a.owner_id as wallet_id, a.balance::text as balance, coalesce(p.s, 0)::text as s
  from ledger_accounts a left join pending p on p.wallet_id = a.owner_id
  where a.owner_type = 'wallet' and a.code = 'deposit.pending' and a.balance <> coalesce(p.s, 0)`;

interface AccountRow {
  kind: 'account' | 'total';
  posted_to: string | null;
  id: string | null;
  code: string | null;
  tracked: boolean | null;
  allowNegative: boolean | null;
  balance: string | null;
  s: string;
}

/** Checks the ledger in one read-only snapshot (db), or in the caller's transaction (tx). */
export async function verifyLedger(db: Db | Tx): Promise<Violation[]> {
  if ('rollback' in db) return verifyIn(db);
  return db.transaction(verifyIn, { isolationLevel: 'repeatable read', accessMode: 'read only' });
}

async function verifyIn(tx: Tx): Promise<Violation[]> {
  const out: Violation[] = [];
  const q = async <T>(query: ReturnType<typeof sql>) => rowsOf<T>(await tx.execute(query));
  // The two aggregates hash a group per account and per entry: in memory, not spilled to disk.
  // Linear in the ledger, the check may run past DATABASE_STATEMENT_TIMEOUT_MS, which is for requests.
  await tx.execute(sql`set local work_mem = '64MB'`);
  await tx.execute(sql`set local statement_timeout = 0`);

  const danglingAccounts: string[] = [];
  for (const r of await q<AccountRow>(BY_ACCOUNT)) {
    // 1. All postings together sum to zero: money is only ever moved, never made.
    if (r.kind === 'total') {
      if (r.s !== '0') out.push({ rule: 'postings sum to zero', detail: `all postings sum to ${r.s}` });
    } else if (r.id === null) {
      danglingAccounts.push(r.posted_to!);
    } else {
      // 3. Each tracked balance equals the sum of its postings.
      if (r.tracked && r.balance !== r.s)
        out.push({
          rule: 'balance equals postings',
          detail: `account ${r.id} (${r.code}): balance ${r.balance}, postings ${r.s}`,
        });
      // 4. Nothing that must not be negative is (an untracked account's balance is its postings).
      if (!r.allowNegative && r.tracked && BigInt(r.balance!) < 0n)
        out.push({ rule: 'no forbidden negative', detail: `account ${r.id} (${r.code}) is ${r.balance}` });
      if (!r.allowNegative && !r.tracked && BigInt(r.s) < 0n)
        out.push({ rule: 'no forbidden negative', detail: `untracked account ${r.id} (${r.code}) sums to ${r.s}` });
    }
  }

  // 2. Each entry balances and has at least two postings.
  const danglingEntries: string[] = [];
  for (const r of await q<{ id: string | null; posted_in: string | null; s: string; n: number }>(BY_ENTRY)) {
    if (r.id === null) danglingEntries.push(r.posted_in!);
    else out.push({ rule: 'each entry balances', detail: `entry ${r.id}: ${r.n} postings summing to ${r.s}` });
  }

  // 5. Each wallet's pending deposits equal its pending transactions.
  for (const r of await q<{ wallet_id: string; balance: string; s: string }>(PENDING_DEPOSITS)) {
    out.push({
      rule: 'pending deposits match',
      detail: `wallet ${r.wallet_id}: deposit.pending ${r.balance}, pending transactions ${r.s}`,
    });
  }

  // 6. Each posting belongs to an entry and an account that exist. The ledger's tables carry no
  // foreign keys (schema.ts, HOT_PATH_REFERENCES): this is where a dangling reference shows. The
  // aggregates above found the ids no row has; their postings are read by index.
  if (danglingAccounts.length > 0 || danglingEntries.length > 0) {
    const accounts = new Set(danglingAccounts);
    const entries = new Set(danglingEntries);
    for (const r of await q<{ id: string; entry_id: string; account_id: string }>(sql`
        select id, entry_id, account_id from ledger_postings
        where account_id = any(${uuidArray(accounts)}::uuid[]) or entry_id = any(${uuidArray(entries)}::uuid[]) order by id`)) {
      const missing = [entries.has(r.entry_id) && 'no entry', accounts.has(r.account_id) && 'no account']
        .filter(Boolean)
        .join(', ');
      out.push({ rule: 'postings reference entries and accounts', detail: `posting ${r.id}: ${missing}` });
    }
  }
  return out;
}
