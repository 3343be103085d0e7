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

// ----- webhooks and the event outbox ------------------------------------------------------

export const webhooks = pgTable(
  'webhooks',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    name: text('name').notNull(),
    url: text('url').notNull(),
    /** Subscribed topics, or ["*"] for all. */
    topics: jsonb('topics').$type<string[]>().notNull(),
    enabled: boolean('enabled').notNull(),
    /** The signing secret, sealed with AES-256-GCM (it must be usable, so it cannot be hashed). */
    secretSealed: text('secret_sealed').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('webhooks_client_idx').on(t.clientId, t.createdAt, t.id)],
);

/**
 * The outbox: one row per event, written in the same transaction as the change it reports.
 * `body` is the exact JSON sent to receivers, so every attempt and replay signs the same bytes.
 */
export const events = pgTable(
  'events',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull().references(() => clients.id),
    topic: text('topic').notNull(),
    userId: uuid('user_id'),
    walletId: uuid('wallet_id'),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id').notNull(),
    body: text('body').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index('events_client_created_idx').on(t.clientId, t.createdAt, t.id),
    index('events_client_topic_idx').on(t.clientId, t.topic, t.createdAt),
  ],
);

/** One row per (event, webhook) to deliver; replays and test sends add rows. */
export const eventDeliveries = pgTable(
  'event_deliveries',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull(),
    eventId: uuid('event_id').notNull().references(() => events.id),
    webhookId: uuid('webhook_id').notNull().references(() => webhooks.id),
    /** Why this delivery exists: event, replay or test. */
    trigger: text('trigger').notNull(),
    /** pending → succeeded | failed | canceled */
    state: text('state').notNull(),
    attemptCount: integer('attempt_count').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    /** While set and in the future, a worker owns this delivery's current attempt. */
    leaseUntil: ts('lease_until'),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    completedAt: ts('completed_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('event_deliveries_due_idx').on(t.nextAttemptAt).where(sql`state = 'pending'`),
    index('event_deliveries_event_idx').on(t.eventId),
    index('event_deliveries_webhook_idx').on(t.webhookId).where(sql`state = 'pending'`),
  ],
);

export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull(),
    deliveryId: uuid('delivery_id').notNull().references(() => eventDeliveries.id),
    eventId: uuid('event_id').notNull(),
    attempt: integer('attempt').notNull(),
    startedAt: ts('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    statusCode: integer('status_code'),
    error: text('error'),
    /** The first 500 characters of the receiver's answer, for debugging. */
    responseExcerpt: text('response_excerpt'),
  },
  (t) => [index('delivery_attempts_delivery_idx').on(t.deliveryId, t.attempt), index('delivery_attempts_event_idx').on(t.eventId)],
);
