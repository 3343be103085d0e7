// Every query on withdrawals, scoped by client_id.
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { WritePart } from '../../db/batch.ts';
import { pagedRows } from '../../db/paged.ts';
import type { Executor } from '../../db/open.ts';
import { insertManyPart } from '../../db/rows.ts';
import { run, statement } from '../../db/statements.ts';
import type { KeyCheck } from '../../http/idempotency.ts';
import { linkedAccounts, withdrawals } from '../../db/schema.ts';

export type WithdrawalRow = typeof withdrawals.$inferSelect;

export const withdrawalsInsertPart = (rows: WithdrawalRow[]): WritePart => insertManyPart(withdrawals, rows);

/** A connected linked account of the wallet's user, with what the wallet's cleared deposits brought in from it. */
interface WithdrawTarget {
  id: string;
  institutionName: string;
  accountMask: string;
  deposited: number;
}

export interface WithdrawContext {
  walletStatus: string | null;
  userId: string | null;
  kycStatus: string | null;
  /** Oldest first (connectedAccounts' order). */
  connected: WithdrawTarget[] | null;
}

/**
 * Everything a withdrawal decides on, for the wallet `walletId` of the merchant `clientId` (SQL
 * expressions): the wallet, its user's KYC, and the user's connected linked accounts with what
 * the wallet's cleared deposits brought in from each (deposit_totals, kept as deposits clear, so
 * the read does not grow with the wallet's deposits). Nothing is locked: the debit of the
 * wallet's available deposit money is the guard. No wallet: no row.
 */
const contextOf = (
  clientId: string,
  walletId: string,
) => `select w.status as "walletStatus", u.id as "userId", u.kyc_status as "kycStatus",
        (select coalesce(json_agg(json_build_object('id', la.id, 'institutionName', la.institution_name, 'accountMask', la.account_mask,
            'deposited', coalesce((select d.cleared from deposit_totals d where d.wallet_id = w.id and d.linked_account_id = la.id), 0))
          order by la.created_at, la.id), '[]'::json)
          from linked_accounts la where la.client_id = w.client_id and la.user_id = u.id and la.status = 'Connected') as connected
      from wallets w join users u on u.id = w.user_id
      where w.client_id = ${clientId} and w.id = ${walletId}`;

export type WithdrawCheck = KeyCheck & Partial<WithdrawContext>;

/**
 * For a group of withdrawals, in one statement and in order: each one's idempotency check (its
 * key's lock, then its stored outcome: idempotency_check, migration 0007) and its context. A
 * withdrawal without a key passes a null lock key and key: pg_try_advisory_xact_lock(null) is
 * null, so the check takes no lock and finds nothing (locked, no outcome).
 */
const GROUP_CHECK = statement(
  'withdraw_group_check',
  `select c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at,
      p."walletStatus", p."userId", p."kycStatus", p.connected
    from unnest($1::text[], $2::uuid[], $3::text[], $4::uuid[]) with ordinality as m(lock_key, client_id, key, wallet_id, i)
    cross join lateral idempotency_check(m.lock_key, m.client_id, 'withdraw', m.key) c
    left join lateral (${contextOf('m.client_id', 'm.wallet_id')}) p on true
    order by m.i`,
);

export async function checkWithdrawGroup(
  tx: Executor,
  members: { lockKey: string | null; clientId: string; key: string | null; walletId: string }[],
): Promise<WithdrawCheck[]> {
  return run<WithdrawCheck>(tx, GROUP_CHECK, [
    members.map((m) => m.lockKey),
    members.map((m) => m.clientId),
    members.map((m) => m.key),
    members.map((m) => m.walletId),
  ]);
}

/** Withdrawals the provider has not acknowledged yet, oldest first (the bank-pushes job, every client), through withdrawals_unsent_idx. */
export function unsentWithdrawals(db: Executor, limit: number) {
  return db
    .select()
    .from(withdrawals)
    .where(sql`${withdrawals.providerRef} is null`)
    .orderBy(withdrawals.createdAt)
    .limit(limit);
}

/** The provider's external ids of the linked accounts named. */
export async function linkedAccountExternalIds(
  db: Executor,
  ids: string[],
): Promise<{ id: string; externalId: string }[]> {
  return db
    .select({ id: linkedAccounts.id, externalId: linkedAccounts.externalId })
    .from(linkedAccounts)
    .where(inArray(linkedAccounts.id, ids));
}

/** The merchant's withdrawal `id`, if it is the merchant's. */
export async function findWithdrawal(db: Executor, clientId: string, id: string): Promise<WithdrawalRow | undefined> {
  const [row] = await db
    .select()
    .from(withdrawals)
    .where(and(eq(withdrawals.clientId, clientId), eq(withdrawals.id, id)));
  return row;
}

export async function findWithdrawalById(db: Executor, id: string): Promise<WithdrawalRow | undefined> {
  const [row] = await db.select().from(withdrawals).where(eq(withdrawals.id, id));
  return row;
}

const RECORD_PROVIDER_REFS = statement(
  'withdrawal_provider_refs',
  'update withdrawals w set provider_ref = v.ref from unnest($1::uuid[], $2::text[]) as v(id, ref) where w.id = v.id and w.provider_ref is null',
);

/** Records the provider's references of many withdrawals (its pushes' references, comma-separated, in split order). */
export async function recordProviderRefs(db: Executor, refs: { id: string; providerRef: string }[]): Promise<void> {
  if (refs.length === 0) return;
  await run(db, RECORD_PROVIDER_REFS, [refs.map((r) => r.id), refs.map((r) => r.providerRef)]);
}

/** A page of a wallet's withdrawals, newest first, with their total. */
export async function listWithdrawalRows(
  db: Executor,
  clientId: string,
  walletId: string,
  page: { limit: number; offset: number },
) {
  return pagedRows(
    db,
    withdrawals,
    and(eq(withdrawals.clientId, clientId), eq(withdrawals.walletId, walletId)),
    [desc(withdrawals.createdAt), desc(withdrawals.id)],
    page,
  );
}
