// Console sessions: a random 32-byte id in an HttpOnly, SameSite=Strict cookie (Secure, with
// the __Host- prefix, when the console's public URL is https), stored only as its SHA-256; a
// CSRF token per session that every POST carries in a hidden field, compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, lt } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Executor } from '../db/open.ts';
import { consoleSessions } from '../db/schema.ts';

export type SessionRow = typeof consoleSessions.$inferSelect;

export interface CookieNames {
  session: string;
  /** The sign-in form's token, before there is a session (login CSRF). */
  signIn: string;
  secure: boolean;
}

export function cookieNames(publicUrl: string): CookieNames {
  const secure = publicUrl.startsWith('https:');
  return secure
    ? { session: '__Host-coffer_console', signIn: '__Host-coffer_console_sign_in', secure }
    : { session: 'coffer_console', signIn: 'coffer_console_sign_in', secure };
}

const hash = (value: string) => createHash('sha256').update(value).digest();

export const randomToken = () => randomBytes(32).toString('base64url');

/** Equal strings, compared in constant time (through their hashes, so lengths leak nothing). */
export function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== 'string' || given.length === 0 || given.length > 1024) return false;
  return timingSafeEqual(hash(given), hash(expected));
}

export function readCookies(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    if (name && !(name in out)) out[name] = part.slice(i + 1).trim();
  }
  return out;
}

export function setCookie(reply: FastifyReply, names: CookieNames, name: string, value: string, maxAgeS: number): void {
  const attrs = [
    `${name}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeS}`,
    ...(names.secure ? ['Secure'] : []),
  ];
  const prior = reply.getHeader('set-cookie');
  const list = prior === undefined ? [] : Array.isArray(prior) ? prior.map(String) : [String(prior)];
  reply.header('set-cookie', [...list, attrs.join('; ')]);
}

export async function createSession(
  db: Executor,
  o: { role: 'operator' | 'merchant'; clientId: string | null; now: Date; ttlMs: number },
): Promise<{ id: string; row: SessionRow }> {
  const id = randomToken();
  const [row] = await db
    .insert(consoleSessions)
    .values({
      idHash: hash(id),
      role: o.role,
      clientId: o.clientId,
      csrfToken: randomToken(),
      createdAt: o.now,
      expiresAt: new Date(o.now.getTime() + o.ttlMs),
    })
    .returning();
  return { id, row: row! };
}

export async function findSession(db: Executor, id: string | undefined, now: Date): Promise<SessionRow | undefined> {
  if (!id || id.length > 128) return undefined;
  const [row] = await db
    .select()
    .from(consoleSessions)
    .where(and(eq(consoleSessions.idHash, hash(id)), gt(consoleSessions.expiresAt, now)));
  return row;
}

export async function deleteSession(db: Executor, id: string): Promise<void> {
  await db.delete(consoleSessions).where(eq(consoleSessions.idHash, hash(id)));
}

export async function purgeExpiredSessions(db: Executor, now: Date): Promise<number> {
  return (
    await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now)).returning({ role: consoleSessions.role })
  ).length;
}
