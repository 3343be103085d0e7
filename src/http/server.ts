// The Fastify instance every listener starts from: request ids, JSON:API media types, strict
// validation, one error renderer, JSON:API 404 and 405, request logging without secrets.
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance, type FastifyBaseLogger, type RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import FindMyWay from 'find-my-way';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.ts';
import type { Clock } from '../clock.ts';
import { redactUrl } from '../log.ts';
import { connectionsCut, httpMetrics } from '../observability/metrics.ts';
import { context, endSpan, requestSpans, SpanKind, startSpan, trace, tracing } from '../observability/tracing.ts';
import { apiError } from './errors.ts';
import { limitConnections } from './connections.ts';
import { checkRequestMediaType, registerJsonParsers } from './content-type.ts';
import { documentJsonApiRequest, normalizeJsonApiRequest } from './jsonapi-request.ts';
import { refuseNulInUrl } from './nul.ts';
import { makeErrorHandler } from './error-handler.ts';
import { JSONAPI, responses, sharedSchemas } from './schemas.ts';
import { buildSerializer } from './serializer.ts';
import { validatorCompiler } from './validation.ts';
import { lazyRequestLogger } from './request-logger.ts';

export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered (method and URL pattern), for the OpenAPI coverage test. */
    routeTable: { method: string; url: string }[];
  }
}

