// Every query on payment intents, scoped by client_id.
import { and, asc, desc, eq, inArray, lte, or, sql, type Placeholder, type SQL, type SQLWrapper } from 'drizzle-orm';
import { ph } from '../../db/built-once.ts';
import { CoalescedRead } from '../../db/coalesce.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import type { WritePart } from '../../db/batch.ts';
import type { Executor } from '../../db/open.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, totalAlone } from '../../db/list-counts.ts';
import { cappedPage, type Cursor } from '../../db/paged.ts';
import { insertPart, rowFrom, updatePart } from '../../db/rows.ts';
import { paymentIntents } from '../../db/schema.ts';
import { run, statement } from '../../db/statements.ts';
import type { KeyCheck, Preflight } from '../../http/idempotency.ts';
import type { Page, SortKey } from '../../http/paging.ts';

export type IntentRow = typeof paymentIntents.$inferSelect;

/** States that run out at expiresAt. */
export const EXPIRING = ['Promotable', 'RequiresAction'];
/**
 * `status in EXPIRING` with the statuses as literals: the predicate of payment_intents_expiring_idx,
 * which a prepared statement's generic plan can only use when the statuses are in its text (as
 * parameters, the expiry job's read scans the whole table).
 */
const EXPIRING_STATUS = sql.raw(`"payment_intents"."status" in (${EXPIRING.map((s) => `'${s}'`).join(', ')})`);

export const insertIntentPart = (row: IntentRow): WritePart => insertPart(paymentIntents, row);
export const updateIntentPart = (id: string, patch: Partial<IntentRow>): WritePart =>
  updatePart(paymentIntents, id, patch);
export const intentFromJson = (raw: Record<string, unknown>): IntentRow => rowFrom(paymentIntents, raw);

/** What creating a wallet intent needs to know about the wallet, in one read. */
export interface WalletIntentContext {
  id: string;
  clientId: string;
  userId: string;
  status: string;
  kycStatus: string;
  buckets: Record<string, number>;
  connected: boolean;
}

/** The wallet reads of one turn of the event loop, as one statement (db/coalesce.ts). */
const walletContexts = new CoalescedRead<WalletIntentContext>(
  'intent_wallet_contexts',
  `select w.id, w.client_id as "clientId", w.user_id as "userId", w.status, u.kyc_status as "kycStatus",
     (select json_object_agg(a.code, a.balance) from ledger_accounts a where a.owner_type = 'wallet' and a.owner_id = w.id) as buckets,
     exists (select 1 from linked_accounts la where la.client_id = w.client_id and la.user_id = w.user_id and la.status = 'Connected') as connected
   from unnest($1::uuid[], $2::uuid[]) k(client_id, id)
   join wallets w on w.client_id = k.client_id and w.id = k.id
   join users u on u.id = w.user_id`,
);

export function walletIntentContext(
  db: Executor,
  clientId: string,
  walletId: string,
): Promise<WalletIntentContext | undefined> {
  return walletContexts.get(db, clientId, walletId);
}

/**
 * Authorize, first read (with the idempotency check when there is a key): the intent, locked
 * without waiting, so a concurrent authorize of the same intent answers 409 instead of queueing.
 */
export function lockIntentPreflight(clientId: string, intentId: string): Preflight {
  return {
    name: 'authorize_intent',
    text: 'select row_to_json(i) as intent_row from payment_intents i where i.client_id = $1 and i.id = $2 and {{gate}} for update of i nowait',
    params: [clientId, intentId],
  };
}

/** Authorize, second read: everything else it decides on, read after the intent is locked. */
export interface AuthorizeContext {
  paymentIds: string[];
  activePayment: Record<string, unknown> | null;
  openAttempt: Record<string, unknown> | null;
  walletStatus: string | null;
  userId: string | null;
  kycStatus: string | null;
  linkedAccountId: string | null;
  /** The wallet's available and reserved ledger accounts [id, code, balance], locked in id order when asked (pending money is not spent). */
  walletAccounts: [string, string, number][] | null;
  giftAvailable: number | null;
}

