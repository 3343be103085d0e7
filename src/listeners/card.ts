// The secure card listener ({secure_url}): virtual debit card reads only, with the same
// merchant authentication as the API. Deployable apart (LISTENERS=card) behind its own ingress.
import type { AppContext } from '../context.ts';
import { clientAuthHook } from '../modules/clients/authenticate.ts';
import { registerRateLimit } from '../http/rate-limit.ts';
import { sharedSchemas } from '../http/schemas.ts';
import { createServer, type App } from '../http/server.ts';
import { commonLinks, landingRoutes } from './landing.ts';
import { cardRoutes } from '../modules/payments/cards.ts';
import { schemas as paymentSchemas } from '../modules/payments/schemas.ts';

export async function buildCardListener(ctx: AppContext): Promise<App> {
  const app = createServer({ listener: 'card', config: ctx.config, clock: ctx.clock, logger: ctx.log });
  await registerRateLimit(app, ctx, { name: 'card', perMinute: ctx.config.rateLimit.cardPerMinute });
  for (const s of paymentSchemas) if (!sharedSchemas.includes(s)) app.addSchema(s);
  landingRoutes(app, ['/'], {
    title: 'Coffer secure card API',
    about:
      "This listener serves a payment's virtual card (GET /api/v1/payments/{id}/card) with the merchant's Client-ID and " +
      'secret, apart from the main API. The reference describes it.',
    links: commonLinks(ctx.config),
  });
  app.decorateRequest('client', null as never);
  await app.register(async (secure) => {
    secure.addHook('onRequest', clientAuthHook(ctx.auth));
    await cardRoutes(secure, ctx);
  });
  return app;
}
