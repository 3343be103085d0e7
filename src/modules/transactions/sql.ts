// Every query on deposit transactions, scoped by client_id.
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { rowsOf, type Executor } from '../../db/open.ts';
import type { WritePart } from '../../db/batch.ts';
import type { Preflight } from '../../http/idempotency.ts';
import { transactions } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type TransactionRow = typeof transactions.$inferSelect;

/** A new Pending deposit, as a part of the request's write batch (the hot path). */
export function depositInsertPart(r: TransactionRow): WritePart {
  return {
    name: 'transactions_insert',
    text: `insert into transactions (id, client_id, wallet_id, user_id, linked_account_id, type, status, amount, wallet_amount, fee_amount,
        fee_type, fee_deducted, fee_counterparty_id, disbursement, reward_amount, risk, created_at, updated_at)
      values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, $16::jsonb, $17, $18)`,
    params: [
      r.id,
      r.clientId,
      r.walletId,
      r.userId,
      r.linkedAccountId,
      r.type,
      r.status,
      r.amount,
      r.walletAmount,
      r.feeAmount,
      r.feeType,
      r.feeDeducted,
      r.feeCounterpartyId,
      JSON.stringify(r.disbursement),
      r.rewardAmount,
      r.risk === null ? null : JSON.stringify(r.risk),
      r.createdAt,
      r.updatedAt,
    ],
  };
}

export async function findTransaction(db: Executor, clientId: string, walletId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  const q = db
    .select()
    .from(transactions)
    .where(and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

/** A wallet's pending deposits, oldest first, locked for clearing or failing. */
export async function lockPendingTransactions(db: Executor, clientId: string, walletId: string): Promise<TransactionRow[]> {
  return db
    .select()
    .from(transactions)
    .where(and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.status, 'Pending')))
    .orderBy(asc(transactions.createdAt), asc(transactions.id))
    .for('update');
}

export async function listTransactionRows(db: Executor, clientId: string, walletId: string, page: Page) {
  const where = and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId));
  const rows = await db
    .select({ t: transactions, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(transactions)
    .where(where)
    .orderBy(desc(transactions.createdAt), desc(transactions.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.t), total: rows[0]!.total };
  const [c] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(transactions).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateTransactionRow(db: Executor, id: string, patch: Partial<TransactionRow>): Promise<TransactionRow> {
  const [row] = await db.update(transactions).set(patch).where(eq(transactions.id, id)).returning();
  return row!;
}

export interface DepositContext {
  walletId: string;
  walletStatus: string;
  userId: string;
  kycStatus: string;
  /** The named linked account if it is the wallet user's; null otherwise. */
  linkedStatus: string | null;
}

/**
 * Everything a deposit checks, in one read: the wallet, its user's KYC, the linked account.
 * Run together with the idempotency check (a preflight), so no row also means no wallet.
 */
export function depositContextPreflight(clientId: string, walletId: string, linkedAccountId: string): Preflight {
  return {
    name: 'deposit_context',
    text: `select w.id as "walletId", w.status as "walletStatus", u.id as "userId", u.kyc_status as "kycStatus", la.status as "linkedStatus"
      from wallets w
      join users u on u.id = w.user_id
      left join linked_accounts la on la.id = $3 and la.client_id = $1 and la.user_id = w.user_id
      where w.client_id = $1 and w.id = $2`,
    params: [clientId, walletId, linkedAccountId],
  };
}

/** Pending deposits whose pull the provider has not acknowledged yet, with the account to pull from. */
export async function unsentPulls(db: Executor, limit: number): Promise<{ id: string; amount: number; externalId: string }[]> {
  return rowsOf<{ id: string; amount: number; external_id: string }>(
    await db.execute(sql`
      select t.id, t.amount, la.external_id
      from transactions t join linked_accounts la on la.id = t.linked_account_id
      where t.status = 'Pending' and t.provider_ref is null
      order by t.created_at limit ${limit}`),
  ).map((r) => ({ id: r.id, amount: Number(r.amount), externalId: r.external_id }));
}

/** Records the provider's references, many at once. */
export async function recordProviderRefs(db: Executor, refs: { id: string; providerRef: string }[]): Promise<void> {
  if (refs.length === 0) return;
  const values = sql.join(
    refs.map((r) => sql`(${r.id}::uuid, ${r.providerRef})`),
    sql`, `,
  );
  await db.execute(sql`update transactions t set provider_ref = v.ref from (values ${values}) as v(id, ref) where t.id = v.id and t.provider_ref is null`);
}
