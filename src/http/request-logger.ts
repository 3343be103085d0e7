// Each request's `req.log`, made only when something logs through it.
//
// Fastify gives every request a child of the server's logger bound to its id. With pino's
// redaction paths (src/log.ts) making that child runs the redaction's stringifier on the
// bindings, a visible share of the server's CPU on a GET of a user. The
// request's own log line does not use it (server.ts writes that line with the id in it), and
// only an error, a retry or a console sign-in logs through `req.log`, so most requests never
// need the child: this stands in for it and makes it on the first call.
import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type LogArgs = Parameters<FastifyBaseLogger['info']>;

export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** The child Fastify would have made, made once. */
  get #real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#real.level = level;
  }

  info(...args: LogArgs): void {
    this.#real.info(...args);
  }
  error(...args: LogArgs): void {
    this.#real.error(...args);
  }
  warn(...args: LogArgs): void {
    this.#real.warn(...args);
  }
  debug(...args: LogArgs): void {
    this.#real.debug(...args);
  }
  trace(...args: LogArgs): void {
    this.#real.trace(...args);
  }
  fatal(...args: LogArgs): void {
    this.#real.fatal(...args);
  }
  silent(...args: LogArgs): void {
    this.#real.silent(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, made when first used. */
export function lazyRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options);
}
