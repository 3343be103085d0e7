// The admin API's and the metrics scraper's bearer tokens (ADMIN_TOKEN, METRICS_TOKEN) are
// generated, never chosen: `cft_` and the base64url of 32 or more random bytes followed by the
// first 4 bytes of their SHA-256 (`coffer token` prints one). The checksum is what tells a
// generated token from one a person typed: no estimate of a typed phrase's entropy can, and a
// phrase passes the checksum once in four billion tries.
import { createHash, randomBytes } from 'node:crypto';

const TOKEN_PREFIX = 'cft_';
const RANDOM_BYTES = 32;
const CHECK_BYTES = 4;

const checksum = (random: Buffer) => createHash('sha256').update(random).digest().subarray(0, CHECK_BYTES);

/** A new token: `cft_` and 48 base64url characters. */
export function generateToken(): string {
  const random = randomBytes(RANDOM_BYTES);
  return TOKEN_PREFIX + Buffer.concat([random, checksum(random)]).toString('base64url');
}

/** Whether `token` is in the generated format, its checksum included. */
export function isGeneratedToken(token: string): boolean {
  if (!token.startsWith(TOKEN_PREFIX)) return false;
  const body = token.slice(TOKEN_PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return false;
  const bytes = Buffer.from(body, 'base64url');
  // The round trip refuses a body whose last character carries bits no byte holds.
  if (bytes.length < RANDOM_BYTES + CHECK_BYTES || bytes.toString('base64url') !== body) return false;
  return checksum(bytes.subarray(0, -CHECK_BYTES)).equals(bytes.subarray(-CHECK_BYTES));
}

/** The refusal of a configured token that is not generated, naming the variable and the fix. */
export function tokenProblem(name: string, token: string): string | undefined {
  if (isGeneratedToken(token)) return undefined;
  return `${name} must be a generated token (cft_ followed by 48 or more base64url characters with a checksum; a chosen phrase is refused): make one with \`npx coffer token\``;
}
