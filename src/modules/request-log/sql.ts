// Every query on the request log; reads are scoped by client_id.
import { and, eq, like, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Executor } from '../../db/open.ts';
import { cappedPage, type CappedPage, type Cursor } from '../../db/paged.ts';
import { requestLog } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';
import { boundOf } from '../../db/weeks.ts';
import { isoTime } from '../../timestamps.ts';

export type RequestLogRow = typeof requestLog.$inferSelect;

/** Lone surrogates: valid in JSON text, refused by PostgreSQL's json and jsonb (and so by the insert). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A string PostgreSQL's text, json and jsonb all hold: U+0000 removed, lone surrogates as U+FFFD. */
export function storable(s: string): string {
  return (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s).replace(LONE_SURROGATE, '\ufffd');
}

const storableOrNull = (s: string | null) => (s === null ? null : storable(s));

/**
 * One row as the JSON object json_populate_recordset reads (the table's column names), made
 * when the request is answered: the buffer then holds one flat string per request until its
 * flush instead of an object, a Date and their strings, which every garbage collection in
 * between copied (and promoted after the second). Its strings are made storable: one lone
 * surrogate (a body cut inside a character pair, a key sent as "\ud800") made the whole
 * batch's document invalid json.
 */
export function requestRowJson(r: RequestLogRow): string {
  return JSON.stringify({
    id: r.id,
    client_id: r.clientId,
    request_id: storable(r.requestId),
    method: storable(r.method),
    route: storable(r.route),
    path: storable(r.path),
    status: r.status,
    duration_ms: r.durationMs,
    idempotency_key: storableOrNull(r.idempotencyKey),
    body: storableOrNull(r.body),
    created_at: isoTime(r.createdAt),
  });
}

export function insertRequestRows(db: Executor, rows: RequestLogRow[]): Promise<void> {
  return insertRequestJson(db, rows.map(requestRowJson));
}

/**
 * Writes rows made by requestRowJson. They travel as one JSON document read with the table's
 * own row type: building a thousand-row insert with a parameter per value held the event loop for
 * tens of milliseconds each second, which showed in every route's p99.
 * json_populate_recordset costs PostgreSQL less than extracting and casting each field of json_array_elements.
 */
export async function insertRequestJson(db: Executor, rows: string[]): Promise<void> {
  if (rows.length === 0) return;
  const doc = `[${rows.join(',')}]`;
  await db.execute(sql`insert into request_log (id, client_id, request_id, method, route, path, status, duration_ms, idempotency_key, body, created_at)
    select id, client_id, request_id, method, route, path, status, duration_ms, idempotency_key, body, created_at
    from json_populate_recordset(null::request_log, ${doc}::json)`);
}

/**
 * Deletes up to `batch` of the oldest rows of the default partition made before `before` (by
 * their ids' time) and counts them in PostgreSQL. The weeks past the retention are dropped whole
 * (retention.ts); the default partition holds only rows written while their week did not exist.
 */
export async function purgeDefaultRequestRows(db: Executor, before: Date, batch: number): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`with gone as (
        delete from request_log_default where id in (select id from request_log_default where id < ${boundOf(before)}::uuid order by id limit ${batch})
        returning 1)
      select count(*)::int as n from gone`),
  );
  return rows[0]?.n ?? 0;
}

export interface RequestLogFilters {
  /** An exact status (404) or a class (4xx). */
  status?: string;
  /** Paths starting with this. */
  path?: string;
  method?: string;
}

/**
 * The console's page of requests: newest first, the total counted up to `totalCap`, by cursor or
 * offset (cappedPage). Each filter is a range of one index: a status class reads
 * request_log_client_class_idx (an exact status its class's range), a path prefix
 * request_log_client_path_idx, a method request_log_client_method_idx.
 */
export function listRequestRows(
  db: Executor,
  clientId: string,
  f: RequestLogFilters,
  page: Page,
  o: { totalCap: number; cursor?: Cursor },
): Promise<CappedPage<RequestLogRow>> {
  const conds: SQL[] = [eq(requestLog.clientId, clientId)];
  const statusClass = sql`(${requestLog.status} / 100)`;
  if (f.status && /^[1-5]xx$/i.test(f.status)) conds.push(sql`${statusClass} = ${Number(f.status[0])}`);
  else if (f.status && /^\d{3}$/.test(f.status))
    conds.push(sql`${statusClass} = ${Math.floor(Number(f.status) / 100)}`, eq(requestLog.status, Number(f.status)));
  if (f.path) conds.push(like(requestLog.path, `${f.path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  if (f.method) conds.push(eq(requestLog.method, f.method.toUpperCase()));
  return cappedPage(db, {
    table: requestLog,
    clientId,
    where: and(...conds),
    page,
    ...o,
    rows: (w, orderBy, limit, offset) =>
      db
        .select()
        .from(requestLog)
        .where(w)
        .orderBy(...orderBy)
        .limit(limit)
        .offset(offset),
  });
}

export async function findRequestRow(db: Executor, clientId: string, id: string): Promise<RequestLogRow | undefined> {
  const [row] = await db
    .select()
    .from(requestLog)
    .where(and(eq(requestLog.clientId, clientId), eq(requestLog.id, id)));
  return row;
}
