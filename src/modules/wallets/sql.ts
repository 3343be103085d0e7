// Every query on wallets and barcodes, scoped by client_id.
import { and, desc, eq, gt, gte, isNull, lt, or, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { ph } from '../../db/built-once.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import type { Executor } from '../../db/open.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, totalAlone } from '../../db/list-counts.ts';
import { CoalescedRead } from '../../db/coalesce.ts';
import { cappedCount, cappedPage, type CappedPage, type Cursor } from '../../db/paged.ts';
import { users, walletBarcodes, wallets } from '../../db/schema.ts';
import { WALLET_CODES } from '../../ledger/accounts.ts';
import type { Page } from '../../http/paging.ts';
import type { Buckets } from './balance.ts';

export type WalletRow = typeof wallets.$inferSelect;
export type BarcodeRow = typeof walletBarcodes.$inferSelect;

export async function insertWallet(db: Executor, row: typeof wallets.$inferInsert): Promise<WalletRow> {
  const [out] = await db.insert(wallets).values(row).returning();
  return out!;
}

export async function findWallet(
  db: Executor,
  clientId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<WalletRow | undefined> {
  const q = db
    .select()
    .from(wallets)
    .where(and(eq(wallets.clientId, clientId), eq(wallets.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function findWalletOfUser(db: Executor, clientId: string, userId: string): Promise<WalletRow | undefined> {
  const [row] = await db
    .select()
    .from(wallets)
    .where(and(eq(wallets.clientId, clientId), eq(wallets.userId, userId)));
  return row;
}

type WalletWithBucketsRow = WalletRow & Buckets;

const balanceReads = new CoalescedRead<WalletWithBucketsRow>(
  'wallets_with_buckets',
  `select w.id, w.client_id as "clientId", w.user_id as "userId", w.status, w.closed_at as "closedAt",
     w.created_at as "createdAt", w.updated_at as "updatedAt",
     ${WALLET_CODES.map((c) => `sum(a.balance) filter (where a.code = '${c}')::bigint as "${c}"`).join(',\n     ')}
   from unnest($1::uuid[], $2::uuid[]) k(client_id, id)
   join wallets w on w.client_id = k.client_id and w.id = k.id
   join ledger_accounts a on a.owner_id = w.id and a.owner_type = 'wallet'
   group by w.id`,
);

/**
 * The balance read, the hottest money read: the wallet and its nine bucket balances as one
 * row, with the reads that arrive together sent as one prepared statement.
 */
export async function findWalletWithBuckets(
  db: Executor,
  clientId: string,
  id: string,
): Promise<{ wallet: WalletRow; buckets: Buckets } | undefined> {
  const row = await balanceReads.get(db, clientId, id);
  if (!row) return undefined;
  const { id: wid, clientId: cid, userId, status, closedAt, createdAt, updatedAt, ...buckets } = row;
  return {
    wallet: { id: wid, clientId: cid, userId, status, closedAt, createdAt, updatedAt },
    buckets: buckets as Buckets,
  };
}

export interface WalletFilters {
  phoneNumber?: string;
  email?: string;
  referenceId?: string;
  userId?: string;
  status?: string;
  createdAfter?: Date;
  createdBefore?: Date;
}

/** The filters on the wallet itself (the list's built-once shapes cover only the user's). */
function walletOwnConditions(f: WalletFilters): SQL[] {
  const conds: SQL[] = [];
  if (f.userId !== undefined) conds.push(eq(wallets.userId, f.userId));
  if (f.status !== undefined) conds.push(eq(wallets.status, f.status));
  if (f.createdAfter !== undefined) conds.push(gte(wallets.createdAt, f.createdAfter));
  if (f.createdBefore !== undefined) conds.push(lt(wallets.createdAt, f.createdBefore));
  return conds;
}

/** A page of wallets filtered on the wallet's own columns (and maybe its user's), counted as read. */
async function filteredWalletRows(db: Executor, clientId: string, f: WalletFilters, page: Page) {
  const byUser = walletUserConditions(clientId, { ...f, email: f.email?.toLowerCase() });
  const where = and(eq(wallets.clientId, clientId), ...walletOwnConditions(f), ...byUser);
  const joined = byUser.length > 0;
  const fields = { row: wallets, total: sql<number>`count(*) over ()`.mapWith(Number) };
  const rows = await (joined
    ? db.select(fields).from(wallets).innerJoin(users, eq(users.id, wallets.userId))
    : db.select(fields).from(wallets)
  )
    .where(where)
    .orderBy(desc(wallets.createdAt), desc(wallets.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  const count = { n: sql<number>`count(*)`.mapWith(Number) };
  const [c] = await (joined
    ? db.select(count).from(wallets).innerJoin(users, eq(users.id, wallets.userId))
    : db.select(count).from(wallets)
  ).where(where);
  return { rows: [], total: c?.n ?? 0 };
}

/** The filters on the wallet's user, or none (with the user's client_id, so they read users' (client_id, …) unique indexes). */
function walletUserConditions(
  clientId: string | Placeholder,
  f: { [K in 'phoneNumber' | 'email' | 'referenceId']?: string | Placeholder },
): SQL[] {
  const conds: SQL[] = [];
  if (f.phoneNumber !== undefined) conds.push(eq(users.phoneNumber, f.phoneNumber));
  if (f.email !== undefined) conds.push(eq(users.email, f.email));
  if (f.referenceId !== undefined)
    conds.push(or(eq(users.referenceId, f.referenceId), eq(users.stableReferenceId, f.referenceId))!);
  return conds.length > 0 ? [eq(users.clientId, clientId), ...conds] : [];
}

/**
 * The console's page of wallets: newest first, the total counted up to `totalCap` (cappedPage).
 * Only a filter on the user joins users: every wallet has one, so the total without one is the
 * wallets' own.
 */
export function consoleWalletRows(
  db: Executor,
  clientId: string,
  f: WalletFilters,
  page: Page,
  o: { totalCap: number; cursor?: Cursor },
): Promise<CappedPage<WalletRow>> {
  const byUser = walletUserConditions(clientId, { ...f, email: f.email?.toLowerCase() });
  const where = and(eq(wallets.clientId, clientId), ...byUser);
  const from = () =>
    byUser.length > 0
      ? db.select({ wallet: wallets }).from(wallets).innerJoin(users, eq(users.id, wallets.userId))
      : db.select({ wallet: wallets }).from(wallets);
  return cappedPage(db, {
    table: wallets,
    clientId,
    where,
    page,
    ...o,
    rows: async (w, orderBy, limit, offset) =>
      (
        await from()
          .where(w)
          .orderBy(...orderBy)
          .limit(limit)
          .offset(offset)
      ).map((r) => r.wallet),
    deferOffset: byUser.length === 0,
    count: async (w, cap) => {
      if (byUser.length === 0) return cappedCount(db, wallets, w, cap);
      const [c] = await db
        .select({ n: sql<number>`count(*)`.mapWith(Number) })
        .from(wallets)
        .innerJoin(users, eq(users.id, wallets.userId))
        .where(w);
      return { total: c?.n ?? 0, capped: false };
    },
  });
}

type WalletListShape = `${'' | 'p'}${'' | 'e'}${'' | 'r'}`;

/** A page of wallets with its total, in one round trip (built once, pages asked for together read together: coalesced-pages.ts). */
const walletPage = coalescedPages((db: Executor, shape: WalletListShape) => {
  const byUser = walletUserConditions(ph('clientId'), {
    phoneNumber: shape.includes('p') ? ph('phoneNumber') : undefined,
    email: shape.includes('e') ? ph('email') : undefined,
    referenceId: shape.includes('r') ? ph('referenceId') : undefined,
  });
  const where = and(eq(wallets.clientId, ph('clientId')), ...byUser);
  if (byUser.length === 0) {
    // No filter: the merchant's wallets and their counted total (list_counts), no join (every
    // wallet has its user).
    return countedPage(db, {
      table: wallets,
      where,
      orderBy: [desc(wallets.createdAt), desc(wallets.id)],
      total: countedTotal(ph('clientId'), 'wallets', {}),
    });
  }
  // A filter names a user or two (users' unique indexes): their wallets, counted as they are read.
  return db
    .select({ row: wallets, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(wallets)
    .innerJoin(users, eq(users.id, wallets.userId))
    .where(where)
    .orderBy(desc(wallets.createdAt), desc(wallets.id))
    .limit(ph('limit'))
    .offset(ph('offset'));
});

const walletsTotal = totalAlone((_: '') => countedTotal(ph('clientId'), 'wallets', {}));

export async function listWalletRows(db: Executor, clientId: string, f: WalletFilters, page: Page) {
  if (walletOwnConditions(f).length > 0) return filteredWalletRows(db, clientId, f, page);
  const shape =
    `${f.phoneNumber !== undefined ? 'p' : ''}${f.email !== undefined ? 'e' : ''}${f.referenceId !== undefined ? 'r' : ''}` as WalletListShape;
  const email = f.email?.toLowerCase();
  const rows = await walletPage(db, shape, {
    clientId,
    phoneNumber: f.phoneNumber,
    email,
    referenceId: f.referenceId,
    limit: page.limit,
    offset: page.offset,
  });
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  // A page past the end.
  if (shape === '') return { rows: [], total: await walletsTotal(db, '', { clientId }) };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(wallets)
    .innerJoin(users, eq(users.id, wallets.userId))
    .where(and(eq(wallets.clientId, clientId), ...walletUserConditions(clientId, { ...f, email })));
  return { rows: [], total: c?.n ?? 0 };
}

export async function insertBarcode(db: Executor, row: typeof walletBarcodes.$inferInsert): Promise<BarcodeRow> {
  const [out] = await db.insert(walletBarcodes).values(row).returning();
  return out!;
}

export async function findBarcode(
  db: Executor,
  clientId: string,
  lookUpId: string,
  opts: { forUpdate?: boolean } = {},
): Promise<BarcodeRow | undefined> {
  const q = db
    .select()
    .from(walletBarcodes)
    .where(and(eq(walletBarcodes.clientId, clientId), eq(walletBarcodes.lookUpId, lookUpId)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function incrementBarcodeUse(db: Executor, id: string, now: Date): Promise<void> {
  await db
    .update(walletBarcodes)
    .set({ usageCount: sql`${walletBarcodes.usageCount} + 1`, updatedAt: now })
    .where(eq(walletBarcodes.id, id));
}

/** A barcode as the API shows it: with its wallet user's reference id. */
export type BarcodeView = BarcodeRow & { referenceId: string | null };

const barcodeViewColumns = {
  barcode: walletBarcodes,
  referenceId: sql<string | null>`coalesce(${users.stableReferenceId}, ${users.referenceId})`,
};

function barcodeViews(db: Executor) {
  return db
    .select(barcodeViewColumns)
    .from(walletBarcodes)
    .innerJoin(wallets, eq(wallets.id, walletBarcodes.walletId))
    .innerJoin(users, eq(users.id, wallets.userId));
}

const toView = (r: { barcode: BarcodeRow; referenceId: string | null }): BarcodeView => ({
  ...r.barcode,
  referenceId: r.referenceId,
});

export async function findBarcodeView(
  db: Executor,
  clientId: string,
  by: { id: string } | { lookUpId: string },
): Promise<BarcodeView | undefined> {
  const match = 'id' in by ? eq(walletBarcodes.id, by.id) : eq(walletBarcodes.lookUpId, by.lookUpId);
  const [row] = await barcodeViews(db).where(and(eq(walletBarcodes.clientId, clientId), match));
  return row && toView(row);
}

/** A wallet's barcodes, newest first; without `includeExpired`, only those not past expiresAt. */
export async function listBarcodeViews(
  db: Executor,
  clientId: string,
  walletId: string,
  opts: { includeExpired: boolean; now: Date; page: Page },
) {
  const conds: SQL[] = [eq(walletBarcodes.clientId, clientId), eq(walletBarcodes.walletId, walletId)];
  if (!opts.includeExpired) conds.push(gt(walletBarcodes.expiresAt, opts.now));
  const where = and(...conds);
  const rows = await barcodeViews(db)
    .where(where)
    .orderBy(desc(walletBarcodes.createdAt), desc(walletBarcodes.id))
    .limit(opts.page.limit)
    .offset(opts.page.offset);
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(walletBarcodes)
    .where(where);
  return { rows: rows.map(toView), total: c?.n ?? 0 };
}

/** The wallet's newest barcode still usable now (not expired, not used up), if any. */
export async function findActiveBarcode(
  db: Executor,
  clientId: string,
  walletId: string,
  now: Date,
): Promise<BarcodeRow | undefined> {
  const [row] = await db
    .select()
    .from(walletBarcodes)
    .where(
      and(
        eq(walletBarcodes.clientId, clientId),
        eq(walletBarcodes.walletId, walletId),
        gt(walletBarcodes.expiresAt, now),
        or(isNull(walletBarcodes.usageLimit), lt(walletBarcodes.usageCount, walletBarcodes.usageLimit)),
      ),
    )
    .orderBy(desc(walletBarcodes.createdAt), desc(walletBarcodes.id))
    .limit(1);
  return row;
}