/** The context of one authorize (authorizeGroupContext); the wallet's accounts locked when asked. */
export async function authorizeContext(
  db: Executor,
  i: { clientId: string; intent: IntentRow; lockWallet: boolean },
): Promise<AuthorizeContext> {
  const [row] = await authorizeGroupContext(db, [i], i.lockWallet && i.intent.walletId ? [i.intent.walletId] : []);
  return row!;
}

/** One member's first read in a group of authorizes: its key's check and its intent. */
interface GroupCheck extends KeyCheck {
  intent_row: Record<string, unknown> | null;
}

/** One member's read in a group of authorizes: its key's check, its intent and its context. */
export interface GroupRead extends GroupCheck, AuthorizeContext {}

/**
 * An authorize's context (AuthorizeContext) as select-list columns and the joins they need, over
 * a row source that names the intent's id, merchant, wallet and gift with these expressions and
 * has the locked wallets' accounts in a CTE `acc`: the same read for an authorize alone
 * (GROUP_CONTEXT) and for a group (GROUP_READ).
 */
function contextSelect(e: { intentId: string; clientId: string; walletId: string; giftId: string }): {
  columns: string;
  joins: string;
} {
  return {
    columns: `(select coalesce(json_agg(p.id order by p.created_at, p.id), '[]'::json) from payments p where p.intent_id = ${e.intentId}) as "paymentIds",
      (select row_to_json(p) from payments p where p.intent_id = ${e.intentId} and p.status <> 'Failed' order by p.created_at desc limit 1) as "activePayment",
      (select row_to_json(a) from authorization_attempts a where a.intent_id = ${e.intentId} and a.state = 'processing' limit 1) as "openAttempt",
      w.status as "walletStatus", u.id as "userId", u.kyc_status as "kycStatus",
      (select la.id from linked_accounts la where la.client_id = ${e.clientId} and la.user_id = u.id and la.status = 'Connected' order by la.created_at, la.id limit 1) as "linkedAccountId",
      (select json_agg(json_build_array(acc.id, acc.code, acc.balance) order by acc.id) from acc where acc.owner_id = ${e.walletId}) as "walletAccounts",
      (select a.balance from ledger_accounts a where a.owner_type = 'gift' and a.owner_id = ${e.giftId} and a.code = 'gift.available') as "giftAvailable"`,
    // Lateral: each wallet and user through its primary key, whatever the tables' statistics
    // said when the plan was cached (joined, the plan hashed a scan of the whole table).
    joins: `left join lateral (select w.status, w.user_id from wallets w where w.client_id = ${e.clientId} and w.id = ${e.walletId}) w on true
    left join lateral (select u.id, u.kyc_status from users u where u.id = w.user_id) u on true`,
  };
}

const GROUP_READ_CONTEXT = contextSelect({
  intentId: '(chk.i).id',
  clientId: 'chk.client_id',
  walletId: '(chk.i).wallet_id',
  giftId: '(chk.i).gift_id',
});

/**
 * A group of authorizes' one read, in one statement and in order. First each one's idempotency
 * check (the key's lock, then its stored outcome: idempotency_check, migration 0007; a request
 * without a key counts as holding one with nothing stored) and its intent, locked without
 * waiting when the authorize will run (the same gate as checkKey's preflight): a lock held
 * elsewhere fails the statement with 55P03, and the group's members then run alone. Then the
 * ledger accounts of every wallet an authorize will spend from (its intent authorizable, `spend`:
 * applyWalletBalance), locked in id order, and each locked intent's context as GROUP_CONTEXT
 * reads it. One round trip where there were two; the intents' locks never wait, so taking them
 * in the statement that waits for the wallets' cannot deadlock.
 */
