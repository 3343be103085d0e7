// Every query on counterparties, their payouts and incoming payments, scoped by client_id.
// A deleted counterparty (deleted_at set) is invisible to every read here.
import { and, desc, eq, gte, inArray, isNull, lte, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Executor } from '../../db/open.ts';
import { pagedRows } from '../../db/paged.ts';
import { counterparties, counterpartyIncomingPayments, counterpartyPayouts, payments } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type CounterpartyRow = typeof counterparties.$inferSelect;
export type PayoutRow = typeof counterpartyPayouts.$inferSelect;
export type IncomingPaymentRow = typeof counterpartyIncomingPayments.$inferSelect;

const live = (clientId: string) => and(eq(counterparties.clientId, clientId), isNull(counterparties.deletedAt));

export async function insertCounterparty(
  db: Executor,
  row: typeof counterparties.$inferInsert,
): Promise<CounterpartyRow> {
  const [out] = await db.insert(counterparties).values(row).returning();
  return out!;
}

/**
 * `lock`: FOR NO KEY UPDATE, which waits for another delete but not for the payouts and
 * transfers that reference the row (their foreign keys take KEY SHARE: FOR UPDATE would
 * deadlock with one holding the counterparty's ledger account).
 */
export async function findCounterparty(
  db: Executor,
  clientId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<CounterpartyRow | undefined> {
  const q = db
    .select()
    .from(counterparties)
    .where(and(live(clientId), eq(counterparties.id, id)));
  const [row] = opts.lock ? await q.for('no key update') : await q;
  return row;
}

export async function findCounterparties(db: Executor, clientId: string, ids: string[]): Promise<CounterpartyRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(counterparties)
    .where(and(live(clientId), inArray(counterparties.id, ids)));
}

export async function listCounterpartyRows(db: Executor, clientId: string, page: Page) {
  return pagedRows(db, counterparties, live(clientId), [desc(counterparties.createdAt), desc(counterparties.id)], page);
}

export async function updateCounterpartyRow(
  db: Executor,
  clientId: string,
  id: string,
  patch: Partial<typeof counterparties.$inferInsert>,
): Promise<CounterpartyRow | undefined> {
  const [row] = await db
    .update(counterparties)
    .set(patch)
    .where(and(live(clientId), eq(counterparties.id, id)))
    .returning();
  return row;
}

export interface LockedAccount {
  id: string;
  ownerId: string;
  code: string;
  balance: number;
}

/**
 * Locks the merchant's counterparty accounts named (both codes, or only `code`) in id order,
 * the order every ledger movement locks in, and returns their balances as of the lock.
 */
export async function lockCounterpartyAccounts(
  tx: Executor,
  clientId: string,
  counterpartyIds: string[],
  code?: string,
): Promise<LockedAccount[]> {
  const rows = await tx.execute(sql`
    select id, owner_id as "ownerId", code, balance from ledger_accounts
    where client_id = ${clientId} and owner_type = 'counterparty' and owner_id in ${counterpartyIds} ${code ? sql`and code = ${code}` : sql``}
    order by id for no key update`);
  return rowsOf<LockedAccount>(rows).map((r) => ({ ...r, balance: Number(r.balance) }));
}

/** Which of the ids name a live counterparty of the merchant (read after locking, so a concurrent delete is seen). */
export async function liveCounterpartyIds(db: Executor, clientId: string, ids: string[]): Promise<Set<string>> {
  const rows = await db
    .select({ id: counterparties.id })
    .from(counterparties)
    .where(and(live(clientId), inArray(counterparties.id, ids)));
  return new Set(rows.map((r) => r.id));
}

