// A wallet's activity: every ledger entry that touched one of its accounts (deposits, their
// clearing and failure, withdrawals and returns, rewards, payments, refunds), newest first, with
// what it did to each of the wallet's balances and what caused it.
import { and, desc, eq, gte, inArray, like, lt, ne, sql, type SQL } from 'drizzle-orm';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/open.ts';
import { ledgerAccounts, ledgerEntries, ledgerPostings } from '../../db/schema.ts';
import { apiError } from '../../http/errors.ts';
import { createdRangeParams, dateOf, listQuery, pageLinks, pageOf, type Page } from '../../http/paging.ts';
import { COMMON_ERRORS, Timestamp, idParams, listDocument, ref, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { findWallet } from './sql.ts';

/** What a movement was, from its ledger entry's kind. */
const ACTIVITY_KINDS = ['deposit', 'withdrawal', 'reward', 'payment', 'refund', 'gift', 'other'] as const;
type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** Each public kind as a condition on the ledger entry's kind (deposit.initiate, payment.reserve, ...). */
const KIND_CONDITIONS: Record<Exclude<ActivityKind, 'other'>, SQL> = {
  deposit: like(ledgerEntries.kind, 'deposit%'),
  withdrawal: like(ledgerEntries.kind, 'withdraw%'),
  reward: like(ledgerEntries.kind, 'reward%'),
  refund: eq(ledgerEntries.kind, 'payment.refund'),
  payment: and(like(ledgerEntries.kind, 'payment.%'), ne(ledgerEntries.kind, 'payment.refund'))!,
  gift: like(ledgerEntries.kind, 'gift.%'),
};

function activityKindOf(entryKind: string): ActivityKind {
  if (entryKind.startsWith('deposit')) return 'deposit';
  if (entryKind.startsWith('withdraw')) return 'withdrawal';
  if (entryKind.startsWith('reward')) return 'reward';
  if (entryKind === 'payment.refund') return 'refund';
  if (entryKind.startsWith('payment.')) return 'payment';
  if (entryKind.startsWith('gift.')) return 'gift';
  return 'other';
}

interface ActivityRow {
  id: string;
  entryKind: string;
  refType: string;
  refId: string;
  createdAt: Date;
  /** The change to each of the wallet's balances (account code → cents), zeros left out. */
  changes: Record<string, number>;
}

interface ActivityFilters {
  kind?: ActivityKind;
  createdAfter?: Date;
  createdBefore?: Date;
}

/** A page of the wallet's entries with their total; the wallet must be the client's (checked by the caller). */
async function walletActivityRows(
  db: Executor,
  o: { clientId: string; walletId: string; filters: ActivityFilters; page: Page },
): Promise<{ rows: ActivityRow[]; total: number }> {
  const accounts = db
    .select({ id: ledgerAccounts.id })
    .from(ledgerAccounts)
    .where(
      and(
        eq(ledgerAccounts.clientId, o.clientId),
        eq(ledgerAccounts.ownerType, 'wallet'),
        eq(ledgerAccounts.ownerId, o.walletId),
      ),
    );
  const touched = db
    .select({ entryId: ledgerPostings.entryId })
    .from(ledgerPostings)
    .where(inArray(ledgerPostings.accountId, accounts));
  const f = o.filters;
  const conds: (SQL | undefined)[] = [eq(ledgerEntries.clientId, o.clientId), inArray(ledgerEntries.id, touched)];
  if (f.kind === 'other') {
    conds.push(sql`not (${sql.join(Object.values(KIND_CONDITIONS), sql` or `)})`);
  } else if (f.kind !== undefined) conds.push(KIND_CONDITIONS[f.kind]);
  if (f.createdAfter !== undefined) conds.push(gte(ledgerEntries.createdAt, f.createdAfter));
  if (f.createdBefore !== undefined) conds.push(lt(ledgerEntries.createdAt, f.createdBefore));
  const where = and(...conds);
  const entries = await db
    .select({
      id: ledgerEntries.id,
      entryKind: ledgerEntries.kind,
      refType: ledgerEntries.refType,
      refId: ledgerEntries.refId,
      createdAt: ledgerEntries.createdAt,
      total: sql<number>`count(*) over ()`.mapWith(Number),
    })
    .from(ledgerEntries)
    .where(where)
    .orderBy(desc(ledgerEntries.createdAt), desc(ledgerEntries.id))
    .limit(o.page.limit)
    .offset(o.page.offset);
  let total = entries[0]?.total ?? 0;
  if (entries.length === 0 && o.page.offset > 0) {
    const [c] = await db
      .select({ n: sql<number>`count(*)`.mapWith(Number) })
      .from(ledgerEntries)
      .where(where);
    total = c?.n ?? 0;
  }
  if (entries.length === 0) return { rows: [], total };
  const postings = await db
    .select({
      entryId: ledgerPostings.entryId,
      code: ledgerAccounts.code,
      amount: sql<number>`sum(${ledgerPostings.amount})`.mapWith(Number),
    })
    .from(ledgerPostings)
    .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerPostings.accountId))
    .where(
      and(
        inArray(
          ledgerPostings.entryId,
          entries.map((e) => e.id),
        ),
        eq(ledgerAccounts.ownerType, 'wallet'),
        eq(ledgerAccounts.ownerId, o.walletId),
      ),
    )
    .groupBy(ledgerPostings.entryId, ledgerAccounts.code);
  const changes = new Map<string, Record<string, number>>();
  for (const p of postings) {
    if (p.amount === 0) continue;
    const c = changes.get(p.entryId) ?? {};
    c[p.code] = p.amount;
    changes.set(p.entryId, c);
  }
  return {
    rows: entries.map(({ total: _, ...e }) => ({ ...e, changes: changes.get(e.id) ?? {} })),
    total,
  };
}

