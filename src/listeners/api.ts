// The API listener: /api/v1 for merchants, /health, the OpenAPI document and /docs.
import type { AppContext } from '../context.ts';
import { clientAuthHook } from '../http/auth.ts';
import { keyedRateLimit, registerRateLimit, type SharedRateLimitStore } from '../http/rate-limit.ts';
import { createServer, type App } from '../http/server.ts';
import { counterpartyRoutes } from '../modules/counterparties/routes.ts';
import { schemas as counterpartySchemas } from '../modules/counterparties/schemas.ts';
import { eventRoutes } from '../modules/events/routes.ts';
import { giftRoutes, giftSimulationRoutes, schemas as giftSchemas } from '../modules/gifts/routes.ts';
import { paymentIntentRoutes } from '../modules/payment-intents/routes.ts';
import { schemas as intentSchemas } from '../modules/payment-intents/schemas.ts';
import { paymentRoutes, paymentSimulationRoutes } from '../modules/payments/routes.ts';
import { schemas as paymentSchemas } from '../modules/payments/schemas.ts';
import { rewardRoutes, schemas as rewardSchemas } from '../modules/rewards/routes.ts';
import { transactionRoutes, transactionSimulationRoutes } from '../modules/transactions/routes.ts';
import { schemas as transactionSchemas } from '../modules/transactions/schemas.ts';
import { walletRoutes, walletSimulationRoutes } from '../modules/wallets/routes.ts';
import { schemas as walletSchemas } from '../modules/wallets/schemas.ts';
import { schemas as withdrawalSchemas, withdrawalRoutes } from '../modules/withdrawals/routes.ts';
import { schemas as eventSchemas } from '../modules/events/schemas.ts';
import { identityRoutes } from '../modules/identity/routes.ts';
import { schemas as identitySchemas } from '../modules/identity/schemas.ts';
import { kycRoutes } from '../modules/kyc/routes.ts';
import { schemas as kycSchemas } from '../modules/kyc/schemas.ts';
import { linkedAccountRoutes, linkedAccountSimulationRoutes } from '../modules/linked-accounts/routes.ts';
import { schemas as linkedAccountSchemas } from '../modules/linked-accounts/schemas.ts';
import { userRoutes } from '../modules/users/routes.ts';
import { schemas as userSchemas } from '../modules/users/schemas.ts';
import { webhookRoutes } from '../modules/webhooks/routes.ts';
import { schemas as widgetSchemas, widgetRoutes } from '../modules/widgets/routes.ts';
import { schemas as webhookSchemas } from '../modules/webhooks/schemas.ts';
import { counterpartySimulationRoutes } from '../modules/counterparties/routes.ts';
import { counterpartyTransferRoutes } from '../modules/counterparty-transfers/routes.ts';
import { schemas as counterpartyTransferSchemas } from '../modules/counterparty-transfers/schemas.ts';
import { externalTransactionRoutes } from '../modules/external-transactions/routes.ts';
import { schemas as externalTransactionSchemas } from '../modules/external-transactions/schemas.ts';
import { sweepstakesRoutes } from '../modules/sweepstakes/routes.ts';
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
  for (const s of [
    ...userSchemas,
    ...kycSchemas,
    ...identitySchemas,
    ...linkedAccountSchemas,
    ...webhookSchemas,
    ...eventSchemas,
    ...walletSchemas,
    ...counterpartySchemas,
    ...transactionSchemas,
    ...withdrawalSchemas,
    ...rewardSchemas,
    ...giftSchemas,
    ...intentSchemas,
    ...paymentSchemas,
    ...widgetSchemas,
    // Counterparty transfers and external transactions.
    ...counterpartyTransferSchemas,
    ...externalTransactionSchemas,
  ]) {
    app.addSchema(s);
  }

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
    await userRoutes(api, ctx);
    await kycRoutes(api, ctx);
    await identityRoutes(api, ctx);
    await linkedAccountRoutes(api, ctx);
    await webhookRoutes(api, ctx);
    await eventRoutes(api, ctx);
    await walletRoutes(api, ctx);
    await counterpartyRoutes(api, ctx);
    await transactionRoutes(api, ctx);
    await withdrawalRoutes(api, ctx);
    await rewardRoutes(api, ctx);
    await giftRoutes(api, ctx);
    await paymentIntentRoutes(api, ctx);
    await paymentRoutes(api, ctx);
    await widgetRoutes(api, ctx);
    // Counterparty transfers and external transactions.
    await counterpartyTransferRoutes(api, ctx);
    await externalTransactionRoutes(api, ctx);
    await sweepstakesRoutes(api, ctx);
    // Simulation endpoints exist only in the sandbox (404 in live).
    if (config.environment === 'sandbox') {
      await linkedAccountSimulationRoutes(api, ctx);
      await walletSimulationRoutes(api, ctx);
      await transactionSimulationRoutes(api, ctx);
      await giftSimulationRoutes(api, ctx);
      await paymentSimulationRoutes(api, ctx);
      await counterpartySimulationRoutes(api, ctx);
    }
  });
  return { app, rateLimitStore: store };
}
