// Every query on payments, refunds, authorization attempts and virtual cards; scoped by client_id.
import { and, asc, desc, eq, inArray, lte, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { builtOnce, ph } from '../../db/built-once.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import type { WritePart } from '../../db/batch.ts';
import { rowsOf, type Executor } from '../../db/open.ts';
import { coalescedLookups } from '../../db/coalesce.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, totalAlone } from '../../db/list-counts.ts';
import { insertPart, rowFrom, updatePart } from '../../db/rows.ts';
import {
  authorizationAttempts,
  cardAuthorizations,
  cardCaptures,
  cardReads,
  kycApplications,
  payments,
  refunds,
  virtualCards,
} from '../../db/schema.ts';
import { cappedPage, type Cursor } from '../../db/paged.ts';
import { run, runWithNext, statement } from '../../db/statements.ts';
import type { KeyCheck } from '../../http/idempotency.ts';
import type { Page, SortKey } from '../../http/paging.ts';

export type PaymentRow = typeof payments.$inferSelect;
export type RefundRow = typeof refunds.$inferSelect;
export type AttemptRow = typeof authorizationAttempts.$inferSelect;
export type CardRow = typeof virtualCards.$inferSelect;
export type CardAuthorizationRow = typeof cardAuthorizations.$inferSelect;

export const insertPaymentPart = (row: PaymentRow): WritePart => insertPart(payments, row);
export const updatePaymentPart = (id: string, patch: Partial<PaymentRow>): WritePart => updatePart(payments, id, patch);
export const insertCardPart = (row: CardRow): WritePart => insertPart(virtualCards, row);
export const insertAttemptPart = (row: AttemptRow): WritePart => insertPart(authorizationAttempts, row);
export const updateAttemptPart = (id: string, patch: Partial<AttemptRow>): WritePart =>
  updatePart(authorizationAttempts, id, patch);
export const paymentFromJson = (raw: Record<string, unknown>): PaymentRow => rowFrom(payments, raw);
export const attemptFromJson = (raw: Record<string, unknown>): AttemptRow => rowFrom(authorizationAttempts, raw);

/**
 * Payments locked for a transition (waiting, in the order given: payment id order, so two
 * groups cannot deadlock), each with its intent as it stands (unlocked: only the payment's own
 * transitions are serialised here) and the intent's `payment_ids`. A row per key; no payment
 * means not found.
 */
export const LOCK_PAYMENTS = statement(
  'payment_lock_group',
  `select x.payment, x.intent
   from unnest($1::uuid[], $2::uuid[]) with ordinality as m(client_id, id, n)
   left join lateral (
     select row_to_json(p) as payment,
       case when i.id is null then null else
         jsonb_set(to_jsonb(i), '{payment_ids}', (select jsonb_agg(y.id order by y.created_at, y.id) from payments y where y.intent_id = i.id)) end as intent
     from payments p left join payment_intents i on i.id = p.intent_id
     where p.client_id = m.client_id and p.id = m.id
     for update of p
   ) x on true
   order by m.n`,
);

export async function lockPaymentsWithIntents(
  db: Executor,
  keys: { clientId: string; paymentId: string }[],
): Promise<({ payment: PaymentRow; intent: Record<string, unknown> | null } | undefined)[]> {
  const rows = await run<{ payment: Record<string, unknown> | null; intent: Record<string, unknown> | null }>(
    db,
    LOCK_PAYMENTS,
    [keys.map((k) => k.clientId), keys.map((k) => k.paymentId)],
  );
  return rows.map((r) => (r.payment ? { payment: paymentFromJson(r.payment), intent: r.intent } : undefined));
}

/**
 * The first lock of payments' cancels in a group: their intents (found through the payments),
 * locked in intent id order. Intent, then payment, then ledger accounts, each in id order, is
 * the order every transition locks them in, so two groups cannot deadlock. It goes to
 * PostgreSQL with the statement after it (runWithNext), which starts, with a snapshot of its
 * own, once these locks are held.
 */
const LOCK_INTENTS_OF_PAYMENTS = statement(
  'payment_lock_intents',
  `select i.id from payment_intents i
   where i.id in (select p.intent_id from unnest($1::uuid[], $2::uuid[]) as m(client_id, id) join payments p on p.client_id = m.client_id and p.id = m.id)
   order by i.id
   for update of i`,
);

export async function lockIntentsOfPayments(
  db: Executor,
  keys: { clientId: string; paymentId: string }[],
): Promise<void> {
  await runWithNext(db, LOCK_INTENTS_OF_PAYMENTS, [keys.map((k) => k.clientId), keys.map((k) => k.paymentId)]);
}

/** The payments of intents, oldest first (a cancel reads them after the intents' locks, so none is missed). */
export const PAYMENTS_OF_INTENTS = statement(
  'payments_of_intents',
  'select id, intent_id from payments where intent_id = any($1::uuid[]) order by created_at, id',
);

/** The payments' ids of intents, oldest first, by intent. */
export async function paymentIdsOfIntents(db: Executor, intentIds: string[]): Promise<Map<string, string[]>> {
  return idsByIntent(intentIds, await run<PaymentOfIntent>(db, PAYMENTS_OF_INTENTS, [intentIds]));
}

type PaymentOfIntent = { id: string; intent_id: string };

const paymentIdsTogether = coalescedLookups<PaymentOfIntent>(
  (db, intentIds) => run<PaymentOfIntent>(db, PAYMENTS_OF_INTENTS, [intentIds]),
  (r) => r.intent_id,
);

/**
 * paymentIdsOfIntents for a list page's relationships: those of several pages asked for together
 * read as one statement (coalesce.ts). Two columns, where the whole payments cost the server the
 * decoding of every column.
 */
export async function paymentIdsOfListedIntents(db: Executor, intentIds: string[]): Promise<Map<string, string[]>> {
  return idsByIntent(intentIds, intentIds.length === 0 ? [] : await paymentIdsTogether(db, intentIds));
}

function idsByIntent(intentIds: string[], rows: PaymentOfIntent[]): Map<string, string[]> {
  const out = new Map<string, string[]>(intentIds.map((id) => [id, []]));
  for (const r of rows) out.get(r.intent_id)!.push(r.id);
  return out;
}

/**
 * The payments of intents that are not Failed (an intent has at most one), locked in payment id
 * order: the order every group locks payments in, so a capture group cannot deadlock with them.
 */
export const LOCK_ACTIVE_PAYMENTS = statement(
  'payments_lock_active',
  `select row_to_json(p) as payment from payments p where p.intent_id = any($1::uuid[]) and p.status <> 'Failed' order by p.id for update of p`,
);

export async function lockActivePayments(db: Executor, intentIds: string[]): Promise<Map<string, PaymentRow>> {
  const out = new Map<string, PaymentRow>();
  for (const r of await run<{ payment: Record<string, unknown> }>(db, LOCK_ACTIVE_PAYMENTS, [intentIds])) {
    const p = paymentFromJson(r.payment);
    out.set(p.intentId!, p);
  }
  return out;
}

/** An intent's payments' ids, oldest first. */
export async function paymentIdsOfIntent(db: Executor, intentId: string): Promise<string[]> {
  return (await paymentIdsOfIntents(db, [intentId])).get(intentId)!;
}

export async function findPayment(
  db: Executor,
  clientId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<PaymentRow | undefined> {
  const q = db
    .select()
    .from(payments)
    .where(and(eq(payments.clientId, clientId), eq(payments.id, id)));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function updatePayment(db: Executor, id: string, patch: Partial<PaymentRow>): Promise<PaymentRow> {
  const [row] = await db.update(payments).set(patch).where(eq(payments.id, id)).returning();
  return row!;
}

/** The payments of intents, as one statement whatever their number (an array; built once: built-once.ts). */
const intentsPayments = builtOnce((db: Executor, _shape: '') =>
  db
    .select()
    .from(payments)
    .where(sql`${payments.intentId} = any(${ph('intentIds')}::uuid[])`)
    .orderBy(asc(payments.createdAt), asc(payments.id))
    .prepare(''),
);

const paymentsOfIntentsTogether = coalescedLookups<PaymentRow>(
  (db, intentIds) => intentsPayments(db, '', { intentIds }),
  (p) => p.intentId!,
);

/** The payments of intents (those of several pages asked for together read as one: coalesce.ts). */
export async function paymentsOfIntents(db: Executor, intentIds: string[]): Promise<PaymentRow[]> {
  if (intentIds.length === 0) return [];
  return paymentsOfIntentsTogether(db, intentIds);
}

export interface PaymentFilters {
  status?: string;
  paymentIntentId?: string;
  reference?: string;
  channel?: string;
}

const SORTABLE = {
  createdAt: payments.createdAt,
  updatedAt: payments.updatedAt,
  amount: payments.amount,
  status: payments.status,
} as const;
export type PaymentSortField = keyof typeof SORTABLE;
export const PAYMENT_SORT_FIELDS = Object.keys(SORTABLE) as PaymentSortField[];

type V = string | Placeholder;

/** The filters' conditions: each a range of one index. */
function paymentConditions(clientId: V, f: { [K in keyof PaymentFilters]: V }): SQL {
  const conds: SQL[] = [eq(payments.clientId, clientId)];
  if (f.status) conds.push(eq(payments.status, f.status));
  if (f.paymentIntentId) conds.push(eq(payments.intentId, f.paymentIntentId));
  if (f.reference) conds.push(eq(payments.reference, f.reference));
  if (f.channel) conds.push(eq(payments.channel, f.channel));
  return and(...conds)!;
}

/**
 * The API's page of payments with its total. The total: with an intent or a reference (a few
 * payments, through their indexes) the rows matched, counted with the page; otherwise the
 * counters (list 'payments' by status, or the channel's own list 'payments/channel=<channel>').
 * One statement per shape: which filters it has and the sort (built once, pages asked for together read together: coalesced-pages.ts).
 */
const paymentPage = coalescedPages((db: Executor, shape: string) => {
  const has = JSON.parse(shape) as Record<keyof PaymentFilters, boolean> & { sort: SortKey<PaymentSortField>[] };
  const f = {
    status: has.status ? ph('status') : undefined,
    paymentIntentId: has.paymentIntentId ? ph('paymentIntentId') : undefined,
    reference: has.reference ? ph('reference') : undefined,
    channel: has.channel ? ph('channel') : undefined,
  };
  const where = paymentConditions(ph('clientId'), f);
  const order = [
    ...has.sort.map((k) => (k.descending ? desc(SORTABLE[k.field]) : asc(SORTABLE[k.field]))),
    desc(payments.id),
  ];
  if (has.paymentIntentId || has.reference) {
    // A few payments, counted as they are read.
    return db
      .select({ row: payments, total: sql<number>`count(*) over ()`.mapWith(Number) })
      .from(payments)
      .where(where)
      .orderBy(...order)
      .limit(ph('limit'))
      .offset(ph('offset'));
  }
  return countedPage(db, {
    table: payments,
    where,
    orderBy: order,
    total: countedTotal(ph('clientId'), ph('list'), ph('match')),
  });
});

const paymentsTotal = totalAlone((_: '') => countedTotal(ph('clientId'), ph('list'), ph('match')));

/**
 * A page of payments and their total. With `totalCap` (the console), newest first, the total
 * counted no further than the cap (`capped` says there are more) and the page found by `cursor`
 * when given, so a page costs only its rows (cappedPage).
 */
export async function listPaymentRows(
  db: Executor,
  clientId: string,
  f: PaymentFilters,
  sort: SortKey<PaymentSortField>[],
  page: Page,
  opts: { totalCap?: number; cursor?: Cursor } = {},
) {
  const where = paymentConditions(clientId, f);
  if (opts.totalCap !== undefined) {
    // The console: newest first, by cursor or offset (cappedPage).
    return cappedPage(db, {
      table: payments,
      clientId,
      where,
      page,
      cursor: opts.cursor,
      totalCap: opts.totalCap,
      rows: (w, orderBy, limit, offset) =>
        db
          .select()
          .from(payments)
          .where(w)
          .orderBy(...orderBy)
          .limit(limit)
          .offset(offset),
    });
  }
  const selective = !!f.paymentIntentId || !!f.reference;
  const list = f.channel ? `payments/channel=${f.channel}` : 'payments';
  const match: Record<string, string> = f.status ? { status: f.status } : {};
  const shape = JSON.stringify({
    status: !!f.status,
    paymentIntentId: !!f.paymentIntentId,
    reference: !!f.reference,
    channel: !!f.channel,
    sort,
  });
  const rows = await paymentPage(db, shape, {
    clientId,
    ...f,
    list,
    match: JSON.stringify(match),
    limit: page.limit,
    offset: page.offset,
  });
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total, capped: false };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0, capped: false };
  if (!selective)
    return {
      rows: [],
      total: await paymentsTotal(db, '', { clientId, list, match: JSON.stringify(match) }),
      capped: false,
    };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(payments)
    .where(where);
  return { rows: [], total: c?.n ?? 0, capped: false };
}

/** Uncaptured authorizations past their expiry (read only: the job locks each in order). */
export async function expiredAuthorizations(
  db: Executor,
  now: Date,
  limit: number,
): Promise<{ id: string; intentId: string | null }[]> {
  return db
    .select({ id: payments.id, intentId: payments.intentId })
    .from(payments)
    .where(and(eq(payments.status, 'Created'), lte(payments.expiresAt, now)))
    .orderBy(asc(payments.expiresAt))
    .limit(limit);
}

/** A payment locked, or undefined when another transaction holds it (SKIP LOCKED). */
export async function lockPaymentSkipLocked(db: Executor, id: string): Promise<PaymentRow | undefined> {
  const [row] = await db.select().from(payments).where(eq(payments.id, id)).for('update', { skipLocked: true });
  return row;
}

/** What a captured payment pulls from the linked account (its bank part). */
const BANK_PART = sql`coalesce((${payments.captured}->>'linked')::bigint, 0)`;

/**
 * Processing payments due to settle, locked (SKIP LOCKED). `withoutBankPart`: only those with
 * nothing to pull from a bank (a bank that reports status settles the others).
 */
export async function lockDueSettlements(
  db: Executor,
  now: Date,
  limit: number,
  opts: { withoutBankPart?: boolean } = {},
): Promise<PaymentRow[]> {
  return db
    .select()
    .from(payments)
    .where(
      and(
        eq(payments.status, 'Processing'),
        lte(payments.settleAfter, now),
        opts.withoutBankPart ? sql`${BANK_PART} = 0` : undefined,
      ),
    )
    .orderBy(asc(payments.settleAfter))
    .limit(limit)
    .for('update', { skipLocked: true });
}

/**
 * Processing payments with a bank part whose pull is due, claimed: their settlement time moves
 * to `leaseUntil` (another process skips them meanwhile; a crashed sender's come due again).
 * With the amount to pull and the linked account's provider id.
 */
export async function claimDueBankPulls(
  db: Executor,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<{ id: string; clientId: string; amount: number; externalId: string }[]> {
  const rows = rowsOf<{ id: string; client_id: string; amount: string | number; external_id: string }>(
    await db.execute(sql`
      with due as (
        select id from payments
        where status = 'Processing' and settle_after <= ${now.toISOString()}::timestamptz and ${BANK_PART} > 0
        order by settle_after limit ${limit} for update skip locked
      ), claimed as (
        update payments p set settle_after = ${leaseUntil.toISOString()}::timestamptz from due where p.id = due.id
        returning p.id, p.client_id, p.captured, p.linked_account_id
      )
      select c.id, c.client_id, (c.captured->>'linked')::bigint as amount, la.external_id
      from claimed c join linked_accounts la on la.id = c.linked_account_id`),
  );
  return rows.map((r) => ({ id: r.id, clientId: r.client_id, amount: Number(r.amount), externalId: r.external_id }));
}

/** The bank has these payments' pulls: they settle when it reports, not at a time of their own. */
export async function awaitBankReport(db: Executor, ids: string[]): Promise<void> {
  if (ids.length > 0) await db.update(payments).set({ settleAfter: null }).where(inArray(payments.id, ids));
}

/** One payment by id (any merchant: jobs), locked. */
export async function lockPaymentById(db: Executor, id: string): Promise<PaymentRow | undefined> {
  const [row] = await db.select().from(payments).where(eq(payments.id, id)).for('update');
  return row;
}

// ----- refunds

export const insertRefundPart = (row: RefundRow): WritePart => insertPart(refunds, row);
const refundFromJson = (raw: Record<string, unknown>): RefundRow => rowFrom(refunds, raw);

/** What a direct payment (POST /payments) decides on: checkDirectPaymentGroup. */
export interface DirectPaymentContext {
  /** The named counterparties that exist (not deleted) for the merchant. */
  counterpartyIds: string[];
  walletStatus: string | null;
  walletUserId: string | null;
  kycStatus: string | null;
  /** The wallet's balance per ledger account code. */
  buckets: Record<string, number> | null;
  /** The named linked account's status, when it is the wallet user's. */
  linkedStatus: string | null;
}

export type DirectPaymentCheck = KeyCheck & DirectPaymentContext;

/**
 * For a group of direct payments, in one statement and in order: each one's idempotency check
 * (its key's lock, then its stored outcome: idempotency_check, migration 0007; a payment without
 * a key passes a null lock key and key: pg_try_advisory_xact_lock(null) is null, so the check
 * takes no lock and finds nothing) and everything it decides on: the named counterparties (a JSON
 * array of ids), the wallet, its user's KYC, its balances and the named linked account. Nothing
 * is locked here: the balances plan the sourcing, and the ledger's no-negative check refuses a
 * plan a concurrent spend made stale. One row per payment, even without a wallet.
 */
const DIRECT_GROUP_CHECK = statement(
  'direct_payment_group_check',
  `select c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at,
      (select coalesce(json_agg(cp.id), '[]'::json) from counterparties cp
        where cp.client_id = m.client_id and cp.deleted_at is null and cp.id = any(array(select json_array_elements_text(m.counterparty_ids::json)::uuid))) as "counterpartyIds",
      w.status as "walletStatus", w.user_id as "walletUserId", u.kyc_status as "kycStatus",
      (select json_object_agg(a.code, a.balance) from ledger_accounts a where a.owner_type = 'wallet' and a.owner_id = w.id) as buckets,
      (select la.status from linked_accounts la where la.client_id = m.client_id and la.user_id = w.user_id and la.id = m.linked_id) as "linkedStatus"
    from unnest($1::text[], $2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::uuid[]) with ordinality as m(lock_key, client_id, key, wallet_id, counterparty_ids, linked_id, i)
    cross join lateral idempotency_check(m.lock_key, m.client_id, 'payment', m.key) c
    left join wallets w on w.client_id = m.client_id and w.id = m.wallet_id
    left join users u on u.id = w.user_id
    order by m.i`,
);

export async function checkDirectPaymentGroup(
  tx: Executor,
  members: {
    lockKey: string | null;
    clientId: string;
    key: string | null;
    walletId: string;
    counterpartyIds: string[];
    linkedAccountId: string | null;
  }[],
): Promise<DirectPaymentCheck[]> {
  return run<DirectPaymentCheck>(tx, DIRECT_GROUP_CHECK, [
    members.map((m) => m.lockKey),
    members.map((m) => m.clientId),
    members.map((m) => m.key),
    members.map((m) => m.walletId),
    members.map((m) => JSON.stringify(m.counterpartyIds)),
    members.map((m) => m.linkedAccountId),
  ]);
}

/** A refund's idempotency check (KeyCheck) with its payment, locked when the refund will run. */
export type RefundCheck = KeyCheck & { payment_row: Record<string, unknown> | null };

/**
 * Refunds in a group, first read, in one statement and in the order given (payment id order, so
 * two groups cannot deadlock): each one's idempotency check (its key's lock, then its stored
 * outcome: idempotency_check, migration 0007) and its payment, locked only when the refund will
 * run (this request holds the key and nothing live is stored under it), so a replay or a 409
 * never waits for a payment's lock.
 */
const REFUND_GROUP_CHECK = statement(
  'refund_group_check',
  `select c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at, x.payment_row
    from unnest($1::text[], $2::uuid[], $3::text[], $4::uuid[], $5::timestamptz[]) with ordinality as m(lock_key, client_id, key, payment_id, now, i)
    cross join lateral idempotency_check(m.lock_key, m.client_id, 'refund', m.key) c
    left join lateral (
      select row_to_json(p) as payment_row from payments p
      where p.client_id = m.client_id and p.id = m.payment_id and c.locked and (c.fingerprint is null or c.expires_at <= m.now)
      for update of p
    ) x on true
    order by m.i`,
);

export async function checkRefundGroup(
  tx: Executor,
  keys: { lockKey: string; clientId: string; key: string; paymentId: string; now: Date }[],
): Promise<RefundCheck[]> {
  return run<RefundCheck>(tx, REFUND_GROUP_CHECK, [
    keys.map((k) => k.lockKey),
    keys.map((k) => k.clientId),
    keys.map((k) => k.key),
    keys.map((k) => k.paymentId),
    keys.map((k) => k.now),
  ]);
}

/**
 * Refunds, second read, after their payments are locked (so no refund of them can commit
 * unseen): the payments' refunds so far, oldest first, with the ledger accounts the refunds
 * credit locked in id order (the order every movement locks them in).
 */
const REFUND_CONTEXT = statement(
  'refund_context',
  `with l as (select id from ledger_accounts where id = any($2::uuid[]) order by id for no key update)
   select (select count(*) from l)::int as locked,
     (select coalesce(json_agg(row_to_json(r) order by r.created_at, r.id), '[]'::json) from refunds r where r.payment_id = any($1::uuid[])) as refunds`,
);

/** Each payment's refunds (refundContext), with `lock` (sorted) locked. */
export async function refundContext(
  db: Executor,
  paymentIds: string[],
  lock: string[],
): Promise<Map<string, RefundRow[]>> {
  const [row] = await run<{ refunds: Record<string, unknown>[] }>(db, REFUND_CONTEXT, [paymentIds, lock]);
  const out = new Map<string, RefundRow[]>(paymentIds.map((id) => [id, []]));
  for (const r of row!.refunds.map(refundFromJson)) out.get(r.paymentId)!.push(r);
  return out;
}

export async function refundsOf(db: Executor, paymentIds: string[]): Promise<RefundRow[]> {
  if (paymentIds.length === 0) return [];
  return db
    .select()
    .from(refunds)
    .where(inArray(refunds.paymentId, paymentIds))
    .orderBy(asc(refunds.createdAt), asc(refunds.id));
}

export async function findAttempt(
  db: Executor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<AttemptRow | undefined> {
  const q = db.select().from(authorizationAttempts).where(eq(authorizationAttempts.id, id));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function updateAttempt(db: Executor, id: string, patch: Partial<AttemptRow>): Promise<void> {
  await db.update(authorizationAttempts).set(patch).where(eq(authorizationAttempts.id, id));
}

/** Attempts whose process died (lease run out), claimed for recovery by pushing the lease on. */
export async function claimOrphanedAttempts(
  db: Executor,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<AttemptRow[]> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select({ id: authorizationAttempts.id })
      .from(authorizationAttempts)
      .where(and(eq(authorizationAttempts.state, 'processing'), lte(authorizationAttempts.leaseUntil, now)))
      .limit(limit)
      .for('update', { skipLocked: true });
    if (due.length === 0) return [];
    return tx
      .update(authorizationAttempts)
      .set({ leaseUntil, updatedAt: now })
      .where(
        inArray(
          authorizationAttempts.id,
          due.map((d) => d.id),
        ),
      )
      .returning();
  });
}

// ----- virtual cards

export async function insertCard(db: Executor, row: typeof virtualCards.$inferInsert): Promise<CardRow> {
  const [out] = await db.insert(virtualCards).values(row).returning();
  return out!;
}

export async function cardOfPayment(db: Executor, paymentId: string): Promise<CardRow | undefined> {
  const [row] = await db.select().from(virtualCards).where(eq(virtualCards.paymentId, paymentId));
  return row;
}

export async function cardOfGift(db: Executor, giftId: string): Promise<CardRow | undefined> {
  const [row] = await db.select().from(virtualCards).where(eq(virtualCards.giftId, giftId));
  return row;
}

export async function recordCardRead(db: Executor, row: typeof cardReads.$inferInsert): Promise<void> {
  await db.insert(cardReads).values(row);
}

/** The address of the user's latest KYC application (a card's billing address when the intent has none). */
export async function latestKycAddress(
  db: Executor,
  clientId: string,
  userId: string,
): Promise<Record<string, string> | undefined> {
  const [row] = await db
    .select({ address: kycApplications.address })
    .from(kycApplications)
    .where(and(eq(kycApplications.clientId, clientId), eq(kycApplications.userId, userId)))
    .orderBy(desc(kycApplications.createdAt), desc(kycApplications.id))
    .limit(1);
  return row?.address;
}

// ----- the sandbox card network: authorization requests and captures

export async function insertCardAuthorization(
  db: Executor,
  row: typeof cardAuthorizations.$inferInsert,
): Promise<CardAuthorizationRow> {
  const [out] = await db.insert(cardAuthorizations).values(row).returning();
  return out!;
}

export async function findCardAuthorization(
  db: Executor,
  paymentId: string,
  id: string,
): Promise<CardAuthorizationRow | undefined> {
  const [row] = await db
    .select()
    .from(cardAuthorizations)
    .where(and(eq(cardAuthorizations.paymentId, paymentId), eq(cardAuthorizations.id, id)));
  return row;
}

/** The payment was canceled (or expired) before capture: its approved card authorizations end. */
export async function cancelCardAuthorizations(db: Executor, paymentId: string, now: Date): Promise<void> {
  await db
    .update(cardAuthorizations)
    .set({ status: 'Canceled', updatedAt: now })
    .where(and(eq(cardAuthorizations.paymentId, paymentId), eq(cardAuthorizations.status, 'Approved')));
}

export async function listCardAuthorizations(db: Executor, clientId: string, paymentId: string, page: Page) {
  const where = and(eq(cardAuthorizations.clientId, clientId), eq(cardAuthorizations.paymentId, paymentId));
  const rows = await db
    .select({ a: cardAuthorizations, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(cardAuthorizations)
    .where(where)
    .orderBy(desc(cardAuthorizations.createdAt), desc(cardAuthorizations.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0 || page.offset === 0) return { rows: rows.map((r) => r.a), total: rows[0]?.total ?? 0 };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(cardAuthorizations)
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function insertCardCapture(db: Executor, row: typeof cardCaptures.$inferInsert): Promise<void> {
  await db.insert(cardCaptures).values(row);
}

/** A capture as the API shows it: a card-network capture row, or a bank-rail payment's one capture. */
export interface CaptureRow {
  id: string;
  paymentId: string;
  amount: number;
  success: boolean;
  method: 'Direct' | 'BankRails' | 'VirtualDebitCard';
  reference: string | null;
  authorizationId: string | null;
  capturedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A captured bank-rail payment's one capture, as captureRows reads it (its second branch), from the row at hand. */
export function bankCaptureOf(p: PaymentRow): CaptureRow | undefined {
  if (p.rail !== 'bank' || !p.capturedAt) return undefined;
  const at = p.capturedAt;
  return {
    id: p.id,
    paymentId: p.id,
    amount: p.capturedAmount,
    success: true,
    method: p.intentId ? 'BankRails' : 'Direct',
    reference: p.reference,
    authorizationId: null,
    capturedAt: at,
    createdAt: at,
    updatedAt: at,
  };
}

export const CAPTURE_SORT_FIELDS = ['createdAt', 'amount'] as const;
const CAPTURE_SORT_COLUMNS: Record<(typeof CAPTURE_SORT_FIELDS)[number], string> = {
  createdAt: 'created_at',
  amount: 'amount',
};

/**
 * Captures of payments: the card network's (successful or refused) and, for a captured bank-rail
 * payment, its one capture (the payment's id; `Direct` for POST /payments). Newest first unless
 * sorted; with a page, paged.
 */
export async function captureRows(
  db: Executor,
  clientId: string,
  paymentIds: string[],
  opts: {
    method?: string;
    success?: boolean;
    sort?: SortKey<(typeof CAPTURE_SORT_FIELDS)[number]>[];
    page?: Page;
  } = {},
): Promise<{ rows: CaptureRow[]; total: number }> {
  if (paymentIds.length === 0) return { rows: [], total: 0 };
  const conds: SQL[] = [sql`true`];
  if (opts.method) conds.push(sql`x.method = ${opts.method}`);
  if (opts.success !== undefined) conds.push(sql`x.success = ${opts.success}`);
  const order = [
    ...(opts.sort ?? [{ field: 'createdAt' as const, descending: true }]).map(
      (k) => `x.${CAPTURE_SORT_COLUMNS[k.field]} ${k.descending ? 'desc' : 'asc'}`,
    ),
    'x.id desc',
  ].join(', ');
  const paging = opts.page ? sql`limit ${opts.page.limit} offset ${opts.page.offset}` : sql``;
  // One row at least (the count), with the page's captures joined to it.
  const rows = rowsOf<Record<string, unknown>>(
    await db.execute(sql`
      with x as (
        select c.id, c.payment_id, c.amount, c.success, 'VirtualDebitCard' as method, p.reference, c.authorization_id,
               case when c.success then c.created_at end as captured_at, c.created_at, c.updated_at
        from card_captures c join payments p on p.id = c.payment_id
        where c.client_id = ${clientId} and c.payment_id in ${paymentIds}
        union all
        select p.id, p.id, p.captured_amount, true, case when p.intent_id is null then 'Direct' else 'BankRails' end, p.reference, null,
               p.captured_at, p.captured_at, p.captured_at
        from payments p
        where p.client_id = ${clientId} and p.id in ${paymentIds} and p.rail = 'bank' and p.captured_at is not null
      ), f as (select * from x where ${and(...conds)})
      select n.total, y.* from (select count(*) as total from f) n
      left join lateral (select * from f x order by ${sql.raw(order)} ${paging}) y on true`),
  );
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    rows: rows
      .filter((r) => r.id !== null && r.id !== undefined)
      .map((r) => ({
        id: r.id as string,
        paymentId: r.payment_id as string,
        amount: Number(r.amount),
        success: r.success === true || r.success === 't',
        method: r.method as CaptureRow['method'],
        reference: (r.reference as string | null) ?? null,
        authorizationId: (r.authorization_id as string | null) ?? null,
        capturedAt: date(r.captured_at),
        createdAt: date(r.created_at)!,
        updatedAt: date(r.updated_at)!,
      })),
    total: rows.length > 0 ? Number(rows[0]!.total) : 0,
  };
}

export interface DailyPaymentStats {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  /** Payments created that day, and how many of them are Failed now. */
  count: number;
  failed: number;
  /** Their amounts authorized, captured and refunded, as they stand now (cents). */
  amount: number;
  captured: number;
  refunded: number;
}

/**
 * Payments per UTC day of creation since `since` (the console's charts), from the hourly rollup
 * (console_payment_rollup) and the deltas not yet folded into it, never from payments: about
 * 24 rows a day whatever the merchant's volume. Both are read in one statement, so a fold
 * running meanwhile is seen either wholly or not at all.
 */
export async function dailyPaymentStats(db: Executor, clientId: string, since: Date): Promise<DailyPaymentStats[]> {
  const rows = rowsOf<Record<string, string | number>>(
    await db.execute(sql`
      select to_char(x.hour at time zone 'UTC', 'YYYY-MM-DD') as day, sum(x.payments) as count, sum(x.failed) as failed,
        sum(x.amount) as amount, sum(x.captured) as captured, sum(x.refunded) as refunded
      from (
        select hour, payments, failed, amount, captured, refunded from console_payment_rollup
        where client_id = ${clientId} and hour >= ${since.toISOString()}::timestamptz
        union all
        select hour, payments, failed, amount, captured, refunded from console_payment_rollup_deltas
        where client_id = ${clientId} and hour >= ${since.toISOString()}::timestamptz
      ) x
      group by 1 order by 1`),
  );
  return rows.map((r) => ({
    day: String(r.day),
    count: Number(r.count),
    failed: Number(r.failed),
    amount: Number(r.amount),
    captured: Number(r.captured),
    refunded: Number(r.refunded),
  }));
}

/**
 * Folds up to `limit` rows of console_payment_rollup_deltas into console_payment_rollup, in one
 * statement (the rows leave the deltas and enter the rollup together). Rows another process is
 * folding are skipped; rollup rows are written in key order, so two folds never deadlock.
 * Returns how many delta rows it folded.
 */
export async function foldPaymentRollup(db: Executor, limit: number): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(
    await db.execute(sql`
      with batch as (select ctid from console_payment_rollup_deltas limit ${limit} for update skip locked),
      d as (delete from console_payment_rollup_deltas x using batch where x.ctid = batch.ctid returning x.*),
      folded as (
        insert into console_payment_rollup as r (client_id, hour, payments, failed, amount, captured, refunded)
        select client_id, hour, sum(payments), sum(failed), sum(amount), sum(captured), sum(refunded)
        from d group by client_id, hour order by client_id, hour
        on conflict (client_id, hour) do update set
          payments = r.payments + excluded.payments, failed = r.failed + excluded.failed, amount = r.amount + excluded.amount,
          captured = r.captured + excluded.captured, refunded = r.refunded + excluded.refunded
        returning 1
      )
      select count(*) as n from d`),
  );
  return Number(row?.n ?? 0);
}

/** The authorization attempts that made a payment (through its intent's index); the console's timeline. */
export async function attemptsOfPayment(
  db: Executor,
  clientId: string,
  p: { id: string; intentId: string | null },
): Promise<AttemptRow[]> {
  if (!p.intentId) return [];
  return db
    .select()
    .from(authorizationAttempts)
    .where(
      and(
        eq(authorizationAttempts.clientId, clientId),
        eq(authorizationAttempts.intentId, p.intentId),
        eq(authorizationAttempts.paymentId, p.id),
      ),
    )
    .orderBy(asc(authorizationAttempts.createdAt));
}
