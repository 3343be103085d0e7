// Posting a movement: one balanced entry, its postings, and the cached balances of tracked
// accounts, all in the caller's transaction. A balance that may not go negative cannot: the
// update is a single `balance = balance + delta` under the row lock, and the table's CHECK
// rejects a negative result, so concurrent spenders serialise on the row and the loser fails
// (there is no read-then-write window). A deferred trigger re-checks that each entry sums to
// zero when the transaction commits.
import { sql } from 'drizzle-orm';
import { uuidv7 } from '../ids.ts';
import { checkViolation } from '../db/errors.ts';
import type { Executor } from '../db/open.ts';
import { WriteBatch, type WritePart } from '../db/batch.ts';
import { runWithNext, statement } from '../db/statements.ts';
import { trackingOf } from './accounts.ts';
import { afterCommit } from '../db/commit-hooks.ts';
import { countMovement } from '../observability/metrics.ts';

export interface Posting {
  accountId: string;
  /** Signed integer cents; never zero. */
  amount: number;
}

export interface EntryInput {
  clientId: string;
  kind: string;
  refType: string;
  refId: string;
  postings: Posting[];
  now: Date;
}

/** A tracked account would have gone negative; the transaction is aborted. */
export class InsufficientFundsError extends Error {
  constructor() {
    super('insufficient funds');
    this.name = 'InsufficientFundsError';
  }
}

class UnbalancedEntryError extends Error {
  constructor(detail: string) {
    super(`unbalanced ledger entry: ${detail}`);
    this.name = 'UnbalancedEntryError';
  }
}

/** The three writes of a movement, as parts of a write batch (each can merge with other movements'). */
function entryParts(entryId: string, input: EntryInput, postings: Posting[], ordered: [string, number][]): WritePart[] {
  const entry: EntryRow = {
    id: entryId,
    client_id: input.clientId,
    kind: input.kind,
    ref_type: input.refType,
    ref_id: input.refId,
    created_at: input.now,
  };
  const postingRows: PostingRow[] = postings.map((p) => ({
    id: uuidv7(),
    client_id: input.clientId,
    entry_id: entryId,
    account_id: p.accountId,
    amount: p.amount,
    created_at: input.now,
  }));
  const parts: WritePart[] = [
    {
      name: 'ledger_entry',
      text: 'insert into ledger_entries (id, client_id, kind, ref_type, ref_id, created_at) values ($1, $2, $3, $4, $5, $6)',
      params: [entryId, input.clientId, input.kind, input.refType, input.refId, input.now],
      merge: { key: 'ledger_entries', item: [entry], combine: combineEntries },
    },
  ];
  const posting = postingsStatement(postings.length);
  parts.push({
    name: posting.name,
    text: posting.text,
    params: [input.clientId, entryId, input.now, ...postingRows.flatMap((p) => [p.id, p.account_id, p.amount])],
    merge: { key: 'ledger_postings', item: postingRows, combine: combinePostings },
  });
  if (ordered.length > 0) {
    const balances = balancesStatement(ordered.length);
    parts.push({
      name: balances.name,
      text: balances.text,
      params: ordered.flat(),
      rows: ordered.map(([id]) => `ledger_accounts:${id}`),
      merge: { key: 'ledger_balances', item: ordered, combine: combineBalances, additive: true },
    });
  }
  return parts;
}

// The statements and merges of entryParts, made once per number of rows rather than for every
// entry (with the closures, each entry built three functions of its own and its statements' texts).
const combineEntries = (items: unknown[]): WritePart => entriesPart((items as EntryRow[][]).flat());
const combinePostings = (items: unknown[]): WritePart => postingsPart((items as PostingRow[][]).flat());
const combineBalances = (items: unknown[]): WritePart => balancesPart(summed((items as [string, number][][]).flat()));
const postingsStatements = new Map<number, { name: string; text: string }>();
const balancesStatements = new Map<number, { name: string; text: string }>();

function postingsStatement(count: number): { name: string; text: string } {
  let st = postingsStatements.get(count);
  if (!st) {
    let n = 3;
    const values = Array.from(
      { length: count },
      () => `($${++n}::uuid, $1::uuid, $2::uuid, $${++n}::uuid, $${++n}::bigint, $3::timestamptz)`,
    );
    st = {
      name: `ledger_postings_${count}`,
      text: `insert into ledger_postings (id, client_id, entry_id, account_id, amount, created_at) values ${values.join(', ')}`,
    };
    postingsStatements.set(count, st);
  }
  return st;
}

