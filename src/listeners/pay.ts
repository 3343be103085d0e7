// The widget host ({pay_url}). Serves /health now; main.js and the /_/{flow}/ pages arrive
// with the embeddable widgets.
import type { AppContext } from '../context.ts';
import { createServer, type App } from '../http/server.ts';

export async function buildPayListener(ctx: AppContext): Promise<App> {
  return createServer({ config: ctx.config, clock: ctx.clock, logger: ctx.log, plainContent: true });
}
