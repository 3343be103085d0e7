// The operator's listener: /admin/v1 behind ADMIN_TOKEN, and its own OpenAPI document.
import type { AppContext } from '../context.ts';
import { adminAuthHook } from '../http/auth.ts';
import { registerRateLimit } from '../http/rate-limit.ts';
import { createServer, type App } from '../http/server.ts';
import { adminRoutes, schemas as adminSchemas } from '../modules/admin/routes.ts';
import { linkedAccountAdminRoutes } from '../modules/linked-accounts/routes.ts';
import { schemas as linkedAccountSchemas } from '../modules/linked-accounts/schemas.ts';
import { landingRoutes } from './landing.ts';
import { registerOpenApi } from './openapi.ts';
import { metricsRoute } from '../modules/admin/metrics.ts';

export async function buildAdminListener(ctx: AppContext): Promise<App> {
  const { config } = ctx;
  if (!config.adminToken) throw new Error('the admin listener needs ADMIN_TOKEN');
  const app = createServer({ listener: 'admin', config, clock: ctx.clock, logger: ctx.log });
  // Before the token check: wrong tokens count too.
  await registerRateLimit(app, ctx, { name: 'admin', perMinute: config.rateLimit.adminPerMinute });
  for (const s of [...adminSchemas, ...linkedAccountSchemas]) app.addSchema(s);
  const auth = adminAuthHook(config.adminToken);
  await registerOpenApi(app, {
    title: 'Coffer admin API',
    description: 'Operator API for merchants (clients). `Authorization: Bearer <ADMIN_TOKEN>`.',
    serverUrl: config.listeners.admin.publicUrl,
    jsonPath: '/admin/v1/openapi.json',
    security: 'admin',
    protect: auth,
  });
  landingRoutes(app, ['/', '/admin/v1'], {
    title: 'Coffer admin API',
    about:
      "The operator's API for merchants (clients), under /admin/v1: send Authorization: Bearer <ADMIN_TOKEN> (a sandbox " +
      'keeps the one it generated in DATA_DIR/secrets.json), and so does its OpenAPI document. The coffer CLI ' +
      '(npx coffer) calls it for you.',
    links: {
      openapi: `${config.listeners.admin.publicUrl}/admin/v1/openapi.json`,
      console: config.listeners.console.publicUrl,
      guide: 'docs/operations.md in the Coffer repository',
    },
  });
  // Its own token check (METRICS_TOKEN or ADMIN_TOKEN), outside /admin/v1.
  metricsRoute(app, ctx);
  await app.register(async (admin) => {
    admin.addHook('onRequest', auth);
    await adminRoutes(admin, ctx);
    await linkedAccountAdminRoutes(admin, ctx);
  });
  return app;
}
