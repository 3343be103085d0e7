// Renders every failure as a JSON:API error document. Known errors keep their code; anything
// unexpected becomes a 500 without internals (the stack goes to the log, never the client);
// lost database connections and the database's timeouts become a retryable 503.
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Environment } from '../config.ts';
import { isDatabaseTimeout, isRetryableDatabaseError } from '../db/errors.ts';
import { ApiError, apiError, errorItem, type ErrorItem } from './errors.ts';
import { JSONAPI } from './schemas.ts';
import { validationErrorItems, type ValidationContext } from './validation.ts';
import { idempotencyConflicts, rateLimitRefusals } from '../observability/metrics.ts';
import { traceIdOf, tracing } from '../observability/tracing.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ErrorRenderContext {
  environment: Environment;
  now: () => Date;
  /**
   * The request's id (its x-request-id header), used as every error's `id` so either can be
   * quoted. The spec types an error's id as a UUID: a caller's own request id that is not one,
   * and work without a request (recovery jobs), get a fresh one.
   */
  requestId?: string;
}

export function renderErrorDocument(
  items: ErrorItem[],
  path: string,
  ctx: ErrorRenderContext,
  traceId?: string,
): string {
  const timestamp = ctx.now().toISOString();
  const id = ctx.requestId !== undefined && UUID.test(ctx.requestId) ? ctx.requestId : randomUUID();
  return JSON.stringify({
    errors: items.map((i) => ({
      status: String(i.status),
      id,
      code: i.code,
      title: i.title,
      detail: i.detail,
      ...(i.source ? { source: i.source } : {}),
      ...(i.links ? { links: i.links } : {}),
      meta: { environment: ctx.environment, timestamp, path, ...(traceId ? { traceId } : {}), ...i.meta },
    })),
  });
}

function toApiError(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError & { validationContext?: ValidationContext };
  if (fe && Array.isArray(fe.validation)) {
    return new ApiError(validationErrorItems(fe.validation as never, fe.validationContext ?? 'body'));
  }
  switch (fe?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return apiError('UnsupportedMediaType', undefined, { header: 'Content-Type' });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return apiError('PayloadTooLarge');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return apiError('ValidationError', 'The body is empty.', { pointer: '' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return apiError('ValidationError', 'The body is not valid JSON.', { pointer: '' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return apiError('BadRequest', 'Content-Length does not match the body.', { header: 'Content-Length' });
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return apiError('BadRequest', 'The URL is malformed.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return apiError('UriTooLong');
  }
  // A JSON syntax error from the body parser (statusCode 400 set by secure-json-parse).
  if (fe instanceof SyntaxError || (fe?.statusCode === 400 && /JSON/i.test(String(fe.message)))) {
    return apiError('ValidationError', 'The body is not valid JSON.', { pointer: '' });
  }
  if (fe?.statusCode === 408 || fe?.code === 'ERR_HTTP_REQUEST_TIMEOUT') return apiError('RequestTimeout');
  if (isRetryableDatabaseError(err)) {
    const detail = isDatabaseTimeout(err)
      ? 'The database did not answer in time (a row this request needs may be held by another request); retry shortly.'
      : 'The database is unavailable; retry shortly.';
    return apiError('ServiceUnavailable', detail, { headers: { 'retry-after': '1' } });
  }
  return undefined;
}

export function makeErrorHandler(ctx: ErrorRenderContext, listener: string) {
  const refused = rateLimitRefusals.labels(listener);
  return function errorHandler(err: unknown, req: FastifyRequest, reply: FastifyReply) {
    let apiErr = toApiError(err);
    const code = apiErr?.items[0]?.code;
    if (code === 'RateLimitExceeded') refused.inc();
    else if (code === 'IdempotencyKeyInUse' || code === 'IdempotencyKeyReused') idempotencyConflicts.labels(code).inc();
    if (apiErr === undefined) {
      req.log.error({ err }, 'unhandled error');
      apiErr = new ApiError([errorItem('InternalError')]);
    } else if (apiErr.status >= 500) {
      req.log.warn({ err }, 'request failed with a retryable error');
    }
    for (const [k, v] of Object.entries(apiErr.headers)) reply.header(k, v);
    return reply
      .code(apiErr.status)
      .type(JSONAPI)
      .send(
        renderErrorDocument(
          apiErr.items,
          req.url.split('?')[0] ?? req.url,
          { ...ctx, requestId: req.id },
          tracing.enabled ? traceIdOf(req) : undefined,
        ),
      );
  };
}
