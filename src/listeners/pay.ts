// The widget host ({pay_url}): main.js, the widget frames /_/{flow}/ and the API they call
// with the widget payload (decisions §11).
import type { AppContext } from '../context.ts';
import { createServer, type App } from '../http/server.ts';
import { widgetHostRoutes } from '../modules/widgets/host.ts';

export async function buildPayListener(ctx: AppContext): Promise<App> {
  const app = createServer({ config: ctx.config, clock: ctx.clock, logger: ctx.log, plainContent: true });
  await widgetHostRoutes(app, ctx);
  return app;
}
