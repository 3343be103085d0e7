// Every query on counterparty transfers, scoped by client_id.
import { and, desc, eq, gte, lte, type SQL } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { pagedRows } from '../../db/paged.ts';
import { counterpartyTransfers } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type TransferRow = typeof counterpartyTransfers.$inferSelect;

export async function insertTransfer(
  db: Executor,
  row: typeof counterpartyTransfers.$inferInsert,
): Promise<TransferRow> {
  const [out] = await db.insert(counterpartyTransfers).values(row).returning();
  return out!;
}

export async function findTransfer(db: Executor, clientId: string, id: string): Promise<TransferRow | undefined> {
  const [row] = await db
    .select()
    .from(counterpartyTransfers)
    .where(and(eq(counterpartyTransfers.clientId, clientId), eq(counterpartyTransfers.id, id)));
  return row;
}

export interface TransferFilters {
  fromCounterpartyId?: string;
  toCounterpartyId?: string;
  status?: string;
  createdAfter?: Date;
  createdBefore?: Date;
}

/** The merchant's transfers, newest first; both time bounds inclusive. */
export async function listTransferRows(db: Executor, clientId: string, f: TransferFilters, page: Page) {
  const conds: SQL[] = [eq(counterpartyTransfers.clientId, clientId)];
  if (f.fromCounterpartyId !== undefined)
    conds.push(eq(counterpartyTransfers.fromCounterpartyId, f.fromCounterpartyId));
  if (f.toCounterpartyId !== undefined) conds.push(eq(counterpartyTransfers.toCounterpartyId, f.toCounterpartyId));
  if (f.status !== undefined) conds.push(eq(counterpartyTransfers.status, f.status));
  if (f.createdAfter !== undefined) conds.push(gte(counterpartyTransfers.createdAt, f.createdAfter));
  if (f.createdBefore !== undefined) conds.push(lte(counterpartyTransfers.createdAt, f.createdBefore));
  return pagedRows(
    db,
    counterpartyTransfers,
    and(...conds),
    [desc(counterpartyTransfers.createdAt), desc(counterpartyTransfers.id)],
    page,
  );
}
