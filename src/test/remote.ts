// Helpers for tests that drive real server processes over HTTP (process.ts starts them): a
// merchant made through the admin API, calls with its credentials, an approved funded wallet,
// and the ledger check.
import { randomUUID } from 'node:crypto';
import type { ServerProcess } from './process.ts';

const JSONAPI = 'application/vnd.api+json';

export type RemoteCall = (
  port: number,
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: any; headers: Headers }>;

/** A merchant created on `server`'s admin listener, and a caller authenticated as it. */
export async function remoteMerchant(
  server: ServerProcess,
  adminToken: string,
  settings?: Record<string, unknown>,
): Promise<{ clientId: string; call: RemoteCall }> {
  const res = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': JSONAPI },
    body: JSON.stringify({
      data: {
        type: 'Client',
        attributes: { name: `Remote ${randomUUID().slice(0, 6)}`, ...(settings ? { settings } : {}) },
      },
    }),
  });
  const created = (await res.json()) as { data: { id: string; attributes: { secret: string } } };
  const headers = {
    'client-id': created.data.id,
    authorization: `Bearer ${created.data.attributes.secret}`,
    'content-type': JSONAPI,
  };
  const call: RemoteCall = async (port, method, path, body) => {
    const r = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
      method,
      headers,
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined, headers: r.headers };
  };
  return { clientId: created.data.id, call };
}

/** A user through KYC (the server's own job decides), a linked account and a wallet. */
export async function remoteApprovedWallet(
  call: RemoteCall,
  port: number,
): Promise<{ walletId: string; accountId: string }> {
  const phone = `+1646${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  const user = (await call(port, 'POST', '/users', { data: { type: 'User', attributes: { phoneNumber: phone } } })).body
    .data;
  await call(port, 'POST', `/users/${user.id}/disclosures/kyc`);
  await call(port, 'POST', `/users/${user.id}/kyc/application`, {
    data: {
      type: 'KycApplication',
      attributes: {
        firstName: 'R',
        lastName: 'Emote',
        dateOfBirth: '1980-01-01',
        email: 'remote@example.com',
        address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US' },
      },
    },
  });
  for (let n = 0; n < 50; n++) {
    if ((await call(port, 'GET', `/users/${user.id}/kyc`)).body.data.attributes.status === 'Approved') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const account = (await call(port, 'POST', `/simulation/users/${user.id}/linked-accounts`)).body.data;
  const wallet = (await call(port, 'POST', '/wallets', { data: { type: 'Wallet', attributes: { userId: user.id } } }))
    .body.data;
  return { walletId: wallet.id, accountId: account.id };
}

export async function remoteLedger(
  server: ServerProcess,
  adminToken: string,
): Promise<{ sound: boolean; violations: unknown[] }> {
  const res = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/ledger/verify`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  const { sound, violations } = (
    (await res.json()) as { data: { attributes: { sound: boolean; violations: unknown[] } } }
  ).data.attributes;
  return { sound, violations };
}
