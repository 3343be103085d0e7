// What moved an owner's balances: its postings, newest first, each with its entry and account.
import { and, desc, eq, or, sql } from 'drizzle-orm';
import type { Executor } from '../db/open.ts';
import { ledgerAccounts, ledgerEntries, ledgerPostings } from '../db/schema.ts';
import type { Page } from '../db/paged.ts';
import type { OwnerType } from './accounts.ts';

interface PostingView {
  id: string;
  entryId: string;
  kind: string;
  refType: string;
  refId: string;
  code: string;
  amount: number;
  createdAt: Date;
}

/** What every posting shown carries: its entry and the account's code. */
const POSTING_COLUMNS = {
  id: ledgerPostings.id,
  entryId: ledgerEntries.id,
  kind: ledgerEntries.kind,
  refType: ledgerEntries.refType,
  refId: ledgerEntries.refId,
  code: ledgerAccounts.code,
};

/** A page of the postings on an owner's accounts (scoped by client), with a total counted up to `totalCap`. */
export async function postingsOfOwner(
  db: Executor,
  o: { clientId: string; ownerType: OwnerType; ownerId: string; page: Page; totalCap: number },
) {
  const where = and(
    eq(ledgerAccounts.clientId, o.clientId),
    eq(ledgerAccounts.ownerType, o.ownerType),
    eq(ledgerAccounts.ownerId, o.ownerId),
  );
  const rows: PostingView[] = await db
    .select({ ...POSTING_COLUMNS, amount: ledgerPostings.amount, createdAt: ledgerPostings.createdAt })
    .from(ledgerPostings)
    .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerPostings.accountId))
    .innerJoin(ledgerEntries, eq(ledgerEntries.id, ledgerPostings.entryId))
    .where(where)
    .orderBy(desc(ledgerPostings.createdAt), desc(ledgerPostings.id))
    .limit(o.page.limit)
    .offset(o.page.offset);
  const inner = db
    .select({ one: sql`1` })
    .from(ledgerPostings)
    .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerPostings.accountId))
    .where(where)
    .limit(o.totalCap + 1)
    .as('capped');
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(inner);
  const n = c?.n ?? 0;
  return { rows, total: Math.min(n, o.totalCap), capped: n > o.totalCap };
}

/** The postings of the entries made for some references (what a payment, deposit or withdrawal moved), scoped by client. */
export async function postingsOfRefs(
  db: Executor,
  o: { clientId: string; refs: { refType: string; refId: string }[] },
) {
  if (o.refs.length === 0) return [];
  return db
    .select({
      ...POSTING_COLUMNS,
      ownerType: ledgerAccounts.ownerType,
      ownerId: ledgerAccounts.ownerId,
      amount: ledgerPostings.amount,
      createdAt: ledgerPostings.createdAt,
    })
    .from(ledgerEntries)
    .innerJoin(ledgerPostings, eq(ledgerPostings.entryId, ledgerEntries.id))
    .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerPostings.accountId))
    .where(
      and(
        eq(ledgerEntries.clientId, o.clientId),
        or(...o.refs.map((r) => and(eq(ledgerEntries.refType, r.refType), eq(ledgerEntries.refId, r.refId)))),
      ),
    )
    .orderBy(ledgerEntries.createdAt, ledgerEntries.id, ledgerPostings.id);
}