/** A payout that has not reached a final state: its money may still come back. */
export async function hasPayoutInFlight(db: Executor, counterpartyId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: counterpartyPayouts.id })
    .from(counterpartyPayouts)
    .where(
      and(
        eq(counterpartyPayouts.counterpartyId, counterpartyId),
        inArray(counterpartyPayouts.status, ['Pending', 'Sent']),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** A payment not yet settled whose disbursement names the counterparty (settlement will credit it). */
export async function hasUnsettledDisbursement(
  db: Executor,
  clientId: string,
  counterpartyId: string,
): Promise<boolean> {
  const [row] = await db
    .select({ id: payments.id })
    .from(payments)
    .where(
      and(
        eq(payments.clientId, clientId),
        inArray(payments.status, ['Created', 'Processing']),
        sql`${payments.disbursement} @> ${JSON.stringify([{ counterpartyId }])}::jsonb`,
      ),
    )
    .limit(1);
  return row !== undefined;
}

// ----- payouts -------------------------------------------------------------------------

export async function insertPayout(db: Executor, row: typeof counterpartyPayouts.$inferInsert): Promise<PayoutRow> {
  const [out] = await db.insert(counterpartyPayouts).values(row).returning();
  return out!;
}

export async function findPayout(
  db: Executor,
  clientId: string,
  counterpartyId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<PayoutRow | undefined> {
  const q = db
    .select()
    .from(counterpartyPayouts)
    .where(
      and(
        eq(counterpartyPayouts.clientId, clientId),
        eq(counterpartyPayouts.counterpartyId, counterpartyId),
        eq(counterpartyPayouts.id, id),
      ),
    );
  const [row] = opts.forUpdate ? await q.for('no key update') : await q;
  return row;
}

export interface PayoutFilters {
  status?: string;
  minAmount?: number;
  maxAmount?: number;
  createdAfter?: Date;
  createdBefore?: Date;
  effectiveDateFrom?: string;
  effectiveDateTo?: string;
}

/** A counterparty's payouts, newest first; every bound inclusive. */
export async function listPayoutRows(
  db: Executor,
  clientId: string,
  counterpartyId: string,
  f: PayoutFilters,
  page: Page,
) {
  const conds: SQL[] = [
    eq(counterpartyPayouts.clientId, clientId),
    eq(counterpartyPayouts.counterpartyId, counterpartyId),
  ];
  if (f.status !== undefined) conds.push(eq(counterpartyPayouts.status, f.status));
  if (f.minAmount !== undefined) conds.push(gte(counterpartyPayouts.amount, f.minAmount));
  if (f.maxAmount !== undefined) conds.push(lte(counterpartyPayouts.amount, f.maxAmount));
  if (f.createdAfter !== undefined) conds.push(gte(counterpartyPayouts.createdAt, f.createdAfter));
  if (f.createdBefore !== undefined) conds.push(lte(counterpartyPayouts.createdAt, f.createdBefore));
  if (f.effectiveDateFrom !== undefined) conds.push(gte(counterpartyPayouts.effectiveDate, f.effectiveDateFrom));
  if (f.effectiveDateTo !== undefined) conds.push(lte(counterpartyPayouts.effectiveDate, f.effectiveDateTo));
  return pagedRows(
    db,
    counterpartyPayouts,
    and(...conds),
    [desc(counterpartyPayouts.createdAt), desc(counterpartyPayouts.id)],
    page,
  );
}

/** A payout to send, with its counterparty's bank account (the number still sealed). */
export interface UnsentPayoutRow {
  payout: PayoutRow;
  account: { holderName: string; accountType: string; routingNumber: string; accountNumberSealed: string };
}

/** Payouts not yet handed to the bank, oldest first (the payouts job, every client). */
export async function unsentPayouts(db: Executor, limit: number): Promise<UnsentPayoutRow[]> {
  return db
    .select({
      payout: counterpartyPayouts,
      account: {
        holderName: counterparties.label,
        accountType: counterparties.accountType,
        routingNumber: counterparties.routingNumber,
        accountNumberSealed: counterparties.accountNumberSealed,
      },
    })
    .from(counterpartyPayouts)
    .innerJoin(counterparties, eq(counterparties.id, counterpartyPayouts.counterpartyId))
    .where(eq(counterpartyPayouts.status, 'Pending'))
    .orderBy(counterpartyPayouts.createdAt)
    .limit(limit);
}

/** A payout by id alone, locked (the bank's report on its push: the transfer names the payout). */
export async function lockPayout(db: Executor, id: string): Promise<PayoutRow | undefined> {
  const [row] = await db.select().from(counterpartyPayouts).where(eq(counterpartyPayouts.id, id)).for('no key update');
  return row;
}

/** Moves a payout on from `from` only (a second process, or a retry, finds it moved and changes nothing). */
export async function transitionPayout(
  db: Executor,
  id: string,
  from: string,
  patch: Partial<typeof counterpartyPayouts.$inferInsert>,
): Promise<PayoutRow | undefined> {
  const [row] = await db
    .update(counterpartyPayouts)
    .set(patch)
    .where(and(eq(counterpartyPayouts.id, id), eq(counterpartyPayouts.status, from)))
    .returning();
  return row;
}

// ----- incoming payments ---------------------------------------------------------------

/** Records an incoming payment once per external id; undefined when it was recorded before. */
export async function insertIncomingPayment(
  db: Executor,
  row: typeof counterpartyIncomingPayments.$inferInsert,
): Promise<IncomingPaymentRow | undefined> {
  const [out] = await db.insert(counterpartyIncomingPayments).values(row).onConflictDoNothing().returning();
  return out;
}
