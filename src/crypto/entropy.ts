// A conservative estimate of how many bits of entropy a secret someone chose carries (the
// ADMIN_TOKEN). Each character is worth log2 of the alphabet its character classes span
// (hex digits 16; otherwise lower case 26, upper case 26, digits 10, anything else 33, added
// up), except characters that add nothing an attacker would not guess:
//   - a repeat of the character before it (`aaaa`),
//   - the continuation of a run with a constant step (`abcd`, `1234`, `9753`),
//   - the end of a three-character sequence seen earlier in the token (`passwordpassword`).
// And a run of four or more letters of one case is taken for a word: worth at most WORD_BITS
// (a pick from a million-word list), whatever its length (`correct horse battery staple`).
// Random tokens lose almost nothing: `openssl rand -base64 48` estimates at about 400 bits,
// `openssl rand -hex 32` at about 250; typed phrases and patterns fall far below.

const classes: [RegExp, number][] = [
  [/[a-z]/, 26],
  [/[A-Z]/, 26],
  [/[0-9]/, 10],
  [/[^a-zA-Z0-9]/, 33],
];

const WORD_BITS = 20;
const WORD = /[a-z]{4,}|[A-Z]{4,}/g;

export function estimateEntropyBits(token: string): number {
  const alphabet = /^[0-9a-f]+$|^[0-9A-F]+$/.test(token)
    ? 16
    : classes.reduce((n, [re, size]) => (re.test(token) ? n + size : n), 0);
  if (alphabet === 0) return 0;
  const perChar = Math.log2(alphabet);
  // Whether each character adds anything (see above).
  const adds = (i: number): boolean => {
    const c = token.charCodeAt(i);
    if (i >= 1 && c === token.charCodeAt(i - 1)) return false;
    if (i >= 2 && c - token.charCodeAt(i - 1) === token.charCodeAt(i - 1) - token.charCodeAt(i - 2)) return false;
    return !(i >= 3 && token.lastIndexOf(token.slice(i - 2, i + 1), i - 3) >= 0);
  };
  const bitsOf = (from: number, to: number) => {
    let n = 0;
    for (let i = from; i < to; i++) if (adds(i)) n++;
    return n * perChar;
  };
  let bits = 0;
  let at = 0;
  // Hex tokens have no words: their letters are digits.
  for (const m of alphabet === 16 ? [] : token.matchAll(WORD)) {
    bits += bitsOf(at, m.index) + Math.min(WORD_BITS, bitsOf(m.index, m.index + m[0].length));
    at = m.index + m[0].length;
  }
  return bits + bitsOf(at, token.length);
}

/** What a generated or configured ADMIN_TOKEN must reach. */
export const MIN_TOKEN_ENTROPY_BITS = 128;