const GROUP_READ = statement(
  'authorize_group_read',
  `with m as (
      select * from unnest($1::text[], $2::uuid[], $3::text[], $4::uuid[], $5::boolean[]) with ordinality as m(lock_key, client_id, key, intent_id, spend, n)
    ), chk as materialized (
      select m.n, m.client_id, m.spend, c.locked, c.fingerprint, c.status_code, c.response_body, c.expires_at, p.i
      from m
      cross join lateral (
        select k.locked, k.fingerprint, k.status_code, k.response_body, k.expires_at
          from idempotency_check(m.lock_key, m.client_id, 'authorize', m.key) k where m.key is not null
        union all
        select true, null::text, null::integer, null::text, null::timestamptz where m.key is null
      ) c
      left join lateral (
        select i from payment_intents i
        where i.client_id = m.client_id and i.id = m.intent_id and c.locked and (c.fingerprint is null or c.expires_at <= $6::timestamptz)
        for update of i nowait
      ) p on true
    ), acc as materialized (
      select a.owner_id, a.id, a.code, a.balance from ledger_accounts a
      where a.owner_type = 'wallet' and a.code not like '%.pending' and a.owner_id in (
        select (chk.i).wallet_id from chk
        where chk.spend and (chk.i).status in ('Promotable', 'RequiresAction') and (chk.i).expires_at > $6::timestamptz)
      order by a.id for no key update
    )
    select chk.locked, chk.fingerprint, chk.status_code, chk.response_body, chk.expires_at,
      case when (chk.i).id is not null then row_to_json(chk.i) end as intent_row,
      ${GROUP_READ_CONTEXT.columns}
    from chk
    ${GROUP_READ_CONTEXT.joins}
    order by chk.n`,
);

export async function readAuthorizeGroup(
  tx: Executor,
  members: { lockKey: string | null; clientId: string; key: string | null; intentId: string; spend: boolean }[],
  now: Date,
): Promise<GroupRead[]> {
  return run<GroupRead>(tx, GROUP_READ, [
    members.map((m) => m.lockKey),
    members.map((m) => m.clientId),
    members.map((m) => m.key),
    members.map((m) => m.intentId),
    members.map((m) => m.spend),
    now,
  ]);
}

/**
 * Authorize's second read for a group, in order, read after the intents are locked. The wallets'
 * ledger accounts are locked first, all of them in id order (two groups locking the same
 * wallets cannot deadlock), and each member gets its wallet's accounts with their balances.
 */
const GROUP_CONTEXT_SELECT = contextSelect({
  intentId: 'm.intent_id',
  clientId: 'm.client_id',
  walletId: 'm.wallet_id',
  giftId: 'm.gift_id',
});

const GROUP_CONTEXT = statement(
  'authorize_group_context',
  `with m as (
      select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[]) with ordinality as m(intent_id, client_id, wallet_id, gift_id, n)
    ), acc as materialized (
      select a.owner_id, a.id, a.code, a.balance from ledger_accounts a
      where a.owner_type = 'wallet' and a.owner_id = any($5::uuid[]) and a.code not like '%.pending' order by a.id for no key update
    )
    select ${GROUP_CONTEXT_SELECT.columns}
    from m
    ${GROUP_CONTEXT_SELECT.joins}
    order by m.n`,
);

async function authorizeGroupContext(
  tx: Executor,
  members: { clientId: string; intent: IntentRow }[],
  lockWallets: string[],
): Promise<AuthorizeContext[]> {
  return run<AuthorizeContext>(tx, GROUP_CONTEXT, [
    members.map((m) => m.intent.id),
    members.map((m) => m.clientId),
    members.map((m) => m.intent.walletId),
    members.map((m) => m.intent.giftId),
    lockWallets,
  ]);
}

export async function findIntent(db: Executor, clientId: string, id: string): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, id)));
  return row;
}

/** PostgreSQL's 55P03: a NOWAIT lock was held by another transaction. */
export function isLockNotAvailable(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === '55P03') return true;
  }
  return false;
}

/** Intents of a group of cancels, locked in id order (the order every group locks intents in); the ones found. */
const LOCK_INTENTS = statement(
  'intent_lock_group',
  `select row_to_json(i) as intent from payment_intents i
   where (i.client_id, i.id) in (select * from unnest($1::uuid[], $2::uuid[]))
   order by i.id
   for update of i`,
);

export async function lockIntents(db: Executor, keys: { clientId: string; intentId: string }[]): Promise<IntentRow[]> {
  const rows = await run<{ intent: Record<string, unknown> }>(db, LOCK_INTENTS, [
    keys.map((k) => k.clientId),
    keys.map((k) => k.intentId),
  ]);
  return rows.map((r) => intentFromJson(r.intent));
}

export async function lockIntent(db: Executor, clientId: string, id: string): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, id)))
    .for('update');
  return row;
}

