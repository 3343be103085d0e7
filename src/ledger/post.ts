// Posting a movement: one balanced entry, its postings, and the cached balances of tracked
// accounts, all in the caller's transaction. A balance that may not go negative cannot: the
// update is a single `balance = balance + delta` under the row lock, and the table's CHECK
// rejects a negative result, so concurrent spenders serialise on the row and the loser fails
// (there is no read-then-write window). A deferred trigger re-checks that each entry sums to
// zero when the transaction commits.
import { sql } from 'drizzle-orm';
import { uuidv7 } from 'uuidv7';
import { checkViolation } from '../db/errors.ts';
import type { Executor } from '../db/open.ts';
import { ledgerEntries, ledgerPostings } from '../db/schema.ts';
import { isTracked } from './accounts.ts';

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

export class UnbalancedEntryError extends Error {
  constructor(detail: string) {
    super(`unbalanced ledger entry: ${detail}`);
    this.name = 'UnbalancedEntryError';
  }
}

/** Drops zero amounts (a 0-cent fee moves nothing) and checks the rest balances. */
function normalise(postings: Posting[]): Posting[] {
  const kept = postings.filter((p) => p.amount !== 0);
  let sum = 0;
  for (const p of kept) {
    if (!Number.isSafeInteger(p.amount)) throw new UnbalancedEntryError(`${p.amount} is not an integer number of cents`);
    sum += p.amount;
  }
  if (sum !== 0) throw new UnbalancedEntryError(`postings sum to ${sum}`);
  if (kept.length === 1) throw new UnbalancedEntryError('a single posting');
  return kept;
}

/**
 * Writes one entry. Returns its id, or undefined when every amount was zero. Account ids must
 * come from accountIds()/clientAccountIds(), which know whether each keeps a cached balance.
 */
export async function postEntry(tx: Executor, input: EntryInput): Promise<string | undefined> {
  const postings = normalise(input.postings);
  for (const p of postings) {
    if (isTracked(p.accountId) === undefined) throw new Error(`ledger account ${p.accountId} was not obtained through accountIds()`);
  }
  if (postings.length === 0) return undefined;
  const deltas = new Map<string, number>();
  for (const p of postings) if (isTracked(p.accountId)) deltas.set(p.accountId, (deltas.get(p.accountId) ?? 0) + p.amount);
  for (const [id, d] of deltas) if (d === 0) deltas.delete(id);
  const ordered = [...deltas].sort(([a], [b]) => (a < b ? -1 : 1));
  // Tracked rows are locked first, in id order, so two movements touching the same accounts
  // wait for each other instead of deadlocking. NO KEY UPDATE does not conflict with the KEY
  // SHARE locks that inserting postings takes through their foreign key (FOR UPDATE would,
  // and did deadlock under load).
  if (ordered.length > 1) {
    await tx.execute(sql`select id from ledger_accounts where id in ${ordered.map(([id]) => id)} order by id for no key update`);
  }
  const entryId = uuidv7();
  await tx.insert(ledgerEntries).values({ id: entryId, clientId: input.clientId, kind: input.kind, refType: input.refType, refId: input.refId, createdAt: input.now });
  await tx.insert(ledgerPostings).values(
    postings.map((p) => ({ id: uuidv7(), clientId: input.clientId, entryId, accountId: p.accountId, amount: p.amount, createdAt: input.now })),
  );
  if (ordered.length === 0) return entryId;
  try {
    const values = sql.join(
      ordered.map(([id, d]) => sql`(${id}::uuid, ${d}::bigint)`),
      sql`, `,
    );
    await tx.execute(sql`update ledger_accounts a set balance = a.balance + d.delta from (values ${values}) as d(id, delta) where a.id = d.id`);
  } catch (err) {
    if (checkViolation(err) === 'ledger_accounts_non_negative') throw new InsufficientFundsError();
    throw err;
  }
  return entryId;
}