const WalletActivity = resource(
  'WalletActivity',
  'WalletActivity',
  {
    kind: Type.Enum([...ACTIVITY_KINDS], {
      description: 'What moved the money; `entryKind` says which step (deposit.initiate, payment.capture, ...)',
    }),
    entryKind: Type.String({ description: "The ledger entry's kind" }),
    amount: Type.Integer({
      description:
        "Net change to the wallet's money in cents (moves between its own balances, such as a reservation, net to 0)",
    }),
    changes: Type.Record(Type.String(), Type.Integer(), {
      description: "Cents added (positive) or taken (negative) per wallet balance, such as 'deposit.available'",
    }),
    source: Type.Object(
      {
        type: Type.String({ description: 'transaction, withdrawal, reward, payment, refund, attempt, gift' }),
        id: Type.String(),
      },
      { description: 'What caused the movement' },
    ),
    walletId: Type.String(),
    createdAt: Timestamp(),
  },
  { description: 'One ledger entry on the wallet: its id is the entry id' },
);

export const schemas = [WalletActivity];

const ActivityQuery = listQuery({
  'filter[kind]': Type.Optional(Type.Enum([...ACTIVITY_KINDS])),
  ...createdRangeParams,
});

function activityResource(walletId: string, r: ActivityRow) {
  return {
    id: r.id,
    type: 'WalletActivity' as const,
    attributes: {
      kind: activityKindOf(r.entryKind),
      entryKind: r.entryKind,
      amount: Object.values(r.changes).reduce((s, a) => s + a, 0),
      changes: r.changes,
      source: { type: r.refType, id: r.refId },
      walletId,
      createdAt: r.createdAt.toISOString(),
    },
  };
}

export async function walletActivityRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  app.get(
    '/api/v1/wallets/:walletId/activity',
    {
      schema: {
        tags: ['Wallets'],
        operationId: 'listWalletActivity',
        summary: "List every movement of a wallet's money",
        description:
          "Every ledger entry on the wallet's balances, newest first: deposits (made, cleared, failed), withdrawals and their returns, rewards, " +
          'payments (reserve, capture, release, direct), refunds. `filter[kind]` keeps one kind; `filter[createdAfter]` (inclusive) and `filter[createdBefore]` (exclusive) a time range. ' +
          "Another merchant's wallet is 404.",
        params: idParams('walletId'),
        querystring: ActivityQuery,
        response: responses({ 200: listDocument(ref(WalletActivity)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { walletId } = req.params;
      if (!(await findWallet(ctx.db, req.client.id, walletId)))
        throw apiError('WalletNotFound', `No wallet ${walletId}.`);
      const page = pageOf(req.query);
      const { rows, total } = await walletActivityRows(ctx.db, {
        clientId: req.client.id,
        walletId,
        filters: {
          kind: req.query['filter[kind]'],
          createdAfter: dateOf(req.query['filter[createdAfter]']),
          createdBefore: dateOf(req.query['filter[createdBefore]']),
        },
        page,
      });
      return {
        data: rows.map((r) => activityResource(walletId, r)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );
}
