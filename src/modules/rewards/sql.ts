// Every query on rewards, scoped by client_id.
import { and, asc, desc, eq, gt, inArray, lte, or, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { rowsOf } from '../../db/open.ts';
import { rewards, users, wallets } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type RewardRow = typeof rewards.$inferSelect;

/** A reward's money is in a wallet while it is Credited (issued so) or Claimed (pre-issued, then claimed). */
export const CREDITED = ['Credited', 'Claimed'];

export async function insertReward(db: Executor, row: typeof rewards.$inferInsert): Promise<RewardRow> {
  const [out] = await db.insert(rewards).values(row).returning();
  return out!;
}

export async function findReward(
  db: Executor,
  clientId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<RewardRow | undefined> {
  const q = db
    .select()
    .from(rewards)
    .where(and(eq(rewards.clientId, clientId), eq(rewards.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function updateReward(db: Executor, id: string, patch: Partial<RewardRow>): Promise<RewardRow> {
  const [row] = await db.update(rewards).set(patch).where(eq(rewards.id, id)).returning();
  return row!;
}

/** The merchant's user with this phone number and that user's wallet, if any. */
export async function recipientByPhone(db: Executor, clientId: string, phoneNumber: string) {
  const [row] = await db
    .select({ userId: users.id, walletId: wallets.id, walletStatus: wallets.status })
    .from(users)
    .leftJoin(wallets, and(eq(wallets.userId, users.id), eq(wallets.clientId, users.clientId)))
    .where(and(eq(users.clientId, clientId), eq(users.phoneNumber, phoneNumber)));
  return row;
}

/** The pre-issued rewards waiting for this phone number (at most one), locked. */
export async function lockWaitingRewards(db: Executor, clientId: string, phoneNumber: string): Promise<RewardRow[]> {
  return db
    .select()
    .from(rewards)
    .where(and(eq(rewards.clientId, clientId), eq(rewards.phoneNumber, phoneNumber), eq(rewards.status, 'Created')))
    .for('update');
}

/** Pre-issued rewards past their claim window, locked (SKIP LOCKED: a claim or cancel has the others). */
export async function lockDueClaimExpiries(db: Executor, now: Date, limit: number): Promise<RewardRow[]> {
  return db
    .select()
    .from(rewards)
    .where(and(eq(rewards.status, 'Created'), lte(rewards.claimExpiresAt, now)))
    .orderBy(asc(rewards.claimExpiresAt))
    .limit(limit)
    .for('update', { skipLocked: true });
}

/**
 * The part of each credited reward still in its wallet. A wallet spends its merchant rewards
 * oldest first, so what the wallet's merchant reward balance holds belongs to its newest
 * rewards: a reward's unspent part is that balance less its newer credited rewards' amounts,
 * between 0 and its own amount. Rewards not credited have none.
 */
export async function unspentOf(db: Executor, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const rows = rowsOf<{ id: string; unspent: string | number }>(
    await db.execute(sql`
      select r.id, greatest(0, least(r.amount, a.balance - coalesce((
          select sum(n.amount) from rewards n
          where n.wallet_id = r.wallet_id and n.status in ('Credited', 'Claimed') and (n.credited_at, n.id) > (r.credited_at, r.id)), 0))) as unspent
      from rewards r
      join ledger_accounts a on a.owner_type = 'wallet' and a.owner_id = r.wallet_id and a.code = 'reward.merchant.available'
      where r.id in ${ids} and r.status in ('Credited', 'Claimed')`),
  );
  return new Map(rows.map((r) => [r.id, Number(r.unspent)]));
}

export interface RewardFilters {
  phoneNumber?: string;
  status?: string;
}

/**
 * Newest first. `phoneNumber` matches the number a reward was issued to and the current number
 * of the user whose wallet holds it. `status` is read as shown: a pre-issued reward past its
 * claim window is Expired even before the job records it.
 */
export async function listRewardRows(db: Executor, clientId: string, f: RewardFilters, page: Page, now: Date) {
  const conds: SQL[] = [eq(rewards.clientId, clientId)];
  if (f.phoneNumber) {
    const holders = db
      .select({ id: wallets.id })
      .from(wallets)
      .innerJoin(users, eq(users.id, wallets.userId))
      .where(and(eq(users.clientId, clientId), eq(users.phoneNumber, f.phoneNumber)));
    conds.push(or(eq(rewards.phoneNumber, f.phoneNumber), inArray(rewards.walletId, holders))!);
  }
  if (f.status === 'Expired')
    conds.push(
      or(eq(rewards.status, 'Expired'), and(eq(rewards.status, 'Created'), lte(rewards.claimExpiresAt, now)))!,
    );
  else if (f.status === 'Created') conds.push(eq(rewards.status, 'Created'), gt(rewards.claimExpiresAt, now));
  else if (f.status) conds.push(eq(rewards.status, f.status));
  const where = and(...conds);
  const rows = await db
    .select({ r: rewards, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(rewards)
    .where(where)
    .orderBy(desc(rewards.createdAt), desc(rewards.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0 || page.offset === 0) return { rows: rows.map((r) => r.r), total: rows[0]?.total ?? 0 };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(rewards)
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

/** The status of the client's wallet a reward names; undefined when the client has no such wallet. */
export async function walletStatus(db: Executor, clientId: string, id: string): Promise<string | undefined> {
  const [row] = await db
    .select({ status: wallets.status })
    .from(wallets)
    .where(and(eq(wallets.clientId, clientId), eq(wallets.id, id)));
  return row?.status;
}
