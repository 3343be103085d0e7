// Merchants (clients) and their API secrets.
import { hash, randomBytes } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Environment } from '../../config.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { mergeSettings, type ClientSettingsInput } from './settings.ts';
import * as q from './sql.ts';

export interface NewSecret {
  row: q.ClientSecretRow;
  /** The plain secret: returned once, never stored. */
  secret: string;
}

/**
 * SHA-256 of a secret (UTF-8): what the database keeps and what requests are compared against.
 * Every API request hashes its secret, so this is the one-shot `crypto.hash`, cheaper than a `createHash` object.
 */
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

/** What every secret of an environment starts with; the authenticator refuses any other. */
export const secretPrefix = (environment: Environment) => `sk_${environment}_`;

/** `sk_<env>_` + 32 random bytes (base64url): 256 bits, so a fast hash is enough at rest. */
function generateSecret(environment: Environment): string {
  return `${secretPrefix(environment)}${randomBytes(32).toString('base64url')}`;
}

async function addSecret(db: Executor, clientId: string, environment: Environment, now: Date): Promise<NewSecret> {
  const secret = generateSecret(environment);
  const row = await q.insertClientSecret(db, {
    id: uuidv7(),
    clientId,
    hash: hashSecret(secret),
    hint: secret.slice(-4),
    createdAt: now,
  });
  return { row, secret };
}

/** The fee counterparty must be one of the client's own. */
async function checkFeeCounterparty(
  db: Executor,
  clientId: string | undefined,
  settings: ClientSettingsInput | undefined,
): Promise<void> {
  const id = settings?.feeCounterpartyId;
  if (!id) return;
  if (!clientId || !(await q.hasCounterparty(db, clientId, id))) {
    throw apiError('CounterpartyNotFound', `The client has no counterparty ${id}.`, {
      status: 400,
      pointer: '/data/attributes/settings/feeCounterpartyId',
    });
  }
}

export async function createClient(
  db: Db,
  opts: { name: string; settings?: ClientSettingsInput; environment: Environment; now: Date },
): Promise<{ client: q.ClientRow; secret: NewSecret }> {
  await checkFeeCounterparty(db, undefined, opts.settings);
  return db.transaction(async (tx) => {
    const client = await q.insertClient(tx, {
      id: uuidv7(),
      name: opts.name,
      settings: opts.settings ?? {},
      createdAt: opts.now,
      updatedAt: opts.now,
    });
    const secret = await addSecret(tx, client.id, opts.environment, opts.now);
    return { client, secret };
  });
}

export async function getClient(db: Executor, id: string): Promise<q.ClientRow> {
  const client = await q.findClient(db, id);
  if (!client) throw apiError('ClientNotFound', `No client ${id}.`);
  return client;
}

export async function updateClient(
  db: Db,
  opts: { id: string; name?: string; disabled?: boolean; settings?: ClientSettingsInput; now: Date },
): Promise<q.ClientRow> {
  return db.transaction(async (tx) => {
    const current = await q.findClient(tx, opts.id, { forUpdate: true });
    if (!current) throw apiError('ClientNotFound', `No client ${opts.id}.`);
    await checkFeeCounterparty(tx, current.id, opts.settings);
    const patch: Parameters<typeof q.updateClientRow>[2] = { updatedAt: opts.now };
    if (opts.name !== undefined) patch.name = opts.name;
    if (opts.disabled !== undefined) patch.disabled = opts.disabled;
    if (opts.settings !== undefined)
      patch.settings = mergeSettings(current.settings as ClientSettingsInput, opts.settings);
    return (await q.updateClientRow(tx, opts.id, patch))!;
  });
}

export async function rotateClientSecret(
  db: Db,
  opts: { clientId: string; environment: Environment; now: Date },
): Promise<NewSecret> {
  return db.transaction(async (tx) => {
    if (!(await q.findClient(tx, opts.clientId))) throw apiError('ClientNotFound', `No client ${opts.clientId}.`);
    return addSecret(tx, opts.clientId, opts.environment, opts.now);
  });
}

/** Deleting a secret ends the console sessions signed in with it (their foreign key cascades). */
export async function removeClientSecret(db: Executor, opts: { clientId: string; secretId: string }): Promise<void> {
  if (!(await q.findClient(db, opts.clientId))) throw apiError('ClientNotFound', `No client ${opts.clientId}.`);
  if (!(await q.deleteSecretRow(db, opts.clientId, opts.secretId))) {
    throw apiError('ClientSecretNotFound', `Client ${opts.clientId} has no secret ${opts.secretId}.`);
  }
}