export interface ServerOptions {
  /** Which listener this is: the `listener` label of its metrics. */
  listener: string;
  config: Config;
  clock: Clock;
  logger: FastifyBaseLogger;
  /** Skip the JSON:API content-type rules (the widget host serves HTML and JS). */
  plainContent?: boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export function createServer(opts: ServerOptions): App {
  const { config } = opts;
  const app = Fastify({
    loggerInstance: opts.logger,
    // Fastify's own two lines per request are off; one line is written on response below.
    logController: new LogController({ disableRequestLogging: true }),
    // Each request's logger is made when something logs through it (request-logger.ts).
    childLoggerFactory: lazyRequestLogger,
    // A caller's request id is kept when it is safe to log; otherwise we make one.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 256 },
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.requestTimeoutMs,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // The rate limit keys on the client address; behind a proxy it comes from X-Forwarded-For.
    // The listed proxies were parsed once, in config.ts.
    trustProxy: typeof config.trustProxy === 'boolean' ? config.trustProxy : config.trustProxy.trusts,
    ajv: { customOptions: { strict: false } },
    // Response serializers from the schemas with nullable fields as type arrays (serializer.ts).
    schemaController: { compilersFactory: { buildSerializer } },
    // Errors the router raises before any route (a malformed URL, an over-long path segment)
    // are rendered like every other error.
    frameworkErrors: (err, req, reply) => errorHandler(err, req, reply),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSchemaErrorFormatter((errors, context) =>
    Object.assign(new Error('validation'), { validation: errors, validationContext: context }),
  );
  for (const s of sharedSchemas) app.addSchema(s);

  // First of all hooks: a connection's requests one at a time, its pipelining and write timeout
  // bounded (connections.ts), so nothing runs for a request that has to wait its turn.
  limitConnections(app, {
    writeTimeoutMs: config.writeTimeoutMs,
    maxPipelined: config.maxPipelinedRequests,
    onCut: (reason) => connectionsCut.inc({ listener: opts.listener, reason }),
  });
  // Then the request's span, active for the hooks and the handler after it.
  if (tracing.enabled) traceRequests(app, opts.listener);

  const errorCtx = { environment: config.environment, now: () => opts.clock.now() };
  const errorHandler = makeErrorHandler(errorCtx, opts.listener);
  app.setErrorHandler(errorHandler);

  // Hooks on every request are callback-style: an async hook costs a promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    try {
      refuseNulInUrl(req.url);
    } catch (err) {
      return done(err as Error);
    }
    if (opts.plainContent) return done();
    reply.type(JSONAPI);
    try {
      checkRequestMediaType(req);
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
  if (!opts.plainContent) {
    // JSON:API forbids media type parameters other than ext/profile, but Fastify appends
    // charset=utf-8 to JSON-like types; put the bare media type back.
    // An answer without a body (a 201 or 204 with nothing in it) names no media type.
    app.addHook('onSend', (_req, reply, payload, done) => {
      const ct = reply.getHeader('content-type');
      if (payload === undefined || payload === null || payload === '') reply.removeHeader('content-type');
      else if (typeof ct === 'string' && ct.startsWith(JSONAPI)) reply.header('content-type', JSONAPI);
      done(null, payload);
    });
  }
  // Every listener parses JSON the same way (the depth limit, U+0000 and lone surrogates included).
  registerJsonParsers(app);
  if (!opts.plainContent) {
    // JSON:API request documents (src/http/jsonapi-request.ts): jsonapi/meta/links ignored, a PATCH's data.id checked.
    app.addHook('onRoute', documentJsonApiRequest);
    app.addHook('preValidation', (req, _reply, done) => {
      try {
        normalizeJsonApiRequest(req);
      } catch (err) {
        return done(err as Error);
      }
      done();
    });
  }

  // 404 and 405: a second router mirrors every route so an unmatched request can tell a
  // wrong method (405 with Allow) from a path that does not exist (404).
  const mirror = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  app.decorate('routeTable', []);
  app.addHook('onRoute', (route) => {
    // Any body can be too large (bodyLimit): say so wherever a body is accepted.
    const schema = route.schema as { body?: unknown; response?: Record<number, unknown> } | undefined;
    if (schema?.body && schema.response && !schema.response[413]) Object.assign(schema.response, responses({}, [413]));
    // A path segment over maxParamLength is refused before routing.
    if (route.url.includes(':') && schema?.response && !schema.response[414])
      Object.assign(schema.response, responses({}, [414]));
    for (const m of [route.method].flat()) {
      if (m === 'HEAD' || m === 'OPTIONS') continue;
      app.routeTable.push({ method: m, url: route.url });
      try {
        mirror.on(m as 'GET', route.url, () => {});
      } catch {
        /* already mirrored */
      }
    }
  });
  app.setNotFoundHandler(async (req) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== req.method && mirror.find(m, path) !== null);
    if (allowed.length > 0) {
      throw apiError('MethodNotAllowed', `${req.method} is not allowed on this path; use ${allowed.join(', ')}.`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    throw apiError('NotFound', `No route matches ${req.method} ${path}.`);
  });

  // One line per request, after it completes. Headers are never logged (they carry secrets).
  // The line's fields are these five, none of them a secret, so it is written by a logger
  // without the redaction paths (src/log.ts): their wildcards ran on every field of every line,
  // 4 µs and 15 KB of garbage per request, more than half of what the line cost (pino 10).
  // Every other line, req.log's included, is still redacted. Query values and lookUpIds are
  // replaced in the URL (redactUrl): they carry e-mails, phone numbers and bearer secrets.
  const requestLog = opts.logger.child({}, { redact: { paths: [] } });
  const countRequest = httpMetrics(opts.listener);
  app.addHook('onResponse', (req, reply, done) => {
    // The route's template, never its path (ids); 'unmatched' for what no route matched.
    countRequest(req.routeOptions.url ?? 'unmatched', req.method, reply.statusCode, reply.elapsedTime / 1000);
    requestLog.info(
      {
        reqId: req.id,
        method: req.method,
        url: redactUrl(req.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
    done();
  });

  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    reply.type('application/json');
    return { status: 'ok' };
  });

  return app;
}

/**
 * A SERVER span per request: named by method and route template, with the merchant (once the
 * client auth hook has identified it) and the status. The span is the active context for the
 * hooks after this one and, entered again before the handler (a body is read on the socket's
 * own context), for the handler and every statement and call it makes.
 */
function traceRequests(app: App, listener: string): void {
  app.addHook('onRequest', (req, _reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const span = startSpan(`${req.method} ${route}`, SpanKind.SERVER, {
      'http.request.method': req.method,
      'http.route': route,
      'coffer.listener': listener,
    });
    const ctx = trace.setSpan(context.active(), span);
    requestSpans.set(req, { span, ctx });
    context.with(ctx, done);
  });
  app.addHook('preHandler', (req, _reply, done) => {
    const s = requestSpans.get(req);
    if (s) context.with(s.ctx, done);
    else done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    const s = requestSpans.get(req);
    if (!s) return done();
    const merchant = (req as { client?: { id?: string } }).client?.id;
    if (merchant) s.span.setAttribute('coffer.merchant_id', merchant);
    s.span.setAttribute('http.response.status_code', reply.statusCode);
    endSpan(s.span, reply.statusCode >= 500 ? new Error(`status ${reply.statusCode}`) : undefined);
    // The request's log line (the next onResponse hook) carries the trace id.
    context.with(s.ctx, done);
  });
}
