// Every query on deposit transactions, scoped by client_id.
import { and, asc, desc, eq, inArray, notInArray, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { ph } from '../../db/built-once.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import type { Executor } from '../../db/open.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, totalAlone } from '../../db/list-counts.ts';
import type { WritePart } from '../../db/batch.ts';
import type { KeyCheck } from '../../http/idempotency.ts';
import { insertManyPart } from '../../db/rows.ts';
import { run, statement } from '../../db/statements.ts';
import { linkedAccounts, transactions } from '../../db/schema.ts';
import { CARD_ACCOUNT_TYPES } from '../linked-accounts/sql.ts';
import type { Page } from '../../http/paging.ts';

export type TransactionRow = typeof transactions.$inferSelect;

/** New Pending deposits, as one part of a write batch: one statement whatever their number. */
export const depositsInsertPart = (rows: TransactionRow[]): WritePart => insertManyPart(transactions, rows);

export async function findTransaction(
  db: Executor,
  clientId: string,
  walletId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
) {
  const q = db
    .select()
    .from(transactions)
    .where(and(eq(transactions.clientId, clientId), eq(transactions.walletId, walletId), eq(transactions.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

/** One deposit by id (any merchant: jobs), locked. */
export async function lockTransactionById(db: Executor, id: string): Promise<TransactionRow | undefined> {
  const [row] = await db.select().from(transactions).where(eq(transactions.id, id)).for('update');
  return row;
}

/**
 * A wallet's pending deposits, oldest first, locked for clearing or failing; with `funding`,
 * only those from bank accounts or only those from cards.
 */
export async function lockPendingTransactions(
  db: Executor,
  clientId: string,
  walletId: string,
  funding?: 'bank' | 'card',
): Promise<TransactionRow[]> {
  const conds: SQL[] = [
    eq(transactions.clientId, clientId),
    eq(transactions.walletId, walletId),
    eq(transactions.status, 'Pending'),
  ];
  if (funding) {
    const cards = db
      .select({ id: linkedAccounts.id })
      .from(linkedAccounts)
      .where(and(eq(linkedAccounts.clientId, clientId), inArray(linkedAccounts.accountType, [...CARD_ACCOUNT_TYPES])));
    conds.push(
      funding === 'card'
        ? inArray(transactions.linkedAccountId, cards)
        : notInArray(transactions.linkedAccountId, cards),
    );
  }
  return db
    .select()
    .from(transactions)
    .where(and(...conds))
    .orderBy(asc(transactions.createdAt), asc(transactions.id))
    .for('update');
}

/** The wallet's counted total (list_counts). */
const walletTotal = (clientId: string | Placeholder, walletId: string | Placeholder) =>
  countedTotal(clientId, 'transactions', { key: sql`jsonb_build_object('walletId', ${walletId}::uuid)::text` });

/** A page of a wallet's transactions and its counted total, beside it (built once, pages asked for together read together: coalesced-pages.ts). */
const transactionPage = coalescedPages((db: Executor, _shape: '') => {
  return countedPage(db, {
    table: transactions,
    where: and(eq(transactions.clientId, ph('clientId')), eq(transactions.walletId, ph('walletId'))),
    orderBy: [desc(transactions.createdAt), desc(transactions.id)],
    total: walletTotal(ph('clientId'), ph('walletId')),
  });
});

const walletTotalAlone = totalAlone((_: '') => walletTotal(ph('clientId'), ph('walletId')));

export async function listTransactionRows(db: Executor, clientId: string, walletId: string, page: Page) {
  const rows = await transactionPage(db, '', { clientId, walletId, limit: page.limit, offset: page.offset });
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  return { rows: [], total: await walletTotalAlone(db, '', { clientId, walletId }) };
}

/** A cleared deposit adds what it brought in to its wallet's total from its linked account (deposit_totals). */
const ADD_CLEARED = statement(
  'deposit_totals_add',
  `insert into deposit_totals (wallet_id, linked_account_id, client_id, cleared) values ($1, $2, $3, $4)
   on conflict (wallet_id, linked_account_id) do update set cleared = deposit_totals.cleared + excluded.cleared`,
);

export async function addClearedDeposit(
  db: Executor,
  t: Pick<TransactionRow, 'walletId' | 'linkedAccountId' | 'clientId' | 'walletAmount'>,
): Promise<void> {
  await run(db, ADD_CLEARED, [t.walletId, t.linkedAccountId, t.clientId, t.walletAmount]);
}

export async function updateTransactionRow(
  db: Executor,
  id: string,
  patch: Partial<TransactionRow>,
): Promise<TransactionRow> {
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

export type DepositCheck = KeyCheck & Partial<DepositContext>;

/**
 * For a group of deposits, in one statement and in order: each one's idempotency check (its
 * key's lock, then its stored outcome: idempotency_check, migration 0007) and everything it
 * checks (the wallet, its user's KYC, the linked account). No context also means no wallet.
 */
const GROUP_CHECK = statement(
  'deposit_group_check',
  `select c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at,
      p."walletId", p."walletStatus", p."userId", p."kycStatus", p."linkedStatus"
    from unnest($1::text[], $2::uuid[], $3::text[], $4::uuid[], $5::uuid[]) with ordinality as m(lock_key, client_id, key, wallet_id, linked_id, i)
    cross join lateral idempotency_check(m.lock_key, m.client_id, 'deposit', m.key) c
    left join lateral (
      select w.id as "walletId", w.status as "walletStatus", u.id as "userId", u.kyc_status as "kycStatus", la.status as "linkedStatus"
      from wallets w
      join users u on u.id = w.user_id
      left join linked_accounts la on la.id = m.linked_id and la.client_id = m.client_id and la.user_id = w.user_id
      where w.client_id = m.client_id and w.id = m.wallet_id
    ) p on true
    order by m.i`,
);

export async function checkDepositGroup(
  tx: Executor,
  keys: { lockKey: string; clientId: string; key: string; walletId: string; linkedAccountId: string }[],
): Promise<DepositCheck[]> {
  return run<DepositCheck>(tx, GROUP_CHECK, [
    keys.map((k) => k.lockKey),
    keys.map((k) => k.clientId),
    keys.map((k) => k.key),
    keys.map((k) => k.walletId),
    keys.map((k) => k.linkedAccountId),
  ]);
}

const UNSENT_PULLS = statement(
  'unsent_pulls',
  `select t.id, t.client_id, t.amount, la.external_id
    from transactions t join linked_accounts la on la.id = t.linked_account_id
    where t.status = 'Pending' and t.provider_ref is null
      and la.account_type not in (${CARD_ACCOUNT_TYPES.map((c) => `'${c}'`).join(', ')})
    order by t.created_at limit $1`,
);

/**
 * Pending deposits whose pull the provider has not acknowledged yet, with the account to pull
 * from. Card-funded deposits are no bank transfer: the sandbox's card network clears them.
 */
export async function unsentPulls(
  db: Executor,
  limit: number,
): Promise<{ id: string; clientId: string; amount: number; externalId: string }[]> {
  const rows = await run<{ id: string; client_id: string; amount: number | string; external_id: string }>(
    db,
    UNSENT_PULLS,
    [limit],
  );
  return rows.map((r) => ({ id: r.id, clientId: r.client_id, amount: Number(r.amount), externalId: r.external_id }));
}

const RECORD_PROVIDER_REFS = statement(
  'record_provider_refs',
  'update transactions t set provider_ref = v.ref from unnest($1::uuid[], $2::text[]) as v(id, ref) where t.id = v.id and t.provider_ref is null',
);

/** Records the provider's references, many at once. */
export async function recordProviderRefs(db: Executor, refs: { id: string; providerRef: string }[]): Promise<void> {
  if (refs.length === 0) return;
  await run(db, RECORD_PROVIDER_REFS, [refs.map((r) => r.id), refs.map((r) => r.providerRef)]);
}
