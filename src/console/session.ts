// Console sessions: a random 32-byte id in an HttpOnly, SameSite=Strict cookie (Secure, with
// the __Host- prefix, when the console's public URL is https), stored only as its SHA-256; a
// CSRF token per session that every POST carries in a hidden field, compared in constant time.
// A session holds only as long as what it signed in with: a merchant's, the secret (its row
// names it, and deleting the secret deletes the session); an operator's, the ADMIN_TOKEN of the
// process serving it (checked on every request against an HMAC of the token).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, lt } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Executor } from '../db/open.ts';
import { clientSecrets, consoleSessions } from '../db/schema.ts';

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

/** What a session signs in with, and so what it lasts only as long as. */
export type SessionBinding =
  | { role: 'merchant'; clientId: string; secretId: string }
  | { role: 'operator'; adminToken: string };

/** An operator session's bond to ADMIN_TOKEN: keyed by the session id, which the database never holds. */
const adminTokenMac = (sessionId: string, adminToken: string) =>
  createHmac('sha256', sessionId).update(adminToken).digest();

export async function createSession(
  db: Executor,
  o: { binding: SessionBinding; now: Date; ttlMs: number },
): Promise<{ id: string; row: SessionRow }> {
  const id = randomToken();
  const b = o.binding;
  const [row] = await db
    .insert(consoleSessions)
    .values({
      idHash: hash(id),
      role: b.role,
      clientId: b.role === 'merchant' ? b.clientId : null,
      secretId: b.role === 'merchant' ? b.secretId : null,
      adminTokenMac: b.role === 'operator' ? adminTokenMac(id, b.adminToken) : null,
      csrfToken: randomToken(),
      createdAt: o.now,
      expiresAt: new Date(o.now.getTime() + o.ttlMs),
    })
    .returning();
  return { id, row: row! };
}

/**
 * The session of a cookie, if it still holds: not expired; a merchant's secret still there; an
 * operator's token the one this process has (`adminToken`: undefined where the operator may not
 * sign in). An operator session of another token is deleted: the token changed.
 */
export async function findSession(
  db: Executor,
  id: string | undefined,
  o: { now: Date; adminToken: string | undefined },
): Promise<SessionRow | undefined> {
  if (!id || id.length > 128) return undefined;
  const [found] = await db
    .select({ session: consoleSessions, secretId: clientSecrets.id })
    .from(consoleSessions)
    .leftJoin(
      clientSecrets,
      and(eq(clientSecrets.id, consoleSessions.secretId), eq(clientSecrets.clientId, consoleSessions.clientId)),
    )
    .where(and(eq(consoleSessions.idHash, hash(id)), gt(consoleSessions.expiresAt, o.now)));
  if (!found) return undefined;
  const { session } = found;
  if (session.role === 'merchant') return found.secretId ? session : undefined;
  if (o.adminToken === undefined || !session.adminTokenMac) return undefined;
  const mac = session.adminTokenMac;
  if (mac.length === 32 && timingSafeEqual(mac, adminTokenMac(id, o.adminToken))) return session;
  await deleteSession(db, id);
  return undefined;
}

export async function deleteSession(db: Executor, id: string): Promise<void> {
  await db.delete(consoleSessions).where(eq(consoleSessions.idHash, hash(id)));
}

/** "Sign out everywhere": every session of the merchant of `s`, or every operator session. */
export async function deleteSessionsLike(db: Executor, s: SessionRow): Promise<number> {
  const where =
    s.role === 'operator'
      ? eq(consoleSessions.role, 'operator')
      : and(eq(consoleSessions.role, 'merchant'), eq(consoleSessions.clientId, s.clientId!));
  return (await db.delete(consoleSessions).where(where).returning({ role: consoleSessions.role })).length;
}

export async function purgeExpiredSessions(db: Executor, now: Date): Promise<number> {
  return (
    await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now)).returning({ role: consoleSessions.role })
  ).length;
}
