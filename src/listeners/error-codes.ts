// Which error codes each API operation can answer with, for the OpenAPI document. Codes any
// route can give come from the status; the rest are what the suite has seen each operation
// return (error-codes.json, kept complete by src/test/openapi-responses.ts: a code the suite
// sees that is not listed fails it; UPDATE_ERROR_CODES=1 npm test rewrites the file).
import { readFileSync } from 'node:fs';

export type ErrorCodeMap = Record<string, Record<string, string[]>>;

export const ERROR_CODES_FILE = new URL('./error-codes.json', import.meta.url);

/** What the shared plumbing answers on any route, by status. */
export const ANY_ROUTE: Record<string, string[]> = {
  '400': ['ValidationError', 'BadRequest'],
  '401': ['Unauthorized'],
  '403': ['ClientDisabled'],
  '413': ['PayloadTooLarge'],
  '414': ['UriTooLong'],
  '415': ['UnsupportedMediaType'],
  '429': ['RateLimitExceeded'],
  '503': ['ServiceUnavailable'],
};

let observed: ErrorCodeMap | undefined;

/** `METHOD /openapi/{path}` as the document writes it. */
const operationKey = (method: string, url: string) =>
  `${method.toUpperCase()} ${url.replace(/:([A-Za-z]+)/g, '{$1}').replace(/\/$/, '')}`;

export function errorCodesFor(method: string, url: string): Record<string, string[]> {
  observed ??= JSON.parse(readFileSync(ERROR_CODES_FILE, 'utf8')) as ErrorCodeMap;
  const seen = observed[operationKey(method, url)] ?? {};
  const out: Record<string, string[]> = {};
  for (const status of new Set([...Object.keys(ANY_ROUTE), ...Object.keys(seen)])) {
    out[status] = [...new Set([...(ANY_ROUTE[status] ?? []), ...(seen[status] ?? [])])].sort();
  }
  return out;
}
