// Drizzle table definitions. drizzle-kit turns changes here into SQL migrations under
// src/db/migrations (npm run db:generate); the same migrations run on PGlite and PostgreSQL.
//
// Every merchant-owned table carries client_id, and every query filters on it, so one
// merchant never reads another's rows and the schema can be distributed by merchant later.
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  customType,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const createdAt = () => ts('created_at').notNull().defaultNow();
const updatedAt = () => ts('updated_at').notNull().defaultNow();
const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (v) => (Buffer.isBuffer(v) ? v : Buffer.from(v)),
});

export const clients = pgTable('clients', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  disabled: boolean('disabled').notNull().default(false),
  settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const clientSecrets = pgTable(
  'client_secrets',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    // SHA-256 of the secret. Secrets are 32 random bytes, so a fast hash is enough: there is
    // nothing to brute-force that a slow hash would protect.
    hash: bytea('hash').notNull(),
    /** Last four characters, to tell secrets apart in listings. */
    hint: text('hint').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('client_secrets_client_idx').on(t.clientId)],
);

export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    publicId: text('public_id').notNull(),
    disabled: boolean('disabled').notNull().default(false),
    firstName: text('first_name'),
    lastName: text('last_name'),
    email: text('email'),
    phoneNumber: text('phone_number').notNull(),
    emailVerified: boolean('email_verified').notNull().default(false),
    phoneVerified: boolean('phone_verified').notNull().default(false),
    dateOfBirth: date('date_of_birth', { mode: 'string' }),
    referenceId: text('reference_id'),
    stableReferenceId: text('stable_reference_id'),
    attachedEmail: text('attached_email'),
    attachedPhoneNumber: text('attached_phone_number'),
    kycStatus: text('kyc_status').notNull().default('NotStarted'),
    disclosuresAcceptedAt: ts('disclosures_accepted_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('users_public_id_uq').on(t.publicId),
    uniqueIndex('users_client_phone_uq').on(t.clientId, t.phoneNumber),
    uniqueIndex('users_client_email_uq').on(t.clientId, t.email),
    uniqueIndex('users_client_reference_uq').on(t.clientId, t.referenceId),
    uniqueIndex('users_client_stable_reference_uq').on(t.clientId, t.stableReferenceId),
    index('users_client_created_idx').on(t.clientId, t.createdAt, t.id),
  ],
);

export const kycApplications = pgTable(
  'kyc_applications',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    userId: uuid('user_id').notNull().references(() => users.id),
    status: text('status').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    dateOfBirth: date('date_of_birth', { mode: 'string' }).notNull(),
    email: text('email').notNull(),
    address: jsonb('address').$type<Record<string, string>>().notNull(),
    /** When the sandbox provider decides; the KYC job picks it up then. */
    decideAfter: ts('decide_after').notNull(),
    decidedAt: ts('decided_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('kyc_applications_user_idx').on(t.clientId, t.userId, t.createdAt),
    index('kyc_applications_due_idx').on(t.decideAfter).where(sql`status = 'Pending'`),
  ],
);

export const linkedAccounts = pgTable(
  'linked_accounts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    userId: uuid('user_id').notNull().references(() => users.id),
    provider: text('provider').notNull(),
    /** The provider's own id for the account. */
    externalId: text('external_id').notNull(),
    status: text('status').notNull(),
    accountType: text('account_type').notNull(),
    accountName: text('account_name').notNull(),
    accountMask: text('account_mask').notNull(),
    institutionName: text('institution_name').notNull(),
    institutionId: text('institution_id').notNull(),
    disconnectedAt: ts('disconnected_at'),
    /** When the provider confirmed the deactivation; null while a retry is due. */
    providerDeactivatedAt: ts('provider_deactivated_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('linked_accounts_user_idx').on(t.clientId, t.userId, t.createdAt, t.id)],
);

// Rate-limit counters shared by every process on one PostgreSQL. UNLOGGED in the migration:
// losing counts in a crash is fine, paying for WAL on every flush is not.
export const rateLimitCounters = pgTable(
  'rate_limit_counters',
  {
    key: text('key').notNull(),
    windowStart: bigint('window_start', { mode: 'number' }).notNull(),
    count: integer('count').notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.windowStart] })],
);
