// The API listener: /api/v1 for merchants, /health, the OpenAPI document and /docs.
import type { AppContext } from '../context.ts';
import { clientAuthHook } from '../modules/clients/authenticate.ts';
import { keyedRateLimit, registerRateLimit, type SharedRateLimitStore } from '../http/rate-limit.ts';
import { createServer, type App } from '../http/server.ts';
import { MODULES } from '../modules/index.ts';
import { errorCodesFor } from './error-codes.ts';
import { commonLinks, landingRoutes } from './landing.ts';
import { registerOpenApi } from './openapi.ts';

export interface ApiListener {
  app: App;
  rateLimitStore: SharedRateLimitStore;
}

export async function buildApiListener(ctx: AppContext): Promise<ApiListener> {
  const { config } = ctx;
  const app = createServer({ listener: 'api', config, clock: ctx.clock, logger: ctx.log });
  for (const m of MODULES) for (const s of m.schemas ?? []) app.addSchema(s);

  // Counted per source IP over every route of this listener, shared across processes; and per
  // merchant once authenticated (below).
  const store = await registerRateLimit(app, ctx, { name: 'api', perMinute: config.rateLimit.perMinute });

  await registerOpenApi(app, {
    title: 'Coffer API',
    description:
      'Merchant payments and wallets API (JSON:API). Every `/api/v1` call sends `Client-ID` and `Authorization: Bearer <secret>`. ' +
      'Errors are `{"errors":[...]}` documents; branch on `code`.',
    serverUrl: config.listeners.api.publicUrl,
    jsonPath: '/api/v1/openapi.json',
    uiPath: '/docs',
    security: 'client',
    errorCodes: errorCodesFor,
  });

  landingRoutes(app, ['/', '/api/v1'], {
    title: 'Coffer API',
    about:
      "Coffer's merchant API (JSON:API) is under /api/v1: every call sends Client-ID and Authorization: Bearer <secret> " +
      "(the sandbox keeps its demo merchant's in DATA_DIR/demo-client.json). The reference lists every operation.",
    links: commonLinks(config),
  });
  app.decorateRequest('client', null as never);
  // The console's request log (modules/request-log): a push per request, written by a job.
  app.addHook('onResponse', ctx.requestLog.hook);
  await app.register(async (api) => {
    api.addHook('onRequest', clientAuthHook(ctx.auth));
    api.addHook(
      'onRequest',
      keyedRateLimit(app, {
        perMinute: config.rateLimit.perClientPerMinute,
        key: (req) => `client:${req.client.id}`,
        what: 'for this client',
      }),
    );
    for (const m of MODULES) await m.routes?.(api, ctx);
    // Simulation endpoints exist only in the sandbox (404 in live).
    if (config.environment === 'sandbox') for (const m of MODULES) await m.simulationRoutes?.(api, ctx);
  });
  return { app, rateLimitStore: store };
}
