// Every query on rewards, scoped by client_id.
import type { Executor } from '../../db/open.ts';
import { rewards } from '../../db/schema.ts';

export type RewardRow = typeof rewards.$inferSelect;

export async function insertReward(db: Executor, row: typeof rewards.$inferInsert): Promise<RewardRow> {
  const [out] = await db.insert(rewards).values(row).returning();
  return out!;
}
