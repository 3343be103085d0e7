// Every query on events, deliveries and attempts.
import { and, asc, desc, eq, getTableColumns, gte, isNull, lt, ne, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { ph } from '../../db/built-once.ts';
import { coalescedPages } from '../../db/coalesced-pages.ts';
import { uuidv7 } from '../../ids.ts';
import type { WritePart } from '../../db/batch.ts';
import { rowsOf, uuidArray, type Executor } from '../../db/open.ts';
import { countedPage, countedTotal, emptyPageCountsNothing, isDeep, totalAlone } from '../../db/list-counts.ts';
import { cappedPage, type Cursor } from '../../db/paged.ts';
import { insertPart } from '../../db/rows.ts';
import { deliveryAttempts, eventDeliveries, eventDeliveryQueue, events, webhooks } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type EventRow = typeof events.$inferSelect;
export type DeliveryRow = typeof eventDeliveries.$inferSelect;
export type AttemptRow = typeof deliveryAttempts.$inferSelect;
type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'canceled';
/** An event's state summarises its deliveries. */
export type EventDeliveryState = 'pending' | 'succeeded' | 'failed' | 'none';

/** The event row, as a part of a write batch. */
export function eventInsertPart(row: EventRow): WritePart {
  return insertPart(events, row);
}

/**
 * A delivery row per enabled webhook of the client subscribed to the topic (or `*`), chosen in
 * SQL, so writing an event never needs a read of the webhooks first. With `webhookId`, to that
 * webhook only (test sends). Delivery ids stay time-ordered like every other id: a fresh
 * uuidv7 with its last two bytes replaced by the row's number.
 *
 * Two parts: the deliveries, and their rows in the queue the workers claim from
 * (event_delivery_queue, migration 0027). Parts of one write batch cannot read each other's
 * rows, so each chooses the same webhooks and makes the same ids from the same parameters.
 */
export function deliveriesInsertParts(
  e: { id: string; clientId: string; topic: string; createdAt: Date },
  webhookId?: string,
): WritePart[] {
  const params = [e.clientId, e.id, webhookId ?? e.topic, e.createdAt, uuidv7()];
  if (webhookId)
    return [
      { name: TO_ONE.deliveries.name, text: TO_ONE.deliveries.text, params },
      { name: TO_ONE.queue.name, text: TO_ONE.queue.text, params },
    ];
  const item = { client_id: e.clientId, event_id: e.id, topic: e.topic, created_at: e.createdAt, base: params[4] };
  return [
    {
      name: FAN_OUT.deliveries.name,
      text: FAN_OUT.deliveries.text,
      params,
      merge: { key: 'event_deliveries_fan_out', item, combine: combineDeliveries },
    },
    {
      name: FAN_OUT.queue.name,
      text: FAN_OUT.queue.text,
      params,
      merge: { key: 'event_queue_fan_out', item, combine: combineQueue },
    },
  ];
}

/**
 * The statements of deliveriesInsertParts, made once: every event written (one per payment,
 * deposit...) used to build their texts and two closures of its own.
 */
function oneEventStatements(webhookId: boolean): Record<'deliveries' | 'queue', { name: string; text: string }> {
  const id = `encode(overlay(uuid_send($5::uuid) placing int2send((row_number() over (order by w.id))::int2) from 15 for 2), 'hex')::uuid`;
  const which = webhookId
    ? 'w.id = $3::uuid'
    : `w.enabled and w.deleted_at is null and w.url <> '' and (w.topics ? '*' or w.topics ? $3::text)`;
  const from = `from webhooks w where w.client_id = $1::uuid and ${which}`;
  const name = webhookId ? 'to_one' : 'fan_out';
  return {
    deliveries: {
      name: `event_deliveries_${name}`,
      text: `insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, next_attempt_at, created_at, updated_at)
        select ${id}, w.client_id, $2::uuid, w.id, '${webhookId ? 'test' : 'event'}', 'pending', $4::timestamptz, $4::timestamptz, $4::timestamptz ${from}`,
    },
    queue: {
      name: `event_queue_${name}`,
      text: `insert into event_delivery_queue (id, event_id, client_id, webhook_id, next_attempt_at, created_at)
        select ${id}, $2::uuid, w.client_id, w.id, $4::timestamptz, $4::timestamptz ${from}`,
    },
  };
}
const FAN_OUT = oneEventStatements(false);
const TO_ONE = oneEventStatements(true);

/** The fan-out of many events (a group commit) in one statement: the deliveries, then their queue rows. */
const MANY_ID = `encode(overlay(uuid_send(e.base) placing int2send((row_number() over (partition by e.event_id order by w.id))::int2) from 15 for 2), 'hex')::uuid`;
const MANY_FROM = `from json_to_recordset($1::json) as e(client_id uuid, event_id uuid, topic text, created_at timestamptz, base uuid)
  join webhooks w on w.client_id = e.client_id and w.enabled and w.deleted_at is null and w.url <> '' and (w.topics ? '*' or w.topics ? e.topic)`;
const FAN_OUT_MANY = `insert into event_deliveries (id, client_id, event_id, webhook_id, trigger, state, next_attempt_at, created_at, updated_at)
  select ${MANY_ID}, w.client_id, e.event_id, w.id, 'event', 'pending', e.created_at, e.created_at, e.created_at ${MANY_FROM}`;
const QUEUE_MANY = `insert into event_delivery_queue (id, event_id, client_id, webhook_id, next_attempt_at, created_at)
  select ${MANY_ID}, e.event_id, w.client_id, w.id, e.created_at, e.created_at ${MANY_FROM}`;

const combineDeliveries = (items: unknown[]): WritePart => ({
  name: 'event_deliveries_fan_out_many',
  text: FAN_OUT_MANY,
  params: [JSON.stringify(items)],
});
const combineQueue = (items: unknown[]): WritePart => ({
  name: 'event_queue_fan_out_many',
  text: QUEUE_MANY,
  params: [JSON.stringify(items)],
});

/** Writes pending deliveries (replays), each with its row in the queue. */
export async function insertDeliveries(
  db: Executor,
  rows: (typeof eventDeliveries.$inferInsert & { state: 'pending' })[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.insert(eventDeliveries).values(rows);
  await db.insert(eventDeliveryQueue).values(
    rows.map((r) => ({
      id: r.id,
      eventId: r.eventId,
      clientId: r.clientId,
      webhookId: r.webhookId,
      nextAttemptAt: r.nextAttemptAt,
      createdAt: r.createdAt,
    })),
  );
}

/** The webhooks that receive events: enabled, not deleted, with a url. */
export async function enabledWebhooks(db: Executor, clientId: string): Promise<{ id: string; topics: string[] }[]> {
  return db
    .select({ id: webhooks.id, topics: webhooks.topics })
    .from(webhooks)
    .where(
      and(
        eq(webhooks.clientId, clientId),
        eq(webhooks.enabled, true),
        isNull(webhooks.deletedAt),
        ne(webhooks.url, ''),
      ),
    );
}

/**
 * SQL for an event's delivery state, from its deliveries: pending over failed over succeeded,
 * `none` without any of those. One read of the event's deliveries (a subplan per row, which on
 * the partitioned table prunes to the event's week each time), not one per state. The event's
 * id is named in full (`"events"."id"`, `"page"."id"`): Drizzle renders a column of a
 * single-table query unqualified, and a bare "id" inside the subquery would mean the delivery's
 * own id.
 */
const stateOfEvent = (eventId: SQL) => sql<EventDeliveryState>`(
  select case
    when bool_or(d.state = 'pending') then 'pending'
    when bool_or(d.state = 'failed') then 'failed'
    when bool_or(d.state = 'succeeded') then 'succeeded'
    else 'none'
  end
  from event_deliveries d where d.event_id = ${eventId})`;
const stateOf = stateOfEvent(sql`"events"."id"`);

/**
 * Events in a delivery state (stateOf's: pending over failed over succeeded; none without any of
 * those), as conditions that read indexes: pending and failed events are found from the
 * merchant's deliveries in that state (the queue's index event_delivery_queue_client_due_idx
 * and the partial index event_deliveries_client_failed_idx: few among many, a cost of their
 * number), a succeeded or none event by one probe of event_deliveries_event_idx per event read
 * (the states most events are in: a page fills within its first rows).
 */
function hasDeliveryState(clientId: string | Placeholder, state: EventDeliveryState): SQL {
  const delivery = (states: string) =>
    sql.raw(`select 1 from event_deliveries d where d.event_id = "events"."id" and d.state in (${states})`);
  switch (state) {
    // An array, not IN (…): the events are then read by id from the deliveries' list, at a cost
    // of the deliveries in that state, where the planner would otherwise read the newest events
    // until enough match (a delivery fails after three days of retries: every event since then
    // first).
    case 'pending':
      return sql`"events"."id" = any(array(select q.event_id from event_delivery_queue q where q.client_id = ${clientId}))`;
    case 'failed':
      return sql`"events"."id" = any(array(select d.event_id from event_deliveries d where d.client_id = ${clientId} and d.state = 'failed')) and not exists (${delivery("'pending'")})`;
    case 'succeeded':
      return sql`exists (${delivery("'succeeded'")}) and not exists (${delivery("'pending', 'failed'")})`;
    case 'none':
      return sql`not exists (${delivery("'pending', 'failed', 'succeeded'")})`;
  }
}

/**
 * How many of the merchant's events are pending (or failed), counted up to `cap` from their
 * deliveries. A failed event with a delivery pending too (a replay) is pending: those are left
 * out by the merchant's rows of the queue, which holds every pending delivery and little else.
 * (event_deliveries has no index on its pending rows since the queue took them over, so asking
 * it whether each failed event has one read every week's deliveries.)
 */
async function countByDeliveryState(
  db: Executor,
  clientId: string,
  state: 'pending' | 'failed',
  cap: number,
): Promise<{ total: number; capped: boolean }> {
  const ofState =
    state === 'pending'
      ? sql`select distinct q.event_id from event_delivery_queue q where q.client_id = ${clientId}`
      : sql`select distinct d.event_id from event_deliveries d where d.client_id = ${clientId} and d.state = 'failed'
          and not exists (select 1 from event_delivery_queue q where q.client_id = ${clientId} and q.event_id = d.event_id)`;
  const [c] = rowsOf<{ n: number | string }>(
    await db.execute(sql`select count(*) as n from (${ofState} limit ${cap + 1}) x`),
  );
  const n = Number(c?.n ?? 0);
  return n > cap ? { total: cap, capped: true } : { total: n, capped: false };
}

export interface EventFilters {
  topic?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  deliveryState?: EventDeliveryState;
}

type V = string | Placeholder;

function eventConditions(
  clientId: V,
  f: {
    topic?: V;
    createdAfter?: Date | Placeholder;
    createdBefore?: Date | Placeholder;
    deliveryState?: EventDeliveryState;
  },
): SQL {
  const conds: SQL[] = [eq(events.clientId, clientId)];
  if (f.topic) conds.push(eq(events.topic, f.topic));
  if (f.createdAfter) conds.push(gte(events.createdAt, f.createdAfter));
  if (f.createdBefore) conds.push(lt(events.createdAt, f.createdBefore));
  if (f.deliveryState) conds.push(hasDeliveryState(clientId, f.deliveryState));
  return and(...conds)!;
}

/**
 * The API's page of events with their delivery states and total. No filter or a topic: the
 * counters (list 'events', a key per topic). A time range or a delivery state is counted over
 * the rows it matches (docs/internals.md#statements-and-plans). One statement per shape: which
 * filters it has, the delivery state a literal (built once, pages asked for together read together: coalesced-pages.ts).
 */
const eventColumns = getTableColumns(events);

const eventPage = coalescedPages((db: Executor, shape: string) => {
  const has = JSON.parse(shape) as {
    topic: boolean;
    createdAfter: boolean;
    createdBefore: boolean;
    deliveryState?: EventDeliveryState;
    deep?: boolean;
  };
  const where = eventConditions(ph('clientId'), {
    topic: has.topic ? ph('topic') : undefined,
    createdAfter: has.createdAfter ? ph('createdAfter') : undefined,
    createdBefore: has.createdBefore ? ph('createdBefore') : undefined,
    deliveryState: has.deliveryState,
  });
  const order = [desc(events.createdAt), desc(events.id)];
  // The page first, then its delivery states: in the same select, a delivery state would be
  // read for every row the offset skips too (PostgreSQL projects below the LIMIT).
  const state = stateOfEvent(sql`"page"."id"`);
  if (!has.createdAfter && !has.createdBefore && !has.deliveryState) {
    const total = countedTotal(ph('clientId'), 'events', ph('match'));
    return countedPage(db, { table: events, where, orderBy: order, total, also: { state }, deep: has.deep === true });
  }
  const page = db
    .select({ ...eventColumns, total: sql<number>`count(*) over ()`.mapWith(Number).as('total') })
    .from(events)
    .where(where)
    .orderBy(...order)
    .limit(ph('limit'))
    .offset(ph('offset'))
    .as('page');
  const row = Object.fromEntries(Object.keys(eventColumns).map((k) => [k, page[k as keyof typeof eventColumns]])) as {
    [K in keyof typeof eventColumns]: (typeof page)[K];
  };
  return db.select({ row, state, total: page.total }).from(page).orderBy(desc(page.createdAt), desc(page.id));
});

const eventsTotal = totalAlone((_: '') => countedTotal(ph('clientId'), 'events', ph('match')));

/** A page of events and their total; with `totalCap` (the console), as listPaymentRows's. */
export async function listEventRows(
  db: Executor,
  clientId: string,
  f: EventFilters,
  page: Page,
  opts: { totalCap?: number; cursor?: Cursor } = {},
) {
  const where = eventConditions(clientId, f);
  if (opts.totalCap !== undefined) {
    return cappedPage(db, {
      table: events,
      clientId,
      where,
      page,
      cursor: opts.cursor,
      totalCap: opts.totalCap,
      rows: async (w, orderBy, limit, offset) =>
        (
          await db
            .select({ event: events, state: stateOf })
            .from(events)
            .where(w)
            .orderBy(...orderBy)
            .limit(limit)
            .offset(offset)
        ).map((r) => ({ ...r.event, deliveryState: r.state })),
      // Pending or failed alone: counted from the deliveries' partial index, not through the events.
      ...((f.deliveryState === 'pending' || f.deliveryState === 'failed') &&
      !f.topic &&
      !f.createdAfter &&
      !f.createdBefore
        ? {
            count: (_w: SQL | undefined, cap: number) =>
              countByDeliveryState(db, clientId, f.deliveryState as 'pending' | 'failed', cap),
          }
        : {}),
    });
  }
  const counts = !f.createdAfter && !f.createdBefore && !f.deliveryState;
  const match: Record<string, string> = f.topic ? { topic: f.topic } : {};
  // A deep page of all the events is read by its ids first (events_client_created_idx holds the
  // ids; events_client_topic_idx does not); only counted pages have that form.
  const deep = counts && !f.topic && isDeep(page);
  const shape = JSON.stringify({
    topic: !!f.topic,
    createdAfter: !!f.createdAfter,
    createdBefore: !!f.createdBefore,
    deliveryState: f.deliveryState,
    deep: deep || undefined,
  });
  const rows = await eventPage(db, shape, {
    clientId,
    ...f,
    match: JSON.stringify(match),
    limit: page.limit,
    offset: page.offset,
  });
  if (rows.length > 0)
    return { rows: rows.map((r) => ({ ...r.row, deliveryState: r.state })), total: rows[0]!.total, capped: false };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0, capped: false };
  if (counts)
    return { rows: [], total: await eventsTotal(db, '', { clientId, match: JSON.stringify(match) }), capped: false };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(events)
    .where(where);
  return { rows: [], total: c?.n ?? 0, capped: false };
}

export async function findEvent(
  db: Executor,
  clientId: string,
  id: string,
): Promise<(EventRow & { deliveryState: EventDeliveryState }) | undefined> {
  const [row] = await db
    .select({ event: events, state: stateOf })
    .from(events)
    .where(and(eq(events.clientId, clientId), eq(events.id, id)));
  return row && { ...row.event, deliveryState: row.state };
}

/**
 * Locks an event against retention for the caller's transaction (a replay adding deliveries):
 * its week cannot be dropped (a row lock holds the partition) and the job's delete from the
 * default partition passes it over. False when there is no such event.
 */
export async function lockEventForReplay(db: Executor, clientId: string, id: string): Promise<boolean> {
  const rows = rowsOf(
    await db.execute(sql`select 1 from events where client_id = ${clientId} and id = ${id} for key share`),
  );
  return rows.length > 0;
}

export async function deliveriesOf(
  db: Executor,
  eventId: string,
): Promise<{ deliveries: DeliveryRow[]; attempts: AttemptRow[] }> {
  const [deliveries, attempts] = await Promise.all([
    db
      .select()
      .from(eventDeliveries)
      .where(eq(eventDeliveries.eventId, eventId))
      .orderBy(asc(eventDeliveries.createdAt), asc(eventDeliveries.id)),
    db
      .select()
      .from(deliveryAttempts)
      .where(eq(deliveryAttempts.eventId, eventId))
      .orderBy(asc(deliveryAttempts.startedAt), asc(deliveryAttempts.attempt)),
  ]);
  return { deliveries, attempts };
}

export interface ClaimedDelivery {
  id: string;
  eventId: string;
  webhookId: string;
  clientId: string;
  attempt: number;
  /** The claim's lease: with the attempt number, it names this claim (see recordAttempts). */
  leaseUntil: Date;
  body: string;
  url: string;
  secretSealed: string;
  webhookActive: boolean;
}

export interface ClaimOptions {
  now: Date;
  leaseUntil: Date;
  limit: number;
  /**
   * Webhooks this worker holds to a number of further attempts (webhook id → room, 0 for
   * none): receivers that are failing here get one attempt at a time, and those whose host
   * is being probed none.
   */
  room: Record<string, number>;
  /** Room of any other webhook within one claim. */
  share: number;
  /** Attempts this worker has in flight, by merchant (client id). */
  busy: Record<string, number>;
  /** The most attempts of one merchant this worker may have in flight. */
  merchantCap: number;
}

/**
 * Claims up to `limit` due deliveries for one attempt each: due and not leased by a live
 * worker, locked with SKIP LOCKED so concurrent workers take different rows, then leased and
 * their attempt number taken in the same statement, all in the queue of pending deliveries
 * (event_delivery_queue, migration 0027): a claim writes no row of event_deliveries. A worker
 * that dies keeps its lease until it runs out; then the delivery is due again.
 *
 * Fair between merchants: each merchant's oldest due deliveries come from its own part of the
 * index (due_event_deliveries_per_client, migration 0013), at most its room (the cap less its
 * attempts in flight here), and the claim takes them in turns: every merchant's next delivery
 * before any merchant's one after, merchants with fewer attempts in flight first. So neither
 * one merchant's backlog nor its hanging receivers can take the slots another merchant's
 * deliveries need. Within a merchant each webhook gets at most its room; webhooks with none
 * are skipped before the limit applies.
 */
export async function claimDueDeliveries(db: Executor, o: ClaimOptions): Promise<ClaimedDelivery[]> {
  const due = sql`q.next_attempt_at <= ${o.now} and (q.lease_until is null or q.lease_until <= ${o.now})`;
  // Webhooks with no room.
  const full = uuidArray(Object.keys(o.room).filter((id) => o.room[id]! <= 0));
  const res = await db.execute(sql`
    -- Planned for its values at each execution: it opens with this comment, so it is not named and
    -- prepared (nameRepeatedStatements). A plan cached on one connection was kept while the tables
    -- grew: made while they were empty, it read the leased deliveries and their events by
    -- sequential scans joined by hash, 0.25 s per claim growing to 1 s until an ANALYZE
    -- (docs/operations.md), while deliveries fell behind the events.
    with room as (
      select key::uuid as webhook_id, value::int as room from jsonb_each_text(${JSON.stringify(o.room)}::jsonb)
    ), busy as (
      select key::uuid as client_id, value::int as n from jsonb_each_text(${JSON.stringify(o.busy)}::jsonb)
    ), candidates as (
      select * from due_event_deliveries_per_client(${o.now}, ${full}::uuid[], ${JSON.stringify(o.busy)}::jsonb, ${o.merchantCap})
    ), allowed as (
      select c.id, c.event_id, c.client_id, c.next_attempt_at
      from (select *, row_number() over (partition by webhook_id order by next_attempt_at) as n from candidates) c
      left join room r on r.webhook_id = c.webhook_id
      where c.n <= coalesce(r.room, ${o.share})
    ), ranked as (
      select a.id, a.event_id, a.next_attempt_at
      from (select *, row_number() over (partition by client_id order by next_attempt_at) as n from allowed) a
      left join busy b on b.client_id = a.client_id
      order by coalesce(b.n, 0) + a.n, a.next_attempt_at
      limit ${o.limit}
    ), locked as (
      -- One row at a time by its key: a join let the planner read every pending delivery into a hash.
      select l.id from ranked r cross join lateral (
        select q.id from event_delivery_queue q
        where q.id = r.id and ${due}
        for update skip locked
      ) l
    ), claimed as (
      update event_delivery_queue q
      set lease_until = ${o.leaseUntil}, attempt_count = q.attempt_count + 1
      from locked where q.id = locked.id
      returning q.id, q.event_id, q.webhook_id, q.client_id, q.attempt_count, q.next_attempt_at
    )
    select c.id, c.event_id, c.webhook_id, c.client_id, c.attempt_count, e.body, w.url, w.secret_sealed,
           (w.enabled and w.deleted_at is null) as webhook_active
    from claimed c join events e on e.id = c.event_id join webhooks w on w.id = c.webhook_id
    order by c.next_attempt_at`);
  return rowsOf<Record<string, unknown>>(res).map((r) => ({
    id: String(r.id),
    eventId: String(r.event_id),
    webhookId: String(r.webhook_id),
    clientId: String(r.client_id),
    attempt: Number(r.attempt_count),
    leaseUntil: o.leaseUntil,
    body: String(r.body),
    url: String(r.url),
    secretSealed: String(r.secret_sealed),
    webhookActive: r.webhook_active === true,
  }));
}

/**
 * Gives back claimed deliveries without an attempt (their host's breaker is open, or its probe
 * is out): the lease and the attempt number taken by the claim are returned, and a delivery
 * with `until` is not due before then (shown so on the delivery too).
 */
export async function releaseDeliveries(
  db: Executor,
  released: { id: string; eventId: string; attempt: number; leaseUntil: Date; until?: Date }[],
  now: Date,
): Promise<void> {
  if (released.length === 0) return;
  const rows = released.map((r) => ({
    id: r.id,
    attempt: r.attempt,
    lease_until: r.leaseUntil.toISOString(),
    until: r.until?.toISOString() ?? null,
  }));
  const res = await db.execute(sql`
    update event_delivery_queue q
    set lease_until = null, attempt_count = q.attempt_count - 1,
        next_attempt_at = greatest(q.next_attempt_at, coalesce(r.until, q.next_attempt_at))
    from json_to_recordset(${JSON.stringify(rows)}::json) as r(id uuid, attempt int, lease_until timestamptz, until timestamptz)
    where q.id = r.id and q.attempt_count = r.attempt and q.lease_until = r.lease_until
    returning q.id, q.event_id, q.next_attempt_at, r.until is not null as held`);
  await showNextAttempts(
    db,
    rowsOf<Rescheduled & { held: boolean }>(res).filter((r) => r.held),
    now,
  );
}

/**
 * Holds the pending deliveries of these webhooks until `until` (their host's breaker opened):
 * due sooner, they are rescheduled to then; none is failed or attempted meanwhile. One with an
 * attempt in flight keeps the later time when that attempt is recorded (recordAttempt).
 */
export async function holdDeliveries(db: Executor, o: { webhookIds: string[]; until: Date; now: Date }): Promise<void> {
  const res = await db.execute(sql`
    update event_delivery_queue q
    set next_attempt_at = ${o.until}
    where q.webhook_id = any(${uuidArray(o.webhookIds)}::uuid[]) and q.next_attempt_at < ${o.until}
    returning q.id, q.event_id, q.next_attempt_at`);
  await showNextAttempts(db, rowsOf<Rescheduled>(res), o.now);
}

interface Rescheduled {
  id: string;
  event_id: string;
  next_attempt_at: Date | string;
}

/**
 * Copies the queue's new next attempt times to the deliveries, which the API shows: by primary
 * key, with the events' ids as an array so that only their weeks' partitions are read. Never
 * earlier than shown: an attempt recorded since (a later retry) stands.
 */
async function showNextAttempts(db: Executor, rows: Rescheduled[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  const json = JSON.stringify(
    rows.map((r) => ({ id: r.id, event_id: r.event_id, next_attempt_at: new Date(r.next_attempt_at).toISOString() })),
  );
  await db.execute(sql`
    update event_deliveries d set next_attempt_at = greatest(d.next_attempt_at, m.next_attempt_at), updated_at = ${now}
    from json_to_recordset(${json}::json) as m(id uuid, event_id uuid, next_attempt_at timestamptz)
    where d.event_id = any(${uuidArray(rows.map((r) => r.event_id))}::uuid[]) and d.event_id = m.event_id and d.id = m.id and d.state = 'pending'`);
}

export interface AttemptOutcome {
  deliveryId: string;
  eventId: string;
  clientId: string;
  attempt: number;
  /** The lease of the claim that made the attempt. */
  leaseUntil: Date;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The delivery's new state, and when to try again if still pending. */
  state: DeliveryState;
  nextAttemptAt: Date | null;
  now: Date;
}

/**
 * Records attempts and moves their deliveries on: two statements for any number of attempts,
 * to run in one transaction. Only the worker holding an attempt may move its delivery (a late
 * worker whose lease ran out only logs its attempt): the queue's row must still carry the
 * attempt's number and its claim's lease. The number alone would not do: a later claim that is
 * released (its host's breaker is open) gives the number back, and clears the lease. A delivery
 * that ends leaves the queue; one to be tried again stays there, unleased. The next attempt is
 * never brought forward: a hold made while the attempt was in flight (holdDeliveries) stands.
 * The deliveries are found by their primary key, with their events' ids also as an array, so
 * each partition is probed only for its own events.
 */
export async function recordAttempts(db: Executor, attempts: { outcome: AttemptOutcome; id: string }[]): Promise<void> {
  if (attempts.length === 0) return;
  const rows = attempts.map(({ outcome: o, id }) => ({
    id,
    client_id: o.clientId,
    delivery_id: o.deliveryId,
    event_id: o.eventId,
    attempt: o.attempt,
    lease_until: o.leaseUntil.toISOString(),
    started_at: o.startedAt.toISOString(),
    duration_ms: o.durationMs,
    status_code: o.statusCode,
    error: o.error,
    response_excerpt: o.responseExcerpt,
    state: o.state,
    next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
    now: o.now.toISOString(),
  }));
  const json = JSON.stringify(rows);
  const eventIds = uuidArray(attempts.map((a) => a.outcome.eventId));
  await db.execute(sql`
    insert into delivery_attempts (id, client_id, delivery_id, event_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
    select x.id, x.client_id, x.delivery_id, x.event_id, x.attempt, x.started_at, x.duration_ms, x.status_code, x.error, x.response_excerpt
    from json_to_recordset(${json}::json) as x(id uuid, client_id uuid, delivery_id uuid, event_id uuid, attempt int, started_at timestamptz,
      duration_ms int, status_code int, error text, response_excerpt text)`);
  await db.execute(sql`
    with x as (
      select * from json_to_recordset(${json}::json) as x(delivery_id uuid, event_id uuid, attempt int, lease_until timestamptz, state text,
        status_code int, error text, next_attempt_at timestamptz, now timestamptz)
    ), ended as (
      delete from event_delivery_queue q using x
      where q.id = x.delivery_id and q.attempt_count = x.attempt and q.lease_until = x.lease_until and x.state <> 'pending'
      returning q.id, q.attempt_count, q.next_attempt_at
    ), again as (
      update event_delivery_queue q
      set lease_until = null, next_attempt_at = greatest(q.next_attempt_at, coalesce(x.next_attempt_at, q.next_attempt_at))
      from x where q.id = x.delivery_id and q.attempt_count = x.attempt and q.lease_until = x.lease_until and x.state = 'pending'
      returning q.id, q.attempt_count, q.next_attempt_at
    ), moved as (
      select * from ended union all select * from again
    )
    update event_deliveries d
    set state = x.state, attempt_count = x.attempt, last_status_code = x.status_code, last_error = x.error, updated_at = x.now,
        next_attempt_at = m.next_attempt_at,
        completed_at = case when x.state = 'pending' then d.completed_at else x.now end
    from moved m join x on x.delivery_id = m.id and x.attempt = m.attempt_count
    where d.event_id = any(${eventIds}::uuid[]) and d.event_id = x.event_id and d.id = m.id and d.state = 'pending'`);
}

/** Cancels a webhook's pending deliveries (it was deleted): they leave the queue. */
export async function cancelPendingDeliveries(db: Executor, webhookId: string, now: Date): Promise<void> {
  const canceled = rowsOf<{ id: string; event_id: string }>(
    await db.execute(
      sql`delete from event_delivery_queue q where q.webhook_id = ${webhookId} returning q.id, q.event_id`,
    ),
  );
  if (canceled.length === 0) return;
  await db.execute(sql`
    update event_deliveries d set state = 'canceled', completed_at = ${now}, updated_at = ${now}
    from json_to_recordset(${JSON.stringify(canceled)}::json) as c(id uuid, event_id uuid)
    where d.event_id = any(${uuidArray(canceled.map((c) => c.event_id))}::uuid[]) and d.event_id = c.event_id and d.id = c.id and d.state = 'pending'`);
}
