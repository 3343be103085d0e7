// Every query on sweepstakes results, scoped by client_id.
import { and, eq } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { sweepstakesResults, users } from '../../db/schema.ts';

export type SweepstakesResultRow = typeof sweepstakesResults.$inferSelect;

/** Records a result once: the same sweepstakes and user again changes nothing. */
export async function insertResultOnce(db: Executor, row: SweepstakesResultRow): Promise<void> {
  await db
    .insert(sweepstakesResults)
    .values(row)
    .onConflictDoNothing({
      target: [sweepstakesResults.clientId, sweepstakesResults.sweepstakesId, sweepstakesResults.userId],
    });
}

export async function findUserIdByPhone(
  db: Executor,
  clientId: string,
  phoneNumber: string,
): Promise<string | undefined> {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.clientId, clientId), eq(users.phoneNumber, phoneNumber)));
  return row?.id;
}
