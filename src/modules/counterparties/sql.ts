// Every query on counterparties, scoped by client_id.
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { counterparties } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type CounterpartyRow = typeof counterparties.$inferSelect;

export async function insertCounterparty(db: Executor, row: typeof counterparties.$inferInsert): Promise<CounterpartyRow> {
  const [out] = await db.insert(counterparties).values(row).returning();
  return out!;
}

export async function findCounterparty(db: Executor, clientId: string, id: string): Promise<CounterpartyRow | undefined> {
  const [row] = await db.select().from(counterparties).where(and(eq(counterparties.clientId, clientId), eq(counterparties.id, id)));
  return row;
}

export async function findCounterparties(db: Executor, clientId: string, ids: string[]): Promise<CounterpartyRow[]> {
  if (ids.length === 0) return [];
  return db.select().from(counterparties).where(and(eq(counterparties.clientId, clientId), inArray(counterparties.id, ids)));
}

export async function listCounterpartyRows(db: Executor, clientId: string, page: Page) {
  const where = eq(counterparties.clientId, clientId);
  const rows = await db
    .select({ cp: counterparties, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(counterparties)
    .where(where)
    .orderBy(desc(counterparties.createdAt), desc(counterparties.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.cp), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(counterparties).where(where);
  return { rows: [], total: c?.n ?? 0 };
}
