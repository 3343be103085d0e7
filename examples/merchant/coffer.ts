// The merchant backend's Coffer client: every call carries the Client-ID and the secret, which
// never leave this process.
import { randomUUID } from 'node:crypto';

export interface CofferAccount {
  /** e.g. http://localhost:3000/api/v1 */
  api: string;
  clientId: string;
  secret: string;
}

export class CofferError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const first = (body as { errors?: { code?: string; detail?: string }[] })?.errors?.[0];
    super(`Coffer answered ${status}${first ? ` ${first.code}: ${first.detail}` : ''}`);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the example reads answers loosely, as a shop would
export async function coffer<T = any>(acct: CofferAccount, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${acct.api}${path}`, {
    method,
    headers: {
      'client-id': acct.clientId,
      authorization: `Bearer ${acct.secret}`,
      ...(body === undefined ? {} : { 'content-type': 'application/vnd.api+json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new CofferError(res.status, json);
  return json as T;
}

export const newKey = () => randomUUID();
