// Every query on the request log; reads are scoped by client_id.
import { and, desc, eq, gte, like, lt, lte, type SQL } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { pagedRows } from '../../db/paged.ts';
import { requestLog } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type RequestLogRow = typeof requestLog.$inferSelect;

export async function insertRequestRows(db: Executor, rows: RequestLogRow[]): Promise<void> {
  if (rows.length > 0) await db.insert(requestLog).values(rows);
}

export async function purgeRequestRows(db: Executor, before: Date): Promise<number> {
  const deleted = await db.delete(requestLog).where(lt(requestLog.createdAt, before)).returning({ id: requestLog.id });
  return deleted.length;
}

export interface RequestLogFilters {
  /** An exact status (404) or a class (4xx). */
  status?: string;
  /** Paths starting with this. */
  path?: string;
  method?: string;
}

export async function listRequestRows(db: Executor, clientId: string, f: RequestLogFilters, page: Page) {
  const conds: SQL[] = [eq(requestLog.clientId, clientId)];
  if (f.status && /^[1-5]xx$/i.test(f.status)) {
    const base = Number(f.status[0]) * 100;
    conds.push(gte(requestLog.status, base), lte(requestLog.status, base + 99));
  } else if (f.status && /^\d{3}$/.test(f.status)) conds.push(eq(requestLog.status, Number(f.status)));
  if (f.path) conds.push(like(requestLog.path, `${f.path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  if (f.method) conds.push(eq(requestLog.method, f.method.toUpperCase()));
  return pagedRows(db, requestLog, and(...conds), [desc(requestLog.createdAt), desc(requestLog.id)], page);
}

export async function findRequestRow(db: Executor, clientId: string, id: string): Promise<RequestLogRow | undefined> {
  const [row] = await db.select().from(requestLog).where(and(eq(requestLog.clientId, clientId), eq(requestLog.id, id)));
  return row;
}

