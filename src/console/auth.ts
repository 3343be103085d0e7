// Signing in and out of the console, the session every page runs under, and the CSRF check of
// every POST. A merchant's developer signs in with its Client-ID and a secret, checked by the
// API's own authenticator; the operator with ADMIN_TOKEN, where CONSOLE_OPERATOR_SIGN_IN allows.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { ApiError } from '../http/errors.ts';
import { limitExceeded } from '../http/rate-limit.ts';
import type { App } from '../http/server.ts';
import { hashSecret } from '../modules/clients/domain.ts';
import { findClient, findSecretId } from '../modules/clients/sql.ts';
import { flash, html, layout, withNotice } from './html.ts';
import {
  cookieNames,
  createSession,
  deleteSession,
  deleteSessionsLike,
  findSession,
  randomToken,
  readCookies,
  sameToken,
  setCookie,
  type SessionBinding,
  type SessionRow,
} from './session.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The console session of the request, when signed in (console listener only). */
    consoleSession: SessionRow | null;
  }
}

/** A page answer with a status other than 200 (not found, refused). */
export class PageError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = () => new PageError(404, 'There is nothing here.');

export function registerSessions(app: App, ctx: AppContext): void {
  const names = cookieNames(ctx.config.listeners.console.publicUrl);
  // The token the operator signs in with: none where operator sign-in is off, so no operator
  // session holds there either.
  const adminToken = ctx.config.console.operatorSignIn ? ctx.config.adminToken : undefined;
  const adminHash = adminToken ? createHash('sha256').update(adminToken).digest() : undefined;
  const ttlS = Math.floor(ctx.config.console.sessionTtlMs / 1000);

  app.decorateRequest('consoleSession', null);
  app.addHook('preHandler', async (req) => {
    const cookies = readCookies(req);
    req.consoleSession =
      (await findSession(ctx.db, cookies[names.session], { now: ctx.clock.now(), adminToken })) ?? null;
    // Every POST but the sign-in form's carries the session's token (the sign-in form has its own).
    if (req.method === 'POST' && req.url !== '/sign-in') {
      const given = (req.body as Record<string, unknown> | undefined)?._csrf;
      if (!req.consoleSession || !sameToken(given, req.consoleSession.csrfToken))
        throw new PageError(
          403,
          'The form has expired or did not come from this console: reload the page and try again.',
        );
    }
  });

  const signInPage = (
    reply: FastifyReply,
    status: number,
    message?: string,
    q: Record<string, string | undefined> = {},
  ) => {
    const token = randomToken();
    setCookie(reply, names, names.signIn, token, 3600);
    const env = ctx.config.environment;
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(
        layout(
          'Sign in',
          html`<div class="sign-in">${message ? html`<p class="flash error" role="alert">${message}</p>` : flash(q)}
<form method="post" action="/sign-in"><h2>Merchant developer</h2><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="role" value="merchant">
<label>Client-ID <input name="clientId" autocomplete="username" required></label>
<label>Client secret <input name="secret" type="password" autocomplete="current-password" required></label><button>Sign in</button></form>
${
  adminHash
    ? html`<form method="post" action="/sign-in"><h2>Operator</h2><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="role" value="operator">
<label>ADMIN_TOKEN <input name="adminToken" type="password" autocomplete="current-password" required></label><button>Sign in</button></form>`
    : ''
}</div>`,
          { environment: env },
        ),
      );
  };

  app.get('/sign-in', async (req, reply) => {
    if (req.consoleSession) return reply.redirect(homeOf(req.consoleSession), 303);
    return signInPage(reply, 200, undefined, req.query as Record<string, string | undefined>);
  });

  app.post('/sign-in', async (req, reply) => {
    // Wrong attempts count as much as right ones: the limit is per address, before any check.
    const { current, ttl } = await app.rateLimitStore.count(`sign-in:${req.ip}`);
    if (current > ctx.config.console.signInPerMinute) {
      const e = limitExceeded(
        `More than ${ctx.config.console.signInPerMinute} sign-in attempts in a minute from this address`,
        ttl,
      );
      reply.header('retry-after', e.headers['retry-after']!);
      return signInPage(reply, 429, e.items[0]!.detail);
    }
    const body = (req.body ?? {}) as Record<string, string | undefined>;
    if (!sameToken(body._csrf, readCookies(req)[names.signIn] ?? ''))
      return signInPage(reply, 403, 'The sign-in form expired: try again.');
    let binding: SessionBinding;
    if (body.role === 'operator') {
      if (!adminToken || !adminHash)
        return signInPage(
          reply,
          403,
          'The operator does not sign in on this console: use the admin API or the coffer CLI on ADMIN_HOST, or set CONSOLE_OPERATOR_SIGN_IN=true on a console only operators reach (docs/operations.md#signing-in).',
        );
      const presented = createHash('sha256')
        .update(body.adminToken ?? '')
        .digest();
      if (!timingSafeEqual(presented, adminHash)) return signInPage(reply, 401, 'That is not the ADMIN_TOKEN.');
      binding = { role: 'operator', adminToken };
    } else {
      const secret = (body.secret ?? '').trim();
      try {
        const client = await ctx.auth.authenticate(body.clientId?.trim(), `Bearer ${secret}`);
        // The session lasts as long as this secret: its row is found again by the hash just matched.
        const secretId = await findSecretId(ctx.db, client.id, hashSecret(secret));
        if (!secretId) return signInPage(reply, 401, 'Unknown Client-ID or wrong secret.');
        binding = { role: 'merchant', clientId: client.id, secretId };
      } catch (err) {
        if (err instanceof ApiError)
          return signInPage(
            reply,
            err.status === 403 ? 403 : 401,
            err.status === 403 ? 'This merchant is disabled.' : 'Unknown Client-ID or wrong secret.',
          );
        throw err;
      }
    }
    const { id, row } = await createSession(ctx.db, {
      binding,
      now: ctx.clock.now(),
      ttlMs: ctx.config.console.sessionTtlMs,
    });
    setCookie(reply, names, names.session, id, ttlS);
    setCookie(reply, names, names.signIn, '', 0);
    req.log.info({ role: row.role, clientId: row.clientId, secretId: row.secretId }, 'console sign-in');
    return reply.redirect(homeOf(row), 303);
  });

  app.post('/sign-out', async (req, reply) => {
    const id = readCookies(req)[names.session];
    if (id) await deleteSession(ctx.db, id);
    setCookie(reply, names, names.session, '', 0);
    return reply.redirect('/sign-in', 303);
  });

  // Every session of this merchant (whatever secret it signed in with), or every operator session.
  app.post('/sign-out-everywhere', async (req, reply) => {
    const session = requireSession(req);
    const ended = await deleteSessionsLike(ctx.db, session);
    req.log.info({ role: session.role, clientId: session.clientId, ended }, 'console sign-out everywhere');
    setCookie(reply, names, names.session, '', 0);
    return reply.redirect(withNotice('/sign-in', 'signed-out-everywhere'), 303);
  });

  app.get('/', async (req, reply) => reply.redirect(req.consoleSession ? homeOf(req.consoleSession) : '/sign-in', 303));
}

function homeOf(s: SessionRow): string {
  return s.role === 'operator' ? '/operator' : `/m/${s.clientId}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID.test(s);

/** The signed-in session, or a redirect to the sign-in page (GET) / a refusal. */
function requireSession(req: FastifyRequest): SessionRow {
  if (!req.consoleSession) throw new PageError(401, 'Sign in first.');
  return req.consoleSession;
}

/**
 * The merchant a /m/:clientId page is about: the session's own merchant, or any merchant for
 * the operator. Another merchant's id is 404, as is an unknown one.
 */
export async function merchantOf(ctx: AppContext, req: FastifyRequest) {
  const session = requireSession(req);
  const clientId = (req.params as { clientId?: string }).clientId;
  if (!isUuid(clientId)) throw notFound();
  if (session.role === 'merchant' && session.clientId !== clientId) throw notFound();
  const client = await findClient(ctx.db, clientId);
  if (!client) throw notFound();
  if (session.role === 'merchant' && client.disabled) throw new PageError(403, 'This merchant is disabled.');
  return { session, client };
}

export function requireOperator(req: FastifyRequest): SessionRow {
  const session = requireSession(req);
  if (session.role !== 'operator') throw notFound();
  return session;
}
