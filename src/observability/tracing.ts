// OpenTelemetry traces (docs/operations.md#traces): off unless OTEL_EXPORTER_OTLP_ENDPOINT is
// set. Spans are made by hand in few places rather than by auto-instrumentation (which patches
// modules as they load, and ESM loaded through tsx escapes it): a span per HTTP request
// (http/server.ts), a child span per database statement (db/open.ts), per webhook delivery
// (modules/events/dispatcher.ts) and per call to a provider adapter (providers/http/client.ts).
// Everything here starts with a check of `tracing.enabled`; with tracing off, that check is all
// a request pays, and the SDK is never even loaded.
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

export const tracing = { enabled: false };

let tracer: Tracer | undefined;
let shutdown: (() => Promise<void>) | undefined;

export interface TracingOptions {
  /** OTLP/HTTP base URL; spans go to `${endpoint}/v1/traces` as JSON. */
  endpoint: string;
  serviceName: string;
  environment: string;
}

/** Starts exporting spans (once per process). */
export async function startTracing(o: TracingOptions): Promise<void> {
  if (tracing.enabled) return;
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { AsyncLocalStorageContextManager },
    { resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': o.serviceName, 'deployment.environment.name': o.environment }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${o.endpoint}/v1/traces` }), {
        scheduledDelayMillis: 1_000,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  tracer = provider.getTracer('coffer');
  shutdown = () => provider.shutdown();
  tracing.enabled = true;
}

/** Sends the spans still buffered and stops (on shutdown). */
export async function stopTracing(): Promise<void> {
  if (!tracing.enabled) return;
  tracing.enabled = false;
  await shutdown?.();
}

/** A span that is a child of the active one, or a root span when there is none. */
export function startSpan(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  parent: Context = context.active(),
): Span {
  return tracer!.startSpan(name, { kind, attributes }, parent);
}

/** A child span of the active one, only when there is one (database statements of a request, not of idle polling). */
export function startChildSpan(name: string, kind: SpanKind, attributes: Attributes): Span | undefined {
  const active = context.active();
  if (trace.getSpan(active) === undefined) return undefined;
  return tracer!.startSpan(name, { kind, attributes }, active);
}

/** Ends a span, marked as failed when `err` is given. */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  }
  span.end();
}

/** Runs `fn` in a span (a child of the active one), ended when its promise settles. */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = startSpan(name, kind, attributes);
  try {
    const out = await context.with(trace.setSpan(context.active(), span), () => fn(span));
    endSpan(span);
    return out;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}

/** The active trace's id, for log lines and error documents; undefined with tracing off or outside a span. */
function activeTraceId(): string | undefined {
  if (!tracing.enabled) return undefined;
  return trace.getSpan(context.active())?.spanContext().traceId;
}

/** The span of each HTTP request (http/server.ts), kept beside it: no field on the request, whose shape stays the same with tracing off. */
export const requestSpans = new WeakMap<object, { span: Span; ctx: Context }>();

/** The trace id of a request's span (error documents' meta.traceId). */
export function traceIdOf(req: object): string | undefined {
  return requestSpans.get(req)?.span.spanContext().traceId;
}

/** pino mixin: the trace id on every log line written inside a span. */
export function traceMixin(): Record<string, string> {
  const traceId = activeTraceId();
  return traceId === undefined ? NONE : { traceId };
}
const NONE: Record<string, string> = {};

export { context, SpanKind, trace, type Context, type Span };
