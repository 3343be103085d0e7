// pino, with redaction as a second line of defence: request logs never include headers or
// bodies, but any object that reaches a log line with these names is censored.
import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';
import { traceMixin } from './observability/tracing.ts';

export const REDACT_PATHS = [
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
 * A request URL fit for the log: every query value replaced, the parameter names kept. Query
 * strings carry e-mails and phone numbers (`filter[email]=…`); paths carry ids only. A string
 * scan, no parsing: it runs on every request line.
 */
export function redactQuery(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q + 1) + url.slice(q + 1).replace(/=[^&]*/g, '=[redacted]');
}

export function createLogger(
  config: Pick<Config, 'logLevel' | 'environment'> & { observability?: Pick<Config['observability'], 'otlpEndpoint'> },
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level: config.logLevel,
      // With tracing on, each line written inside a span carries its trace id; off, no mixin runs.
      ...(config.observability?.otlpEndpoint ? { mixin: traceMixin } : {}),
      base: { service: 'coffer', env: config.environment },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ sync: false }),
  );
}
