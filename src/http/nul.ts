// Strings PostgreSQL cannot store fail in the database (a 500) wherever they are stored or
// compared, so they are refused as bad input (400) where they can arrive:
// - U+0000, which text and jsonb cannot hold: in a JSON body (as the escape \u0000; a raw control
//   character is already invalid JSON), the query string and the path (as %00).
// - A lone surrogate (U+D800 to U+DFFF without its pair), which is not a character: UTF-8 cannot
//   encode it and jsonb refuses its escape. Only a JSON body carries one (as an escape such as
//   \uD800): percent-encoded, it is invalid UTF-8, which the query string decodes to U+FFFD and
//   the router refuses in a path (400).
import { apiError } from './errors.ts';

/** With the u flag, a surrogate matches only where it is not half of a pair. */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;

const NUL_MESSAGE = 'Strings may not contain the NUL character (U+0000).';
const SURROGATE_MESSAGE =
  'Strings must be well-formed UTF-16: this one holds a lone surrogate (a \\uD800 to \\uDFFF escape without its pair). Send the character itself, or both halves of its pair.';

type Flaw = typeof NUL_MESSAGE | typeof SURROGATE_MESSAGE;

function flawOf(s: string): Flaw | undefined {
  if (s.includes('\u0000')) return NUL_MESSAGE;
  if (LONE_SURROGATE.test(s)) return SURROGATE_MESSAGE;
  return undefined;
}

// A pointer's key as JSON Pointer escapes it; a lone surrogate in it shown as U+FFFD, so the
// error document itself is well-formed for every client.
const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1').replace(LONE_SURROGATES, '\uFFFD');

/** The JSON pointer of the first key or string value (in document order) that cannot be stored, and why. */
function findFlaw(value: unknown, pointer: string): { pointer: string; flaw: Flaw } | undefined {
  if (typeof value === 'string') {
    const flaw = flawOf(value);
    return flaw === undefined ? undefined : { pointer, flaw };
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = findFlaw(v, `${pointer}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const flaw = flawOf(k);
      if (flaw !== undefined) return { pointer: `${pointer}/${escape(k)}`, flaw };
      const found = findFlaw(v, `${pointer}/${escape(k)}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** Either can only come from an escape in the JSON text: a fast pre-check before the walk. */
const ESCAPED_FLAW = /\\u(?:0000|[dD][89a-fA-F])/;

/** Throws 400 for a parsed body with U+0000 or a lone surrogate in it; `text` is the raw body. */
export function refuseUnstorableInBody(text: string, parsed: unknown): void {
  if (!ESCAPED_FLAW.test(text)) return;
  const found = findFlaw(parsed, '');
  if (found !== undefined) throw apiError('ValidationError', found.flaw, { pointer: found.pointer });
}

/** Throws 400 for a request target with %00 in it (the query parameter named when it is one). */
export function refuseNulInUrl(url: string): void {
  if (!/%00/.test(url)) return;
  const q = url.indexOf('?');
  for (const [name, value] of q >= 0 ? new URLSearchParams(url.slice(q + 1)) : []) {
    if (name.includes('\u0000') || value.includes('\u0000'))
      throw apiError('BadRequest', NUL_MESSAGE, { parameter: name.replaceAll('\u0000', '') });
  }
  throw apiError('BadRequest', NUL_MESSAGE);
}