/** True when the intent is now locked; false when another transaction holds it (SKIP LOCKED). */
export async function lockIntentSkipLocked(db: Executor, id: string): Promise<boolean> {
  const rows = await db
    .select({ id: paymentIntents.id })
    .from(paymentIntents)
    .where(eq(paymentIntents.id, id))
    .for('update', { skipLocked: true });
  return rows.length > 0;
}

export async function updateIntent(db: Executor, id: string, patch: Partial<IntentRow>): Promise<IntentRow> {
  const [row] = await db.update(paymentIntents).set(patch).where(eq(paymentIntents.id, id)).returning();
  return row!;
}

export async function intentsByIds(db: Executor, clientId: string, ids: string[]): Promise<IntentRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), inArray(paymentIntents.id, ids)));
}

export interface IntentFilters {
  initiator?: string;
  status?: string;
  paymentMethod?: string;
}

export const INTENT_SORT_FIELDS = ['createdAt', 'updatedAt', 'amount', 'expiresAt', 'status'] as const;
export type IntentSortField = (typeof INTENT_SORT_FIELDS)[number];

type V = string | Placeholder;

/** Sort expressions; status sorts as read (an intent past expiresAt as Expired), like the filter. */
function sortable(field: IntentSortField, now: Date | Placeholder): SQLWrapper {
  switch (field) {
    case 'createdAt':
      return paymentIntents.createdAt;
    case 'updatedAt':
      return paymentIntents.updatedAt;
    case 'amount':
      return paymentIntents.amount;
    case 'expiresAt':
      return paymentIntents.expiresAt;
    case 'status':
      return sql`case when ${EXPIRING_STATUS} and ${paymentIntents.expiresAt} <= ${now} then 'Expired' else ${paymentIntents.status} end`;
  }
}

/**
 * The filters' conditions. The console filters by the stored status, which it shows, an equality
 * on payment_intents_client_status_idx (the expiry job stores Expired within a second); the API
 * by the status as read: an expiring intent past expiresAt reads Expired.
 */
function intentConditions(
  clientId: V,
  f: { initiator?: V; paymentMethod?: V; status?: string },
  now: Date | Placeholder,
  o: { storedStatus: boolean },
): SQL {
  const conds: SQL[] = [eq(paymentIntents.clientId, clientId)];
  if (f.initiator) conds.push(eq(paymentIntents.initiator, f.initiator));
  if (f.paymentMethod) conds.push(eq(paymentIntents.paymentMethod, f.paymentMethod));
  if (f.status && o.storedStatus) conds.push(eq(paymentIntents.status, f.status));
  else if (f.status === 'Expired')
    conds.push(or(eq(paymentIntents.status, 'Expired'), and(EXPIRING_STATUS, lte(paymentIntents.expiresAt, now)))!);
  else if (f.status && EXPIRING.includes(f.status))
    conds.push(and(eq(paymentIntents.status, f.status), sql`${paymentIntents.expiresAt} > ${now}`)!);
  else if (f.status) conds.push(eq(paymentIntents.status, f.status));
  return and(...conds)!;
}

/**
 * The API's page of intents with its total, one statement per shape: which filters it has, the
 * status (a literal: which conditions it takes depends on it) and the sort (built once,
 * pages asked for together read together: coalesced-pages.ts).
 */
const intentPage = coalescedPages((db: Executor, shape: string) => {
  const { f, sort } = shapeOf(shape);
  const now = ph('now');
  const order = [
    ...sort.map((k) => (k.descending ? desc(sortable(k.field, now)) : asc(sortable(k.field, now)))),
    desc(paymentIntents.id),
  ];
  return countedPage(db, {
    table: paymentIntents,
    where: intentConditions(ph('clientId'), f, now, { storedStatus: false }),
    orderBy: order,
    total: intentTotal(ph('clientId'), f, now, ph('match')),
  });
});

/** An empty page's total, built once per shape as its page is. */
const intentsTotal = totalAlone((shape: string) =>
  intentTotal(ph('clientId'), shapeOf(shape).f, ph('now'), ph('match')),
);

