// Every query on gifts, scoped by client_id.
import { and, eq } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { gifts } from '../../db/schema.ts';

export type GiftRow = typeof gifts.$inferSelect;

export async function insertGift(db: Executor, row: typeof gifts.$inferInsert): Promise<GiftRow> {
  const [out] = await db.insert(gifts).values(row).returning();
  return out!;
}

export async function findGift(db: Executor, clientId: string, lookUpId: string): Promise<GiftRow | undefined> {
  const [row] = await db
    .select()
    .from(gifts)
    .where(and(eq(gifts.clientId, clientId), eq(gifts.lookUpId, lookUpId)));
  return row;
}
