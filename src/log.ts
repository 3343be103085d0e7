// pino, with redaction as a second line of defence: request logs never include headers or
// bodies, but any object that reaches a log line with these names is censored. Errors of
// database queries are logged without the values they carry (serializeError).
import { pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';
import type { Config } from './config.ts';
import { traceMixin } from './observability/tracing.ts';

const REDACT_PATHS = [
  'authorization',
  'secret',
  'token',
  'verificationToken',
  'number',
  'cvc',
  'pan',
  'cardNumber',
  'adminToken',
  '*.authorization',
  '*.secret',
  '*.token',
  '*.verificationToken',
  '*.number',
  '*.cvc',
  '*.pan',
  '*.cardNumber',
  'req.headers.authorization',
  'req.headers["client-id"]',
  'headers.authorization',
];

/**
 * Path segments that are bearer secrets: a gift's or a wallet barcode's lookUpId reads and spends
 * it (GET /api/v1/gifts/{lookUpId}, /api/v1/wallets/barcode/{lookUpId},
 * /api/v1/simulation/barcodes/{lookUpId}). Extra slashes route the same, so they match too.
 */
const LOOK_UP_ID = /(\/(?:gifts|barcodes?)\/+)[^/?#]+/gi;

/**
 * A request URL fit for the log: lookUpIds in the path and every query value replaced, the
 * parameter names kept. Query strings carry e-mails and phone numbers (`filter[email]=…`); paths
 * carry ids, of which only lookUpIds are secrets. String scans: it runs on every request line.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const shown = redactLookUpIds(path);
  return q < 0 ? shown : `${shown}?${url.slice(q + 1).replace(/=[^&]*/g, '=[redacted]')}`;
}

function redactLookUpIds(path: string): string {
  // The router matches the path percent-decoded (%67ifts is gifts), so it is checked that way too.
  let routed = path;
  if (path.includes('%')) {
    try {
      routed = decodeURI(path);
    } catch {
      // Malformed escapes: checked as they are.
    }
  }
  if (!/gift|barcode/i.test(routed)) return path;
  const redacted = routed.replace(LOOK_UP_ID, '$1[redacted]');
  return redacted === routed ? path : redacted;
}

/** A PostgreSQL error code (SQLSTATE), on errors of pg and PGlite alike. */
const SQLSTATE = /^[0-9A-Z]{5}$/;
/** Names PostgreSQL gives in an error's own fields: only these are kept where its message quotes a name. */
const IDENTIFIER_FIELDS = ['schema', 'table', 'column', 'dataType', 'constraint'] as const;

type ErrorLike = Error & Record<string, unknown>;
const isErrorLike = (e: unknown): e is ErrorLike =>
  typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string';

/** The error, its causes and the errors it aggregates, once each. */
function errorsIn(err: ErrorLike, seen = new Set<ErrorLike>()): Set<ErrorLike> {
  if (seen.has(err) || seen.size >= 16) return seen;
  seen.add(err);
  if (isErrorLike(err.cause)) errorsIn(err.cause, seen);
  if (Array.isArray(err.errors)) for (const e of err.errors) if (isErrorLike(e)) errorsIn(e, seen);
  return seen;
}

/**
 * An error of a database query: Drizzle's (its `query` and `params`), PostgreSQL's through pg or
 * PGlite (a `severity` and a SQLSTATE `code`; `detail`, `where` and `internalQuery` can quote
 * the values of a row, and PGlite's carries the `params` too).
 */
const isPostgresError = (e: ErrorLike) => 'severity' in e && typeof e.code === 'string' && SQLSTATE.test(e.code);
const isQueryError = (e: ErrorLike) => 'params' in e || 'query' in e || isPostgresError(e);

/** The message without values: Drizzle's "Failed query: <text> params: <values>" cut, quoted values replaced. */
function messageWithoutValues(message: string, names: Set<string>): string {
  return message
    .replace(/Failed query: [\s\S]*/, 'Failed query')
    .replace(/"((?:[^"]|"")*)"/g, (quoted, inner: string) => (names.has(inner) ? quoted : '"[redacted]"'));
}

interface SafeError {
  type: string;
  message: string;
  code?: string;
  stack: string;
  cause?: SafeError;
  aggregateErrors?: SafeError[];
}

function withoutValues(e: ErrorLike, names: Set<string>, depth: number): SafeError {
  // PGlite's bundle shortens its DatabaseError's class name (to "O"); pg's is DatabaseError too.
  const type = isPostgresError(e)
    ? 'DatabaseError'
    : typeof e.constructor === 'function' && e.constructor.name
      ? e.constructor.name
      : e.name;
  const message = messageWithoutValues(e.message, names);
  const frames = (e.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
  const out: SafeError = { type, message, stack: [`${type}: ${message}`, ...frames].join('\n') };
  if (typeof e.code === 'string') out.code = e.code;
  if (depth < 8 && isErrorLike(e.cause)) out.cause = withoutValues(e.cause, names, depth + 1);
  if (depth < 8 && Array.isArray(e.errors))
    out.aggregateErrors = e.errors.filter(isErrorLike).map((x) => withoutValues(x, names, depth + 1));
  return out;
}

/**
 * pino's serializer of `err`, on every logger made here (Fastify's, jobs', requests'). An error
 * that is or wraps an error of a database query keeps only each error's class, code (the
 * SQLSTATE), message without values and stack frames: never the query's parameters, `detail`,
 * `where` or the like, which hold e-mails and card numbers. Any other error is pino's standard.
 */
function serializeError(err: unknown): unknown {
  if (!isErrorLike(err)) return err;
  const chain = errorsIn(err);
  if (![...chain].some(isQueryError)) return pino.stdSerializers.err(err);
  const names = new Set<string>();
  for (const e of chain) for (const f of IDENTIFIER_FIELDS) if (typeof e[f] === 'string') names.add(e[f]);
  return withoutValues(err, names, 0);
}

export function createLogger(
  config: Pick<Config, 'logLevel' | 'environment'> & {
    logFormat?: Config['logFormat'];
    observability?: Pick<Config['observability'], 'otlpEndpoint'>;
  },
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level: config.logLevel,
      // With tracing on, each line written inside a span carries its trace id; off, no mixin runs.
      ...(config.observability?.otlpEndpoint ? { mixin: traceMixin } : {}),
      base: { service: 'coffer', env: config.environment },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? (pretty(config.logFormat) ? prettyStream() : pino.destination({ sync: false })),
  );
}

/** Pretty for a person: LOG_FORMAT=pretty, or unset with stdout a terminal. */
function pretty(format: Config['logFormat'] | undefined): boolean {
  return format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
}

/** One coloured line per entry; the fields pino-pretty would repeat on every line are left out. */
function prettyStream(): pino.DestinationStream {
  return pinoPretty({
    colorize: process.stdout.isTTY === true,
    ignore: 'pid,hostname,service,env',
    translateTime: 'SYS:HH:MM:ss.l',
  });
}
