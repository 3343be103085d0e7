// PostgreSQL text and jsonb cannot hold U+0000, so a string containing it failed in the database
// (a 500) wherever it was stored or compared. It is refused as bad input where it can arrive:
// a JSON body (as the escape \u0000; a raw control character is already invalid JSON), the
// query string and the path (as %00).
import { apiError } from './errors.ts';

const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** The JSON pointer of the first key or string value holding U+0000, if any. */
function findNul(value: unknown, pointer: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? pointer : undefined;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = findNul(v, `${pointer}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return `${pointer}/${escape(k)}`;
      const found = findNul(v, `${pointer}/${escape(k)}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

const message = 'Strings may not contain the NUL character (U+0000).';

/** Throws 400 for a parsed body with U+0000 in it; `text` is the raw body (a fast pre-check). */
export function refuseNulInBody(text: string, parsed: unknown): void {
  if (!text.includes('\\u0000')) return;
  const pointer = findNul(parsed, '');
  if (pointer !== undefined) throw apiError('ValidationError', message, { pointer });
}

/** Throws 400 for a request target with %00 in it (the query parameter named when it is one). */
export function refuseNulInUrl(url: string): void {
  if (!/%00/.test(url)) return;
  const q = url.indexOf('?');
  for (const [name, value] of q >= 0 ? new URLSearchParams(url.slice(q + 1)) : []) {
    if (name.includes('\u0000') || value.includes('\u0000'))
      throw apiError('BadRequest', message, { parameter: name.replaceAll('\u0000', '') });
  }
  throw apiError('BadRequest', message);
}