function balancesStatement(count: number): { name: string; text: string } {
  let st = balancesStatements.get(count);
  if (!st) {
    let m = 0;
    const values = Array.from({ length: count }, () => `($${++m}::uuid, $${++m}::bigint)`);
    st = {
      name: `ledger_balances_${count}`,
      text: `update ledger_accounts a set balance = a.balance + d.delta from (values ${values.join(', ')}) as d(id, delta) where a.id = d.id`,
    };
    balancesStatements.set(count, st);
  }
  return st;
}

/** Drops zero amounts (a 0-cent fee moves nothing) and checks the rest balances. */
function normalise(postings: Posting[]): Posting[] {
  const kept = postings.filter((p) => p.amount !== 0);
  let sum = 0;
  for (const p of kept) {
    if (!Number.isSafeInteger(p.amount))
      throw new UnbalancedEntryError(`${p.amount} is not an integer number of cents`);
    sum += p.amount;
  }
  if (sum !== 0) throw new UnbalancedEntryError(`postings sum to ${sum}`);
  if (kept.length === 1) throw new UnbalancedEntryError('a single posting');
  return kept;
}

/** Whether a database error is the ledger's no-negative check refusing a balance below zero. */
export const refusedByLedger = (err: unknown): boolean => checkViolation(err) === 'ledger_accounts_non_negative';

/**
 * Writes one entry. Returns its id, or undefined when every amount was zero. Account ids come
 * from accountIds()/clientAccountIds(); whether each keeps a cached balance is known from there
 * (trackingOf reads it again for one a bounded cache forgot, and refuses an id that is none).
 */
export async function postEntry(
  tx: Executor,
  input: EntryInput,
  batch?: WriteBatch,
  opts: { locked?: ReadonlySet<string> } = {},
): Promise<string | undefined> {
  const postings = normalise(input.postings);
  if (postings.length === 0) return undefined;
  const tracking = await trackingOf(
    tx,
    postings.map((p) => p.accountId),
  );
  const ordered = summed(
    postings.filter((p) => tracking.get(p.accountId)).map((p): [string, number] => [p.accountId, p.amount]),
  );
  // Tracked rows are locked first, in id order, so two movements touching the same accounts
  // wait for each other instead of deadlocking. NO KEY UPDATE does not conflict with the KEY
  // SHARE locks that inserting postings takes through their foreign key (FOR UPDATE would,
  // and did deadlock under load). One row needs no ordering: its UPDATE locks it.
  // A caller that already holds the locks (read with its balances, in id order) says so.
  if (ordered.length > 1 && !ordered.every(([id]) => opts.locked?.has(id))) {
    await tx.execute(
      sql`select id from ledger_accounts where id in ${ordered.map(([id]) => id)} order by id for no key update`,
    );
  }
  // The entry, its postings and the balances go out as one statement: with the caller's batch
  // (flushed with the caller's other writes), or on their own now. A batched movement must not
  // be one that can fail the no-negative check: that error would surface at the flush, away
  // from the code that knows what it means.
  const entryId = uuidv7();
  const parts = entryParts(entryId, input, postings, ordered);
  if (batch) {
    // A balance changed twice in one batch adds up (its part is additive); any other row
    // written twice flushes the earlier write first.
    for (const p of parts) await batch.put(tx, p);
    afterCommit(tx, () => countMovement(input.kind, 'committed'));
    return entryId;
  }
  const own = new WriteBatch();
  for (const p of parts) own.add(p);
  try {
    await own.flush(tx);
  } catch (err) {
    if (refusedByLedger(err)) {
      countMovement(input.kind, 'insufficient_funds');
      throw new InsufficientFundsError();
    }
    throw err;
  }
  afterCommit(tx, () => countMovement(input.kind, 'committed'));
  return entryId;
}

// Many movements at once (group commits): the entries and postings travel as JSON documents
// (serialized natively; the driver escapes array parameters element by element in JavaScript),
// each kind of row in one statement whatever their number, so the prepared plan stays the same.
interface EntryRow {
  id: string;
  client_id: string;
  kind: string;
  ref_type: string;
  ref_id: string;
  created_at: Date;
}

interface PostingRow {
  id: string;
  client_id: string;
  entry_id: string;
  account_id: string;
  amount: number;
  created_at: Date;
}

