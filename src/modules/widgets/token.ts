// The widget payload (decisions §11): base64 of a signed, short-lived JWT (HS256 with
// WIDGET_SIGNING_KEY) naming the client, the wallet and the user. It carries ids only, so
// showing it to the browser reveals nothing; only the widget host, which holds the key, can
// check it.
import { randomUUID } from 'node:crypto';
import { SignJWT, errors, jwtVerify } from 'jose';
import { apiError } from '../../http/errors.ts';

export const WIDGET_TOKEN_TTL_S = 15 * 60;
const ISSUER = 'coffer';
const AUDIENCE = 'coffer-widget';

export interface WidgetClaims {
  clientId: string;
  walletId: string;
  userId: string;
  /**
   * The user's session version when issued (sessions_revoked_at in ms, 0 if never): a
   * verified phone change moves it, which ends every payload issued before.
   */
  sessionVersion: number;
  /** The purchase amount the backend asked for, if any: the widgets' default amount. */
  purchaseAmount?: number;
  /** Seconds since the epoch, as in the token. */
  issuedAt: number;
  expiresAt: number;
}

export async function signWidgetPayload(key: Buffer, c: { clientId: string; walletId: string; userId: string; sessionVersion: number; purchaseAmount?: number; now: Date }): Promise<{ payload: string; id: string; expiresAt: Date }> {
  const iat = Math.floor(c.now.getTime() / 1000);
  const id = randomUUID();
  const jwt = await new SignJWT({ cid: c.clientId, wid: c.walletId, sv: c.sessionVersion, ...(c.purchaseAmount !== undefined ? { amt: c.purchaseAmount } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(c.userId)
    .setJti(id)
    .setIssuedAt(iat)
    .setExpirationTime(iat + WIDGET_TOKEN_TTL_S)
    .sign(key);
  return { payload: Buffer.from(jwt).toString('base64'), id, expiresAt: new Date((iat + WIDGET_TOKEN_TTL_S) * 1000) };
}

/** Checks a payload's signature, audience and lifetime; 401 Unauthorized otherwise. */
export async function verifyWidgetPayload(key: Buffer, payload: string, now: Date): Promise<WidgetClaims> {
  let jwt: string;
  try {
    jwt = Buffer.from(payload, 'base64').toString('utf8');
  } catch {
    throw apiError('Unauthorized', 'The widget payload is malformed.');
  }
  try {
    const { payload: p } = await jwtVerify(jwt, key, {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['HS256'],
      currentDate: now,
      requiredClaims: ['sub', 'iat', 'exp', 'jti'],
    });
    if (typeof p.cid !== 'string' || typeof p.wid !== 'string' || typeof p.sv !== 'number') throw apiError('Unauthorized', 'The widget payload is malformed.');
    const amount = typeof p.amt === 'number' && Number.isSafeInteger(p.amt) && p.amt >= 0 ? p.amt : undefined;
    return { clientId: p.cid, walletId: p.wid, userId: p.sub!, sessionVersion: p.sv, ...(amount !== undefined ? { purchaseAmount: amount } : {}), issuedAt: p.iat!, expiresAt: p.exp! };
  } catch (err) {
    if (err instanceof errors.JWTExpired) throw apiError('Unauthorized', 'The widget payload has expired; fetch a new one from your backend.');
    if (err instanceof errors.JOSEError) throw apiError('Unauthorized', 'The widget payload is not valid.');
    throw err;
  }
}
