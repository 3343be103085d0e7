// Users: creation, lookup by id or merchant reference, the merchant's attached profile.
import { randomBytes } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { uniqueViolation } from '../../db/errors.ts';
import { apiError, type ErrorCode } from '../../http/errors.ts';
import { resourceIdConflict } from '../../http/jsonapi-request.ts';
import type { Page } from '../../http/paging.ts';
import { userPath } from './render.ts';
import * as q from './sql.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A short public id (12 Crockford base32 characters) that is safe to show end users. */
function newPublicId(): string {
  const bytes = randomBytes(12);
  let out = '';
  for (const b of bytes) out += CROCKFORD[b & 31];
  return out;
}

/** Creates a user known by a phone number, an e-mail address or both (unique per merchant). */
export async function createUser(
  db: Executor,
  opts: {
    clientId: string;
    phoneNumber?: string;
    email?: string;
    firstName?: string;
    lastName?: string;
    /** The API's public URL: the existing user's link in a UserAlreadyExists error. */
    baseUrl: string;
    now: Date;
  },
): Promise<q.UserRow> {
  if (opts.phoneNumber === undefined && opts.email === undefined) {
    throw apiError('ValidationError', 'A user needs `phoneNumber` or `email` (or both).', {
      pointer: '/data/attributes',
    });
  }
  try {
    return await q.insertUser(db, {
      id: uuidv7(),
      clientId: opts.clientId,
      publicId: newPublicId(),
      phoneNumber: opts.phoneNumber ?? null,
      email: opts.email?.toLowerCase() ?? null,
      firstName: opts.firstName ?? null,
      lastName: opts.lastName ?? null,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
  } catch (err) {
    const c = uniqueViolation(err);
    if (c === 'users_client_phone_uq') {
      throw apiError('UserAlreadyExists', 'A user with this phone number already exists.', {
        pointer: '/data/attributes/phoneNumber',
        ...(await existingUser(db, opts.clientId, { phoneNumber: opts.phoneNumber }, opts.baseUrl)),
      });
    }
    if (c === 'users_client_email_uq') {
      throw apiError('UserAlreadyExists', 'A user with this e-mail already exists.', {
        pointer: '/data/attributes/email',
        ...(await existingUser(db, opts.clientId, { email: opts.email }, opts.baseUrl)),
      });
    }
    throw err;
  }
}

/** The `existing` option of a UserAlreadyExists error: the user that has the contact already. */
export async function existingUser(
  db: Executor,
  clientId: string,
  contact: { phoneNumber?: string; email?: string },
  baseUrl: string,
): Promise<{ existing?: { id: string; href: string } }> {
  const id = await q.findUserIdByContact(db, clientId, contact);
  return id ? { existing: { id, href: baseUrl + userPath(id) } } : {};
}

/** GET /users/{id}: the shown columns only. */
export async function getUserSummary(
  db: Executor,
  opts: { clientId: string; userId: string },
): Promise<q.UserSummaryRow> {
  const user = await q.findUserSummary(db, opts.clientId, opts.userId);
  if (!user) throw apiError('UserNotFound', `No user ${opts.userId}.`);
  return user;
}

/** A user named in the path: 404 when unknown or another merchant's. */
export async function getUser(
  db: Executor,
  opts: { clientId: string; userId: string; forUpdate?: boolean },
): Promise<q.UserRow> {
  const user = await q.findUser(db, opts.clientId, opts.userId, { forUpdate: opts.forUpdate });
  if (!user) throw apiError('UserNotFound', `No user ${opts.userId}.`);
  return user;
}

/**
 * Resolves a user id or one of the merchant's reference ids (docs/identity.md#users-in-detail: a UUID is tried as
 * a user id first). Two users matching one reference is ambiguous (400 ValidationError).
 */
export async function resolveUserReference(
  db: Executor,
  opts: { clientId: string; reference: string; notFound: { code: ErrorCode; status?: number } },
): Promise<q.UserRow> {
  if (UUID.test(opts.reference)) {
    const byId = await q.findUser(db, opts.clientId, opts.reference.toLowerCase());
    if (byId) return byId;
  }
  const matches = await q.findUsersByReference(db, opts.clientId, opts.reference);
  if (matches.length > 1)
    throw apiError('ValidationError', `"${opts.reference}" matches more than one user; use the user id.`);
  if (matches.length === 0) {
    throw apiError(opts.notFound.code, `No user matches "${opts.reference}".`, { status: opts.notFound.status });
  }
  return matches[0]!;
}

export async function listUsers(db: Executor, opts: { clientId: string; filters: q.UserFilters; page: Page }) {
  return q.listUserRows(db, opts.clientId, opts.filters, opts.page);
}

export interface AttachedProfilePatch {
  referenceId?: string;
  stableReferenceId?: string;
  email?: string;
  phoneNumber?: string;
}

/**
 * Updates the merchant-kept profile. Reference ids are unique per merchant across both
 * columns and immutable once set; e-mail and phone here are the merchant's own copies.
 * `resourceId` (a JSON:API body's id) must be the user's id or the reference in the URL.
 */
export async function updateAttachedProfile(
  db: Db,
  opts: {
    clientId: string;
    userReference: string;
    resourceId?: string;
    patch: AttachedProfilePatch;
    baseUrl: string;
    now: Date;
  },
): Promise<q.UserRow> {
  return db.transaction(async (tx) => {
    const found = await resolveUserReference(tx, {
      clientId: opts.clientId,
      reference: opts.userReference,
      notFound: { code: 'InvalidIdentifier', status: 400 },
    });
    if (opts.resourceId !== undefined && opts.resourceId !== found.id && opts.resourceId !== opts.userReference) {
      throw resourceIdConflict(opts.resourceId, opts.userReference);
    }
    const touchesRefs = opts.patch.referenceId !== undefined || opts.patch.stableReferenceId !== undefined;
    if (touchesRefs) await q.lockReferenceIds(tx, opts.clientId);
    const user = (await q.findUser(tx, opts.clientId, found.id, { forUpdate: true }))!;
    const set: Partial<q.UserRow> = { updatedAt: opts.now };
    for (const field of ['referenceId', 'stableReferenceId'] as const) {
      const next = opts.patch[field];
      if (next === undefined || next === user[field]) continue;
      if (user[field] !== null) {
        throw apiError('ValidationError', `${field} is already set and cannot change.`, {
          pointer: `/data/attributes/${field}`,
        });
      }
      const holder = await q.referenceTakenBy(tx, opts.clientId, next, user.id);
      if (holder) {
        throw apiError('ReferenceIdTaken', `Another user already has the reference id "${next}".`, {
          pointer: `/data/attributes/${field}`,
          existing: { id: holder, href: opts.baseUrl + userPath(holder) },
        });
      }
      set[field] = next;
    }
    if (opts.patch.email !== undefined) set.attachedEmail = opts.patch.email.toLowerCase();
    if (opts.patch.phoneNumber !== undefined) set.attachedPhoneNumber = opts.patch.phoneNumber;
    try {
      return await q.updateUserRow(tx, opts.clientId, user.id, set);
    } catch (err) {
      if (uniqueViolation(err)?.includes('reference')) throw apiError('ReferenceIdTaken');
      throw err;
    }
  });
}
