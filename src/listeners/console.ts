// The web console ({console_url}, CONSOLE_PORT): server-rendered pages for the operator and for
// merchants' developers (docs/operations.md#the-console). Its own listener, bound to HOST like
// the API (merchants reach it), not the admin listener (loopback and token-only by default);
// hence the operator signs in on it only with CONSOLE_OPERATOR_SIGN_IN=true.
import { readFileSync } from 'node:fs';
import helmet from '@fastify/helmet';
import type { AppContext } from '../context.ts';
import { ApiError } from '../http/errors.ts';
import { faviconRoutes } from '../http/logo.ts';
import { registerRateLimit } from '../http/rate-limit.ts';
import { createServer, type App } from '../http/server.ts';
import { PageError, registerSessions } from '../console/auth.ts';
import { layout, html } from '../console/html.ts';
import { merchantRoutes } from '../console/merchant.ts';
import { operatorRoutes } from '../console/operator.ts';
import { purgeExpiredSessions } from '../console/session.ts';

const CSS = readFileSync(new URL('../console/console.css', import.meta.url), 'utf8');

export async function buildConsoleListener(ctx: AppContext): Promise<App> {
  const app = createServer({
    listener: 'console',
    config: ctx.config,
    clock: ctx.clock,
    logger: ctx.log,
    plainContent: true,
  });
  await registerRateLimit(app, ctx, { name: 'console', perMinute: ctx.config.console.perMinute });
  const live = ctx.config.environment === 'live';
  await app.register(helmet, {
    // No script at all: pages are HTML and inline SVG (the favicon is the only image); forms
    // post only to the console itself.
    // Exactly these directives, as docs/operations.md#signing-in shows them (a test compares):
    // helmet's defaults would add script-src 'self', upgrade-insecure-requests and more.
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    strictTransportSecurity: live ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    referrerPolicy: { policy: 'same-origin' },
  });
  // Forms post application/x-www-form-urlencoded.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );
  app.addHook('onSend', async (_req, reply, payload) => {
    // Pages carry a merchant's data: never cached.
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html'))
      reply.header('cache-control', 'no-store');
    return payload;
  });

  const page = (title: string, message: string) =>
    layout(title, html`<p>${message}</p><p><a href="/">Back</a></p>`, { environment: ctx.config.environment });
  app.get('/console.css', async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CSS),
  );
  faviconRoutes(app);
  // The pages in a context of their own: failures render as HTML pages, not JSON:API documents.
  await app.register(async (pages) => {
    pages.setErrorHandler((err, req, reply) => {
      if (err instanceof PageError && err.status === 401 && req.method === 'GET')
        return reply.redirect('/sign-in', 303);
      const code = (err as { statusCode?: unknown }).statusCode;
      const status =
        err instanceof PageError || err instanceof ApiError
          ? err.status
          : typeof code === 'number' && code >= 400 && code < 500
            ? code
            : 500;
      if (status >= 500) req.log.error({ err }, 'console page failed');
      const title =
        status === 404
          ? 'Not found'
          : status === 403
            ? 'Refused'
            : status === 401
              ? 'Sign in'
              : status === 429
                ? 'Too many requests'
                : status >= 500
                  ? 'Something went wrong'
                  : 'Bad request';
      const message =
        err instanceof PageError
          ? err.message
          : err instanceof ApiError
            ? (err.items[0]?.detail ?? title)
            : status >= 500
              ? 'The page could not be shown; the error is in the log.'
              : title;
      return reply.code(status).type('text/html; charset=utf-8').send(page(title, message));
    });
    registerSessions(pages, ctx);
    // The operator's pages only where the operator may sign in (CONSOLE_OPERATOR_SIGN_IN).
    if (ctx.config.console.operatorSignIn) operatorRoutes(pages, ctx);
    merchantRoutes(pages, ctx);
    pages.get('/*', async () => {
      throw new PageError(404, 'There is nothing here.');
    });
  });

  ctx.jobs.register({
    name: 'console-sessions-purge',
    intervalMs: 3_600_000,
    run: () => purgeExpiredSessions(ctx.db, ctx.clock.now()),
  });
  return app;
}
