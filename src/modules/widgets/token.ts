// Widget tokens (docs/adr/0013-widget-payloads.md): signed, short-lived JWTs (HS256 with WIDGET_SIGNING_KEY). They
// carry ids only, so showing them to the browser reveals nothing; only the widget host, which
// holds the key, can check them. Three kinds, each with its own audience, so a token of one kind
// is never accepted where another is expected and no kind grants more than it names:
//   wallet          the wallet payload: one wallet's widgets (base64 of the JWT, as the spec asks)
//   linked-account  the linked-account widget of one payment intent: that account's summary only
//   session         a PaymentMethods widget session: the merchant's payment methods, no user data
import { randomUUID } from 'node:crypto';
import { SignJWT, errors, jwtVerify, type JWTPayload } from 'jose';
import { apiError } from '../../http/errors.ts';

const WIDGET_TOKEN_TTL_S = 15 * 60;
const ISSUER = 'coffer';
const AUDIENCE = {
  wallet: 'coffer-widget',
  'linked-account': 'coffer-widget:linked-account',
  session: 'coffer-widget:session',
} as const;
type Kind = keyof typeof AUDIENCE;

/** Session tokens read as what they are (Accrue's `wgt_session_…`); base64url keeps them URL-safe. */
const SESSION_TOKEN_PREFIX = 'wgt_session_';

interface Signed {
  jwt: string;
  id: string;
  expiresAt: Date;
}

async function sign(
  key: Buffer,
  kind: Kind,
  claims: JWTPayload,
  subject: string | undefined,
  now: Date,
): Promise<Signed> {
  const iat = Math.floor(now.getTime() / 1000);
  const id = randomUUID();
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE[kind])
    .setJti(id);
  if (subject !== undefined) jwt = jwt.setSubject(subject);
  return {
    jwt: await jwt
      .setIssuedAt(iat)
      .setExpirationTime(iat + WIDGET_TOKEN_TTL_S)
      .sign(key),
    id,
    expiresAt: new Date((iat + WIDGET_TOKEN_TTL_S) * 1000),
  };
}

/** Checks a token's signature, audience (its kind) and lifetime; 401 Unauthorized otherwise. */
async function verify(key: Buffer, kind: Kind, jwt: string, now: Date, required: string[]): Promise<JWTPayload> {
  try {
    const { payload } = await jwtVerify(jwt, key, {
      issuer: ISSUER,
      audience: AUDIENCE[kind],
      algorithms: ['HS256'],
      currentDate: now,
      requiredClaims: ['iat', 'exp', 'jti', ...required],
    });
    return payload;
  } catch (err) {
    if (err instanceof errors.JWTExpired)
      throw apiError('Unauthorized', 'The widget payload has expired; fetch a new one from your backend.');
    if (err instanceof errors.JOSEError) throw apiError('Unauthorized', 'The widget payload is not valid.');
    throw err;
  }
}

const malformed = () => apiError('Unauthorized', 'The widget payload is malformed.');
const isString = (v: unknown): v is string => typeof v === 'string';

/** What every token that names a wallet carries. */
interface WalletScope {
  clientId: string;
  walletId: string;
  userId: string;
  /**
   * The user's session version when issued (sessions_revoked_at in ms, 0 if never): a
   * verified phone change moves it, which ends every token issued before.
   */
  sessionVersion: number;
}

export interface WidgetClaims extends WalletScope {
  /** The purchase amount the backend asked for, if any: the widgets' default amount. */
  purchaseAmount?: number;
  /** Seconds since the epoch, as in the token. */
  issuedAt: number;
  expiresAt: number;
}

const walletClaims = (c: WalletScope) => ({ cid: c.clientId, wid: c.walletId, sv: c.sessionVersion });

function walletScopeOf(p: JWTPayload): WalletScope {
  if (!isString(p.cid) || !isString(p.wid) || typeof p.sv !== 'number') throw malformed();
  return { clientId: p.cid, walletId: p.wid, userId: p.sub!, sessionVersion: p.sv };
}

const fromBase64 = (payload: string) => Buffer.from(payload, 'base64').toString('utf8');

export async function signWidgetPayload(
  key: Buffer,
  c: WalletScope & { purchaseAmount?: number; now: Date },
): Promise<{ payload: string; id: string; expiresAt: Date }> {
  const claims = { ...walletClaims(c), ...(c.purchaseAmount !== undefined ? { amt: c.purchaseAmount } : {}) };
  const s = await sign(key, 'wallet', claims, c.userId, c.now);
  return { payload: Buffer.from(s.jwt).toString('base64'), id: s.id, expiresAt: s.expiresAt };
}

/** A wallet payload's claims; 401 Unauthorized when it is not a valid, current wallet payload. */
export async function verifyWidgetPayload(key: Buffer, payload: string, now: Date): Promise<WidgetClaims> {
  const p = await verify(key, 'wallet', fromBase64(payload), now, ['sub']);
  const amount = typeof p.amt === 'number' && Number.isSafeInteger(p.amt) && p.amt >= 0 ? p.amt : undefined;
  return {
    ...walletScopeOf(p),
    ...(amount !== undefined ? { purchaseAmount: amount } : {}),
    issuedAt: p.iat!,
    expiresAt: p.exp!,
  };
}

export interface LinkedAccountClaims extends WalletScope {
  paymentIntentId: string;
  linkedAccountId: string;
}

export async function signLinkedAccountPayload(
  key: Buffer,
  c: LinkedAccountClaims & { now: Date },
): Promise<{ payload: string; id: string; expiresAt: Date }> {
  const s = await sign(
    key,
    'linked-account',
    { ...walletClaims(c), pid: c.paymentIntentId, lid: c.linkedAccountId },
    c.userId,
    c.now,
  );
  return { payload: Buffer.from(s.jwt).toString('base64'), id: s.id, expiresAt: s.expiresAt };
}

export async function verifyLinkedAccountPayload(
  key: Buffer,
  payload: string,
  now: Date,
): Promise<LinkedAccountClaims> {
  const p = await verify(key, 'linked-account', fromBase64(payload), now, ['sub']);
  if (!isString(p.pid) || !isString(p.lid)) throw malformed();
  return { ...walletScopeOf(p), paymentIntentId: p.pid, linkedAccountId: p.lid };
}

export const WIDGET_TYPES = ['PaymentMethods'] as const;
export type WidgetType = (typeof WIDGET_TYPES)[number];

export interface SessionClaims {
  clientId: string;
  widgetType: WidgetType;
}

export async function signWidgetSession(
  key: Buffer,
  c: SessionClaims & { now: Date },
): Promise<{ sessionToken: string; id: string; expiresAt: Date }> {
  const s = await sign(key, 'session', { cid: c.clientId, wtp: c.widgetType }, undefined, c.now);
  return {
    sessionToken: SESSION_TOKEN_PREFIX + Buffer.from(s.jwt).toString('base64url'),
    id: s.id,
    expiresAt: s.expiresAt,
  };
}

export async function verifyWidgetSession(key: Buffer, sessionToken: string, now: Date): Promise<SessionClaims> {
  if (!sessionToken.startsWith(SESSION_TOKEN_PREFIX)) throw malformed();
  const p = await verify(
    key,
    'session',
    Buffer.from(sessionToken.slice(SESSION_TOKEN_PREFIX.length), 'base64url').toString('utf8'),
    now,
    [],
  );
  if (!isString(p.cid) || !(WIDGET_TYPES as readonly unknown[]).includes(p.wtp)) throw malformed();
  return { clientId: p.cid, widgetType: p.wtp as WidgetType };
}
