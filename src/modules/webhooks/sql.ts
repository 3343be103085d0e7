// Every query on webhooks, scoped by client_id; deleted webhooks are invisible.
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { emptyPageCountsNothing } from '../../db/list-counts.ts';
import type { Executor } from '../../db/open.ts';
import { clients, webhooks } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type WebhookRow = typeof webhooks.$inferSelect;

export async function insertWebhook(db: Executor, row: typeof webhooks.$inferInsert): Promise<WebhookRow> {
  const [out] = await db.insert(webhooks).values(row).returning();
  return out!;
}

/**
 * The merchant's webhook count (deleted ones aside), with its client row locked until the
 * transaction ends, so concurrent creations count one after the other. The lock (FOR NO KEY
 * UPDATE) leaves the rows that reference the client free to be written meanwhile.
 */
export async function countWebhooksLocked(tx: Executor, clientId: string): Promise<number> {
  await tx.select({ id: clients.id }).from(clients).where(eq(clients.id, clientId)).for('no key update');
  const [c] = await tx
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(webhooks)
    .where(and(eq(webhooks.clientId, clientId), isNull(webhooks.deletedAt)));
  return c?.n ?? 0;
}

export async function findWebhook(db: Executor, clientId: string, id: string): Promise<WebhookRow | undefined> {
  const [row] = await db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.clientId, clientId), eq(webhooks.id, id), isNull(webhooks.deletedAt)));
  return row;
}

export async function listWebhookRows(db: Executor, clientId: string, page: Page) {
  const where = and(eq(webhooks.clientId, clientId), isNull(webhooks.deletedAt));
  const rows = await db
    .select({ webhook: webhooks, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(webhooks)
    .where(where)
    .orderBy(desc(webhooks.createdAt), desc(webhooks.id))
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows: rows.map((r) => r.webhook), total: rows[0]!.total };
  if (emptyPageCountsNothing(page)) return { rows: [], total: 0 };
  const [c] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(webhooks)
    .where(where);
  return { rows: [], total: c?.n ?? 0 };
}

export async function updateWebhookRow(
  db: Executor,
  clientId: string,
  id: string,
  patch: Partial<WebhookRow>,
): Promise<WebhookRow | undefined> {
  const [row] = await db
    .update(webhooks)
    .set(patch)
    .where(and(eq(webhooks.clientId, clientId), eq(webhooks.id, id), isNull(webhooks.deletedAt)))
    .returning();
  return row;
}
