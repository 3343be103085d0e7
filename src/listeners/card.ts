// The secure card listener ({secure_url}). Serves /health now; the virtual debit card read
// (GET /api/v1/payments/{id}/card) arrives with card-rail payments.
import type { AppContext } from '../context.ts';
import { createServer, type App } from '../http/server.ts';

export async function buildCardListener(ctx: AppContext): Promise<App> {
  return createServer({ config: ctx.config, clock: ctx.clock, logger: ctx.log });
}
