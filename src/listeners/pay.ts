// The widget host ({pay_url}): main.js, the widget frames /_/{flow}/ and the API they call
// with the widget payload (docs/adr/0013-widget-payloads.md); in the sandbox also the KYC document page.
import helmet from '@fastify/helmet';
import type { AppContext } from '../context.ts';
import { faviconRoutes } from '../http/logo.ts';
import { registerRateLimit } from '../http/rate-limit.ts';
import { createServer, type App } from '../http/server.ts';
import { kycDocumentPageRoutes } from '../modules/kyc/portal.ts';
import { widgetHostRoutes } from '../modules/widgets/host.ts';
import { commonLinks, landingRoutes } from './landing.ts';

export async function buildPayListener(ctx: AppContext): Promise<App> {
  const app = createServer({
    listener: 'pay',
    config: ctx.config,
    clock: ctx.clock,
    logger: ctx.log,
    plainContent: true,
  });
  await registerRateLimit(app, ctx, { name: 'pay', perMinute: ctx.config.rateLimit.payPerMinute });
  // The usual browser-facing headers, except what embedding needs: frame pages set their own
  // CSP (with frame-ancestors *, so no X-Frame-Options), and main.js is loaded cross-origin.
  await app.register(helmet, {
    contentSecurityPolicy: false,
    frameguard: false,
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: false,
    strictTransportSecurity:
      ctx.config.environment === 'live' ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });
  faviconRoutes(app);
  landingRoutes(app, ['/'], {
    title: 'Coffer widget host',
    about:
      "A merchant's checkout page loads main.js from here and shows the wallet widgets in frames; the merchant's backend " +
      'fetches their payload from the API (GET /api/v1/widgets/wallet/{walletId}).',
    links: { mainJs: `${ctx.config.listeners.pay.publicUrl}/main.js`, ...commonLinks(ctx.config) },
  });
  await widgetHostRoutes(app, ctx);
  // The sandbox's stand-in for a KYC provider's document upload page.
  if (ctx.config.environment === 'sandbox') await kycDocumentPageRoutes(app, ctx);
  return app;
}