const ENTRIES_MANY = `insert into ledger_entries (id, client_id, kind, ref_type, ref_id, created_at)
  select * from json_to_recordset($1::json) as r(id uuid, client_id uuid, kind text, ref_type text, ref_id text, created_at timestamptz)`;
const POSTINGS_MANY = `insert into ledger_postings (id, client_id, entry_id, account_id, amount, created_at)
  select * from json_to_recordset($1::json) as r(id uuid, client_id uuid, entry_id uuid, account_id uuid, amount bigint, created_at timestamptz)`;
// The rows are found through the primary key (= any), each one's change by its position. Joined
// to unnest() instead, the planner chose a hash join over a scan of the whole table while the
// table was small (seen in EXPLAIN on the soak's database), a plan the prepared statement keeps
// until the table's statistics change.
const BALANCES_MANY = `update ledger_accounts a set balance = a.balance + ($2::bigint[])[array_position($1::uuid[], a.id)]
  where a.id = any($1::uuid[])`;
const LOCK_MANY = statement(
  'ledger_lock_many',
  'select id from ledger_accounts where id = any($1::uuid[]) order by id for no key update',
);

/**
 * Locks tracked accounts in id order (the order every movement locks them in). The lock goes to
 * PostgreSQL with the transaction's next statement, ahead of it in the same exchange, so it is
 * held before that statement runs without a round trip of its own.
 */
export async function lockAccounts(tx: Executor, ids: string[]): Promise<void> {
  await runWithNext(tx, LOCK_MANY, [ids]);
}

const entriesPart = (rows: EntryRow[]): WritePart => ({
  name: 'ledger_entries_many',
  text: ENTRIES_MANY,
  params: [JSON.stringify(rows)],
});
const postingsPart = (rows: PostingRow[]): WritePart => ({
  name: 'ledger_postings_many',
  text: POSTINGS_MANY,
  params: [JSON.stringify(rows)],
});
const balancesPart = (ordered: [string, number][]): WritePart => ({
  name: 'ledger_balances_many',
  text: BALANCES_MANY,
  params: [ordered.map(([id]) => id), ordered.map(([, d]) => d)],
  rows: ordered.map(([id]) => `ledger_accounts:${id}`),
});

/** Changes to tracked balances summed per account, without the zeros, in id order (the lock order). */
function summed(changes: Iterable<[string, number]>): [string, number][] {
  const deltas = new Map<string, number>();
  for (const [id, d] of changes) deltas.set(id, (deltas.get(id) ?? 0) + d);
  for (const [id, d] of deltas) if (d === 0) deltas.delete(id);
  return [...deltas].sort(([a], [b]) => (a < b ? -1 : 1));
}

/**
 * Many entries at once (a group of deposits): one insert of the entries, one of their postings
 * and one update of each tracked balance by its summed change, as parts of the caller's batch.
 * The tracked rows are locked first, in id order, as postEntry does. A movement that can fail
 * the no-negative check (a withdrawal's debit) fails the caller's whole batch when it is
 * flushed, so a caller grouping those runs each alone after such a failure (withdraw-groups.ts).
 */
export async function postEntries(tx: Executor, inputs: EntryInput[], batch: WriteBatch): Promise<void> {
  const entries: EntryRow[] = [];
  const postingRows: PostingRow[] = [];
  const changes: [string, number][] = [];
  const tracking = await trackingOf(
    tx,
    inputs.flatMap((i) => i.postings.map((p) => p.accountId)),
  );
  for (const input of inputs) {
    const postings = normalise(input.postings);
    if (postings.length === 0) continue;
    const id = uuidv7();
    entries.push({
      id,
      client_id: input.clientId,
      kind: input.kind,
      ref_type: input.refType,
      ref_id: input.refId,
      created_at: input.now,
    });
    for (const p of postings) {
      if (tracking.get(p.accountId)) changes.push([p.accountId, p.amount]);
      postingRows.push({
        id: uuidv7(),
        client_id: input.clientId,
        entry_id: id,
        account_id: p.accountId,
        amount: p.amount,
        created_at: input.now,
      });
    }
  }
  if (entries.length === 0) return;
  afterCommit(tx, () => {
    for (const e of entries) countMovement(e.kind, 'committed');
  });
  const ordered = summed(changes);
  if (ordered.length > 1)
    await lockAccounts(
      tx,
      ordered.map(([id]) => id),
    );
  batch.add(entriesPart(entries));
  batch.add(postingsPart(postingRows));
  if (ordered.length > 0) batch.add(balancesPart(ordered));
}
