// GET /metrics on the admin listener: Prometheus text format, for ADMIN_TOKEN or METRICS_TOKEN
// (a scraper's token that opens nothing else). Never on the API listener.
import { createHash, timingSafeEqual } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { rowsOf } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { App } from '../../http/server.ts';
import {
  dbPoolInUse,
  dbPoolWaiting,
  registry,
  webhookDueDeliveries,
  webhookOldestUndeliveredAge,
} from '../../observability/metrics.ts';

export function metricsRoute(app: App, ctx: AppContext): void {
  const { adminToken, observability } = ctx.config;
  const accepted = [adminToken, observability.metricsToken]
    .filter((t): t is string => t !== undefined)
    .map((t) => createHash('sha256').update(t).digest());
  const auth = async (req: FastifyRequest) => {
    const m = /^Bearer +(\S{1,1024})$/i.exec(req.headers.authorization ?? '');
    const presented = createHash('sha256')
      .update(m?.[1] ?? '')
      .digest();
    // Every token is compared, so the time taken does not tell which one nearly matched.
    let ok = false;
    for (const t of accepted) ok = timingSafeEqual(presented, t) || ok;
    if (!m || !ok) throw apiError('Unauthorized', 'Send Authorization: Bearer <METRICS_TOKEN or ADMIN_TOKEN>.');
  };
  app.get('/metrics', { schema: { hide: true }, onRequest: auth }, async (_req, reply) => {
    await readGauges(ctx);
    reply.type(registry.contentType);
    return registry.metrics();
  });
}

/** What is read at scrape time: the pool's state, and the webhook backlog from the database. */
async function readGauges(ctx: AppContext): Promise<void> {
  const pool = ctx.database.poolStats();
  dbPoolInUse.set(pool.inUse);
  dbPoolWaiting.set(pool.waiting);
  const now = ctx.clock.now();
  // Both from the queue of pending deliveries (event_delivery_queue: as large as the backlog).
  const [row] = rowsOf<{ due: number; oldest: Date | string | null }>(
    await ctx.db.execute(sql`select
      (select count(*)::int from event_delivery_queue where next_attempt_at <= ${now}) as due,
      (select min(created_at) from event_delivery_queue) as oldest`),
  );
  webhookDueDeliveries.set(row?.due ?? 0);
  const oldest = row?.oldest ? new Date(row.oldest).getTime() : undefined;
  webhookOldestUndeliveredAge.set(oldest === undefined ? 0 : Math.max(0, (now.getTime() - oldest) / 1000));
}