/** A page's shape (JSON): its filters as placeholders (the status a literal) and its sort. */
function shapeOf(shape: string) {
  const { initiator, paymentMethod, status, sort } = JSON.parse(shape) as {
    initiator: boolean;
    paymentMethod: boolean;
    status?: string;
    sort: SortKey<IntentSortField>[];
  };
  return {
    f: {
      initiator: initiator ? ph('initiator') : undefined,
      paymentMethod: paymentMethod ? ph('paymentMethod') : undefined,
      status,
    },
    sort,
  };
}

/** A page of intents and their total; with `totalCap` (the console), newest first, as listPaymentRows's. */
export async function listIntentRows(
  db: Executor,
  clientId: string,
  f: IntentFilters,
  sort: SortKey<IntentSortField>[],
  page: Page,
  now: Date,
  opts: { totalCap?: number; cursor?: Cursor } = {},
) {
  if (opts.totalCap !== undefined) {
    return cappedPage(db, {
      table: paymentIntents,
      clientId,
      where: intentConditions(clientId, f, now, { storedStatus: true }),
      page,
      cursor: opts.cursor,
      totalCap: opts.totalCap,
      rows: (w, orderBy, limit, offset) =>
        db
          .select()
          .from(paymentIntents)
          .where(w)
          .orderBy(...orderBy)
          .limit(limit)
          .offset(offset),
    });
  }
  const shape = JSON.stringify({
    initiator: !!f.initiator,
    paymentMethod: !!f.paymentMethod,
    status: f.status || undefined,
    sort,
  });
  const values = {
    clientId,
    initiator: f.initiator,
    paymentMethod: f.paymentMethod,
    now,
    match: JSON.stringify(matchOf(f)),
    limit: page.limit,
    offset: page.offset,
  };
  const rows = await intentPage(db, shape, values);
  if (rows.length > 0) return { rows: rows.map((r) => r.row), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  return { rows: [], total: await intentsTotal(db, shape, values) };
}

/** The counters' key of a filter: its initiator, payment method and status (JSON, in this order). */
function matchOf(f: IntentFilters): Record<string, string> {
  const match: Record<string, string> = {};
  if (f.initiator) match.initiator = f.initiator;
  if (f.paymentMethod) match.paymentMethod = f.paymentMethod;
  if (f.status) match.status = f.status;
  return match;
}

/**
 * The exact total of the API's intent list from the counters (list 'payment_intents', a key per
 * stored status, initiator and payment method). The status filter reads the status as shown: the
 * intents past expiresAt still stored in an expiring state (the expiry job stores Expired within
 * a second, so few; counted through payment_intents_expiring_idx) move from their stored status
 * to Expired. `match` is the counters' key (matchOf), or a placeholder for it.
 */
export function intentTotal(
  clientId: V,
  f: { initiator?: V; paymentMethod?: V; status?: string },
  now: Date | Placeholder,
  match: Record<string, string> | Placeholder = matchOf(f as IntentFilters),
): SQL {
  const counted = countedTotal(clientId, 'payment_intents', match);
  if (!f.status || (f.status !== 'Expired' && !EXPIRING.includes(f.status))) return counted;
  // One count per stored status, named as a literal: a generic plan then walks
  // payment_intents_expiring_idx from its start to now (the due ones only, not every live one).
  const dueOf = (status: string) => {
    const due = [
      eq(paymentIntents.clientId, clientId),
      sql`${paymentIntents.status} = ${sql.raw(`'${status}'`)}`,
      lte(paymentIntents.expiresAt, now),
    ];
    if (f.initiator) due.push(eq(paymentIntents.initiator, f.initiator));
    if (f.paymentMethod) due.push(eq(paymentIntents.paymentMethod, f.paymentMethod));
    return sql`(select count(*) from ${paymentIntents} where ${and(...due)})`;
  };
  if (f.status !== 'Expired') return sql`(${counted} - ${dueOf(f.status)})`;
  return sql`(${counted} + ${sql.join(EXPIRING.map(dueOf), sql` + `)})`;
}

/** Intents past expiresAt still in an expiring state, locked (SKIP LOCKED) for the sweeper. */
export function lockDueExpiries(db: Executor, now: Date, limit: number) {
  return db
    .select()
    .from(paymentIntents)
    .where(and(EXPIRING_STATUS, lte(paymentIntents.expiresAt, now)))
    .orderBy(asc(paymentIntents.expiresAt))
    .limit(limit)
    .for('update', { skipLocked: true });
}
