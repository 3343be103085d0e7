// Drizzle table definitions. drizzle-kit turns changes here into SQL migrations under
// src/db/migrations (npm run db:generate); the same migrations run on PGlite and PostgreSQL.
//
// Every merchant-owned table carries client_id, and every query filters on it, so one
// merchant never reads another's rows and the schema can be distributed by merchant later.
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  customType,
  date,
  index,
  integer,
  jsonb,
  PgTimestamp,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { parseTimestamptz } from '../timestamps.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
// Every timestamp read decodes through parseTimestamptz: the Date that Drizzle's decoder (new
// Date(text), V8's slower non-ISO parse) gives, in two thirds of the time; a list page decodes
// twenty to forty of them. Drizzle has no decoder option for its timestamp columns, and a
// customType would change how drizzle-kit sees them.
const decodeTimestamp = PgTimestamp.prototype.mapFromDriverValue;
PgTimestamp.prototype.mapFromDriverValue = function (this: { withTimezone: boolean }, value: unknown) {
  return typeof value === 'string' && this.withTimezone
    ? parseTimestamptz(value)
    : decodeTimestamp.call(this as PgTimestamp<never>, value as string);
};
const createdAt = () => ts('created_at').notNull().defaultNow();
const updatedAt = () => ts('updated_at').notNull().defaultNow();
const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (v) => (Buffer.isBuffer(v) ? v : Buffer.from(v)),
});

/**
 * The environment (sandbox or live) this database belongs to: one row, written by the first
 * process that starts on it. A process of the other environment refuses to start (main.ts).
 */
export const deployment = pgTable(
  'deployment',
  {
    id: boolean('id').primaryKey().default(true),
    environment: text('environment').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    check('deployment_one_row', sql`${t.id}`),
    check('deployment_environment', sql`${t.environment} in ('sandbox', 'live')`),
  ],
);

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
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
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
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    publicId: text('public_id').notNull(),
    disabled: boolean('disabled').notNull().default(false),
    firstName: text('first_name'),
    lastName: text('last_name'),
    email: text('email'),
    /** Null for a user created by e-mail address only (Accrue's CreateUser). */
    phoneNumber: text('phone_number'),
    emailVerified: boolean('email_verified').notNull().default(false),
    phoneVerified: boolean('phone_verified').notNull().default(false),
    dateOfBirth: date('date_of_birth', { mode: 'string' }),
    referenceId: text('reference_id'),
    stableReferenceId: text('stable_reference_id'),
    attachedEmail: text('attached_email'),
    attachedPhoneNumber: text('attached_phone_number'),
    /** Accrue's KYC statuses: NotStarted (disclosures accepted or not), Pending, ManualReview, AwaitingDocuments, Approved, Denied. */
    kycStatus: text('kyc_status').notNull().default('NotStarted'),
    disclosuresAcceptedAt: ts('disclosures_accepted_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    // Declared in the order the table stores its columns (a column added later comes last), as
    // every listed table's are: its list page then reads rows as stored (countedPage in
    // db/list-counts.ts; checked by src/db/stored-order.test.ts).
    /** Wallet sessions begun before this are over (a verified phone change sets it). */
    sessionsRevokedAt: ts('sessions_revoked_at'),
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

/**
 * Identity verification challenges (docs/identity.md#challenges-in-detail). Status pending → passed | failed, or
 * expired when a lapsed, unanswered challenge is replaced. The answer key never leaves the
 * database; the verification token is kept only as its SHA-256.
 */
export const identityChallenges = pgTable(
  'identity_challenges',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    status: text('status').notNull(),
    questions: jsonb('questions')
      .$type<{ id: string; prompt: string; options: { id: string; label: string }[] }[]>()
      .notNull(),
    /** questionId → the right optionId. */
    answerKey: jsonb('answer_key').$type<Record<string, string>>().notNull(),
    failedAttempts: integer('failed_attempts').notNull().default(0),
    failureReason: text('failure_reason'),
    expiresAt: ts('expires_at').notNull(),
    passedAt: ts('passed_at'),
    failedAt: ts('failed_at'),
    tokenHash: text('token_hash'),
    tokenExpiresAt: ts('token_expires_at'),
    tokenUsedAt: ts('token_used_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('identity_challenges_user_idx').on(t.clientId, t.userId, t.createdAt),
    uniqueIndex('identity_challenges_token_uq').on(t.tokenHash),
  ],
);

/** Every submission's outcome (never the answers given). */
export const identitySubmissions = pgTable(
  'identity_submissions',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    challengeId: uuid('challenge_id')
      .notNull()
      .references(() => identityChallenges.id),
    passed: boolean('passed').notNull(),
    failureReason: text('failure_reason'),
    createdAt: createdAt(),
  },
  (t) => [index('identity_submissions_challenge_idx').on(t.challengeId)],
);

/** Verified contact changes, with what they replaced (an audit trail for account takeover disputes). */
export const profileUpdates = pgTable(
  'profile_updates',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    challengeId: uuid('challenge_id')
      .notNull()
      .references(() => identityChallenges.id),
    phoneNumber: text('phone_number'),
    email: text('email'),
    previousPhoneNumber: text('previous_phone_number'),
    previousEmail: text('previous_email'),
    appliedAt: ts('applied_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index('profile_updates_user_idx').on(t.clientId, t.userId),
    uniqueIndex('profile_updates_challenge_uq').on(t.challengeId),
  ],
);

export const kycApplications = pgTable(
  'kyc_applications',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** Pending, ManualReview (both asked about), AwaitingDocuments, Approved or Denied. */
    status: text('status').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    dateOfBirth: date('date_of_birth', { mode: 'string' }).notNull(),
    email: text('email').notNull(),
    address: jsonb('address').$type<Record<string, string>>().notNull(),
    /** Accrue's application body carries these; Coffer's may not. */
    phone: text('phone'),
    ipAddress: text('ip_address'),
    /** When the KYC job next sends the application (or the documents) or asks for the provider's answer. */
    decideAfter: ts('decide_after').notNull(),
    /** When the provider acknowledged the application; null until it has it. */
    sentAt: ts('sent_at'),
    /** When the provider's answer last changed the status (ManualReview on the way, or the decision). */
    decidedAt: ts('decided_at'),
    /** When the user last finished uploading documents (POST …/document-verification/complete). */
    documentsSubmittedAt: ts('documents_submitted_at'),
    /** When the provider acknowledged that upload; null while the report is still to be sent. */
    documentsSentAt: ts('documents_sent_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('kyc_applications_user_idx').on(t.clientId, t.userId, t.createdAt),
    index('kyc_applications_due_idx').on(t.decideAfter).where(sql`status in ('Pending', 'ManualReview')`),
  ],
);

/** Links to the KYC provider's document upload page, one per request for one (the provider's call is keyed by the id). */
export const kycDocumentLinks = pgTable(
  'kyc_document_links',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    applicationId: uuid('application_id')
      .notNull()
      .references(() => kycApplications.id),
    redirectUrl: text('redirect_url').notNull(),
    /** The provider's page; null until the provider answered. */
    url: text('url'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('kyc_document_links_user_idx').on(t.clientId, t.userId, t.createdAt)],
);

export const linkedAccounts = pgTable(
  'linked_accounts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
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
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
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
 *
 * events, event_deliveries and delivery_attempts are partitioned by range of the event's id (a
 * UUIDv7: its first 48 bits are its creation time), one partition a week, so that retention
 * drops a week's partitions of the three tables together (migration 0020,
 * modules/events/partitions.ts). drizzle-kit cannot express PARTITION BY: the migration does.
 * The deliveries and attempts carry no foreign keys to the events (docs/internals.md#retention-by-partitions).
 */
export const events = pgTable(
  'events',
  {
    id: uuid('id').primaryKey(),
    // No foreign keys on the tables every payment writes (HOT_PATH_REFERENCES below).
    clientId: uuid('client_id').notNull(),
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
    id: uuid('id').notNull(),
    clientId: uuid('client_id').notNull(),
    /** The partition key: an event's deliveries (replays too) live in its partition's range. */
    eventId: uuid('event_id').notNull(),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhooks.id),
    /** Why this delivery exists: event, replay or test. */
    trigger: text('trigger').notNull(),
    /** pending → succeeded | failed | canceled; pending exactly while it is in eventDeliveryQueue. */
    state: text('state').notNull(),
    /** Attempts recorded (one in flight counts in the queue's row until it is recorded). */
    attemptCount: integer('attempt_count').notNull().default(0),
    /** While pending, when the next attempt is due (the queue's copy is the one workers read). */
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    completedAt: ts('completed_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.eventId, t.id] }),
    index('event_deliveries_event_idx').on(t.eventId),
    // The console's events by delivery state Failed: the merchant's failed deliveries' events.
    index('event_deliveries_client_failed_idx').on(t.clientId, t.eventId).where(sql`state = 'failed'`),
  ],
);

/**
 * The pending deliveries, one row each, and nothing else: what the webhook workers claim from
 * (migration 0027). A delivery that ends leaves the queue, so the queue stays as small as the
 * backlog, and a VACUUM of it takes milliseconds (the job webhook-queue-vacuum runs one every
 * few seconds). Its indexes then hold few entries of deliveries already sent, which every
 * claim's walk from the oldest entry would otherwise cross: in partial indexes on
 * event_deliveries, a week's partition of millions of rows, they stayed until a VACUUM of the
 * whole partition. The lease and the attempt in flight live here only; event_deliveries is
 * written when a delivery is made and when an attempt is recorded.
 */
export const eventDeliveryQueue = pgTable(
  'event_delivery_queue',
  {
    id: uuid('id').primaryKey(),
    eventId: uuid('event_id').notNull(),
    clientId: uuid('client_id').notNull(),
    webhookId: uuid('webhook_id').notNull(),
    /** Attempts taken, the one in flight included: a worker records its attempt only while this is still its number. */
    attemptCount: integer('attempt_count').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    /** While set and in the future, a worker owns this delivery's current attempt. */
    leaseUntil: ts('lease_until'),
    createdAt: createdAt(),
  },
  (t) => [
    index('event_delivery_queue_due_idx').on(t.nextAttemptAt),
    // Each merchant's due deliveries in order: the claim takes a few per merchant (migration 0013).
    index('event_delivery_queue_client_due_idx').on(t.clientId, t.nextAttemptAt),
    index('event_delivery_queue_webhook_idx').on(t.webhookId),
  ],
);

export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: uuid('id').notNull(),
    clientId: uuid('client_id').notNull(),
    deliveryId: uuid('delivery_id').notNull(),
    /** The partition key, as the delivery's. */
    eventId: uuid('event_id').notNull(),
    attempt: integer('attempt').notNull(),
    startedAt: ts('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    statusCode: integer('status_code'),
    error: text('error'),
    /** The first 500 characters of the receiver's answer, for debugging; only from public addresses. */
    responseExcerpt: text('response_excerpt'),
  },
  (t) => [
    primaryKey({ columns: [t.eventId, t.id] }),
    index('delivery_attempts_delivery_idx').on(t.deliveryId, t.attempt),
    index('delivery_attempts_event_idx').on(t.eventId),
  ],
);

// ----- wallets and the ledger --------------------------------------------------------------

export const wallets = pgTable(
  'wallets',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    status: text('status').notNull(),
    closedAt: ts('closed_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('wallets_client_user_uq').on(t.clientId, t.userId),
    index('wallets_client_created_idx').on(t.clientId, t.createdAt, t.id),
  ],
);

export const walletBarcodes = pgTable(
  'wallet_barcodes',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    /** 16 digits, what the scanner reads. Gift ids are 19 digits, so the two never collide. */
    lookUpId: text('look_up_id').notNull(),
    expiresAt: ts('expires_at').notNull(),
    /** Null: no limit (GenerateWalletBarcode without usageLimit). */
    usageLimit: integer('usage_limit'),
    usageCount: integer('usage_count').notNull().default(0),
    createdAt: createdAt(),
    /** Moves when the barcode is used or expired early. */
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('wallet_barcodes_look_up_uq').on(t.lookUpId), index('wallet_barcodes_wallet_idx').on(t.walletId)],
);

/**
 * A ledger account. Tracked accounts keep `balance` equal to the sum of their postings,
 * updated in the posting's transaction (and the CHECK below forbids a negative balance unless
 * allowed). Untracked accounts (the outside world, platform funding, merchant settlement) are
 * never updated row by row, so no single row serialises every movement; their balance is the
 * sum of their postings.
 */
export const ledgerAccounts = pgTable(
  'ledger_accounts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    /** wallet | counterparty | gift | client */
    ownerType: text('owner_type').notNull(),
    /** The wallet, counterparty or gift; the client itself for client-level accounts. */
    ownerId: uuid('owner_id').notNull(),
    code: text('code').notNull(),
    tracked: boolean('tracked').notNull(),
    allowNegative: boolean('allow_negative').notNull(),
    balance: bigint('balance', { mode: 'number' }).notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('ledger_accounts_owner_code_uq').on(t.clientId, t.ownerType, t.ownerId, t.code),
    index('ledger_accounts_owner_idx').on(t.ownerId),
  ],
);

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: uuid('id').primaryKey(),
    // No foreign keys on the tables every payment writes (HOT_PATH_REFERENCES below).
    clientId: uuid('client_id').notNull(),
    /** What moved: deposit.initiate, deposit.clear, withdraw, reward, payment.authorize, ... */
    kind: text('kind').notNull(),
    refType: text('ref_type').notNull(),
    refId: text('ref_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('ledger_entries_ref_idx').on(t.refType, t.refId)],
);

export const ledgerPostings = pgTable(
  'ledger_postings',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull(),
    // No foreign keys (HOT_PATH_REFERENCES below): verifyLedger checks both references.
    entryId: uuid('entry_id').notNull(),
    accountId: uuid('account_id').notNull(),
    /** Signed integer cents; an entry's postings sum to zero. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('ledger_postings_account_idx').on(t.accountId), index('ledger_postings_entry_idx').on(t.entryId)],
);

/**
 * The ledger checks' results (ledger/invariants.ts), whichever process ran them: the scheduled
 * check runs once per interval for the whole deployment, not once in each process, and every
 * process's metrics report the latest row (ledger/scheduled-check.ts). `violations` counts
 * them; `sample` holds the first 20. Rows older than 30 days are deleted as checks are recorded.
 */
export const ledgerChecks = pgTable(
  'ledger_checks',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    startedAt: ts('started_at').notNull(),
    finishedAt: ts('finished_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    violations: integer('violations').notNull(),
    sample: jsonb('sample').$type<{ rule: string; detail: string }[]>().notNull(),
  },
  (t) => [index('ledger_checks_finished_idx').on(t.finishedAt)],
);

export const counterparties = pgTable(
  'counterparties',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    label: text('label').notNull(),
    accountType: text('account_type').notNull(),
    /** The full account number, sealed; only the last four digits are ever shown. */
    accountNumberSealed: text('account_number_sealed').notNull(),
    accountNumberLast4: text('account_number_last4').notNull(),
    routingNumber: text('routing_number').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Soft delete: a deleted counterparty is gone from the API (404) but its rows and ledger accounts stay. */
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('counterparties_client_idx').on(t.clientId, t.createdAt, t.id)],
);

// ----- Counterparty money: payouts, transfers, incoming payments; external transactions -----

/**
 * Money leaving a counterparty's available balance for its own bank account. The ledger moves
 * at creation (counterparty.available → external.bank); the bank push is sent by a job after
 * commit, with the payout's id as the provider's idempotency key.
 */
export const counterpartyPayouts = pgTable(
  'counterparty_payouts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    counterpartyId: uuid('counterparty_id')
      .notNull()
      .references(() => counterparties.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** Pending (not yet with the bank) | Sent | Completed | Returned */
    status: text('status').notNull(),
    description: text('description'),
    effectiveDate: date('effective_date', { mode: 'string' }).notNull(),
    /** The bank-transfer provider's reference; null until the push was accepted. */
    providerRef: text('provider_ref'),
    returnCode: text('return_code'),
    returnReason: text('return_reason'),
    sentAt: ts('sent_at'),
    completedAt: ts('completed_at'),
    returnedAt: ts('returned_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('counterparty_payouts_counterparty_idx').on(t.counterpartyId, t.createdAt, t.id),
    index('counterparty_payouts_unsent_idx').on(t.createdAt).where(sql`status = 'Pending'`),
  ],
);

/** Money moved between two counterparties of one merchant (one ledger entry, Completed at once). */
export const counterpartyTransfers = pgTable(
  'counterparty_transfers',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    fromCounterpartyId: uuid('from_counterparty_id')
      .notNull()
      .references(() => counterparties.id),
    toCounterpartyId: uuid('to_counterparty_id')
      .notNull()
      .references(() => counterparties.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** Pending | Completed | Failed */
    status: text('status').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    metadata: jsonb('metadata').$type<Record<string, string> | null>(),
    /** The ledger entry that moved the money. */
    ledgerEntryId: uuid('ledger_entry_id'),
    failureReason: text('failure_reason'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('counterparty_transfers_client_idx').on(t.clientId, t.createdAt, t.id)],
);

/** A payment that arrived on a counterparty's deposit account (external.bank → counterparty.available). */
export const counterpartyIncomingPayments = pgTable(
  'counterparty_incoming_payments',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    counterpartyId: uuid('counterparty_id')
      .notNull()
      .references(() => counterparties.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** The bank rail: ach, wire, rtp, ... */
    method: text('method').notNull(),
    asOfDate: date('as_of_date', { mode: 'string' }).notNull(),
    /** The bank's id for the payment: recorded once, however often it is reported. */
    externalId: text('external_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('counterparty_incoming_payments_external_uq').on(t.clientId, t.externalId)],
);

/** Purchases, voids and refunds made outside Coffer, recorded for the merchant (no money moves). */
export const externalTransactions = pgTable(
  'external_transactions',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    /** Purchase | Void | Refund */
    type: text('type').notNull(),
    /** The Purchase a Void or Refund is about. */
    linkedExternalTransactionId: uuid('linked_external_transaction_id'),
    sourceId: text('source_id').notNull(),
    sourceCreatedAt: ts('source_created_at').notNull(),
    sourceCustomerId: text('source_customer_id'),
    /** The merchant's user that source.customerId names (a user id or reference id), if any. */
    userId: uuid('user_id').references(() => users.id),
    channel: text('channel'),
    payments: jsonb('payments').$type<{ amount: number; method: string }[]>().notNull(),
    payload: jsonb('payload').$type<Record<string, unknown> | null>(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('external_transactions_source_uq').on(t.clientId, t.type, t.sourceId),
    index('external_transactions_client_idx').on(t.clientId, t.createdAt, t.id),
    index('external_transactions_user_idx').on(t.userId),
  ],
);

/** One-time deposits: the Transaction resource (type NonRecurring). */
export const transactions = pgTable(
  'transactions',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    userId: uuid('user_id').notNull(),
    linkedAccountId: uuid('linked_account_id').notNull(),
    type: text('type').notNull(),
    /** Pending → Cleared | Failed */
    status: text('status').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** What the wallet is credited: amount − disbursements − deducted fee. */
    walletAmount: bigint('wallet_amount', { mode: 'number' }).notNull(),
    feeAmount: bigint('fee_amount', { mode: 'number' }).notNull(),
    feeType: text('fee_type').notNull(),
    /** The part of the fee taken from the deposit (when no fee counterparty pays it). */
    feeDeducted: bigint('fee_deducted', { mode: 'number' }).notNull(),
    feeCounterpartyId: uuid('fee_counterparty_id'),
    disbursement: jsonb('disbursement')
      .$type<{ counterpartyId: string; amount: number; fee: number; remit: boolean }[]>()
      .notNull(),
    rewardAmount: bigint('reward_amount', { mode: 'number' }).notNull().default(0),
    risk: jsonb('risk').$type<{ deviceSessionId?: string } | null>(),
    /** The bank-transfer provider's reference for the pull; null until the provider has it. */
    providerRef: text('provider_ref'),
    failureReason: text('failure_reason'),
    createdAt: createdAt(),
    clearedAt: ts('cleared_at'),
    failedAt: ts('failed_at'),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('transactions_wallet_idx').on(t.clientId, t.walletId, t.createdAt, t.id),
    index('transactions_pending_idx').on(t.walletId).where(sql`status = 'Pending'`),
    index('transactions_unsent_idx').on(t.createdAt).where(sql`provider_ref is null and status = 'Pending'`),
  ],
);

/**
 * What a wallet's cleared deposits brought in from each linked account, kept as deposits clear
 * (a deposit clears once and never changes after): a withdrawal splits by it in one indexed read
 * instead of summing every deposit the wallet ever cleared (docs/money.md#withdrawals).
 */
export const depositTotals = pgTable(
  'deposit_totals',
  {
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    linkedAccountId: uuid('linked_account_id').notNull(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    cleared: bigint('cleared', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.walletId, t.linkedAccountId] })],
);

/**
 * Bank transfers that a status-reporting provider accepted (providers/bank-transfers.ts) and
 * whose end Coffer waits for: a deposit's pull, a withdrawal's push, a captured payment's pull of
 * its bank part. The bank-transfer-status job asks the provider about each due one (leased with
 * SKIP LOCKED, with backoff) and applies a final answer to its subject in one transaction.
 */
export const bankTransfers = pgTable(
  'bank_transfers',
  {
    /** Coffer's reference: the provider's idempotency key. */
    reference: text('reference').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    /** deposit | withdrawal | payment: what the outcome settles. */
    purpose: text('purpose').notNull(),
    /** The transaction, withdrawal or payment. */
    subjectId: uuid('subject_id').notNull(),
    /** pull | push */
    direction: text('direction').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    providerRef: text('provider_ref').notNull(),
    /** Pending → Settled | Failed */
    status: text('status').notNull(),
    failureReason: text('failure_reason'),
    /** When to ask the provider next: pushed forward while asking (a lease), then by backoff. */
    checkAfter: ts('check_after').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    finishedAt: ts('finished_at'),
  },
  (t) => [
    index('bank_transfers_due_idx').on(t.checkAfter).where(sql`status = 'Pending'`),
    index('bank_transfers_subject_idx').on(t.subjectId),
  ],
);

export const withdrawals = pgTable(
  'withdrawals',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    split: jsonb('split')
      .$type<{ linkedAccountId: string; institutionName: string; accountMask: string; amount: number }[]>()
      .notNull(),
    /** The bank-transfer provider's references for the pushes; null until it has them all. */
    providerRef: text('provider_ref'),
    createdAt: createdAt(),
  },
  (t) => [
    index('withdrawals_wallet_idx').on(t.walletId, t.createdAt),
    // The bank-pushes job's oldest unsent withdrawals, every 250 ms in every process: without it,
    // a scan and sort of every withdrawal ever made.
    index('withdrawals_unsent_idx').on(t.createdAt).where(sql`provider_ref is null`),
  ],
);

/**
 * Merchant rewards (Accrue's Reward). `immediate`: credited to a wallet at issue (`Credited`).
 * `preIssued`: issued to a phone number without a wallet (`Created`), credited when a wallet is
 * opened for it (`Claimed`), else `Expired` at `claim_expires_at`; either may be `Cancelled`.
 */
export const rewards = pgTable(
  'rewards',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    /** Null while a pre-issued reward waits for its wallet. */
    walletId: uuid('wallet_id').references(() => wallets.id),
    /** immediate | preIssued */
    kind: text('kind').notNull().default('immediate'),
    /** Credited | Created | Claimed | Expired | Cancelled */
    status: text('status').notNull().default('Credited'),
    /** The recipient's phone number as issued (E.164); null when issued by walletId. */
    phoneNumber: text('phone_number'),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    message: text('message'),
    reasonCode: text('reason_code'),
    costCenter: text('cost_center'),
    notificationEmail: text('notification_email'),
    claimExpiresAt: ts('claim_expires_at'),
    /** When the money reached the wallet (issue or claim): the order rewards are spent in. */
    creditedAt: ts('credited_at'),
    cancelledAt: ts('cancelled_at'),
    /** What cancelling took back from the wallet (the unspent part). */
    reversedAmount: bigint('reversed_amount', { mode: 'number' }).notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('rewards_wallet_idx').on(t.walletId, t.createdAt),
    index('rewards_client_idx').on(t.clientId, t.createdAt, t.id),
    // One pre-issued reward waits per phone number (Accrue's PreIssuedConflict).
    uniqueIndex('rewards_pre_issued_phone_uq').on(t.clientId, t.phoneNumber).where(sql`status = 'Created'`),
    index('rewards_claim_expiring_idx').on(t.claimExpiresAt).where(sql`status = 'Created'`),
  ],
);

export const gifts = pgTable(
  'gifts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    /** The public reference (19 digits): what is scanned and what the API calls the gift's id. */
    lookUpId: text('look_up_id').notNull(),
    originalAmount: bigint('original_amount', { mode: 'number' }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('gifts_look_up_uq').on(t.lookUpId)],
);

/**
 * Idempotency keys (docs/adr/0004-idempotency-in-the-database.md). A row is committed "in flight" before the operation runs;
 * the operation's changes and its stored response commit together, so a crash leaves either
 * no outcome (the lease runs out and a retry runs it) or the full one (a retry replays it).
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    clientId: uuid('client_id').notNull(),
    operation: text('operation').notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    /** The first outcome, replayed byte for byte (a request in flight holds an advisory lock instead of a row). */
    statusCode: integer('status_code').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.clientId, t.operation, t.key] }),
    index('idempotency_keys_expiry_idx').on(t.expiresAt),
  ],
);

// ----- checkout: payment intents, payments, cards -----------------------------------------

/**
 * HOT_PATH_REFERENCES. The five tables every payment writes (payment_intents, payments,
 * ledger_entries, ledger_postings, events) carry no foreign keys, since migration 0010. Each
 * inserted row's keys cost PostgreSQL a trigger and a lookup that locks the parent row (every
 * row of a merchant locked its one `clients` row), ten per authorize (docs/internals.md#statements-and-plans). What they
 * guarded holds without them: no parent is ever deleted (clients, wallets, gifts, intents and
 * ledger rows have no delete path), each id written comes from a row the same transaction read
 * or created (the authenticated client, the locked intent and wallet, the entry written in the
 * same statement as its postings, accounts checked by postEntry), and verifyLedger reports any
 * posting whose entry or account is missing. Every other table keeps its foreign keys.
 */

export const paymentIntents = pgTable(
  'payment_intents',
  {
    id: uuid('id').primaryKey(),
    // No foreign keys on the tables every payment writes (HOT_PATH_REFERENCES below).
    clientId: uuid('client_id').notNull(),
    walletId: uuid('wallet_id'),
    giftId: uuid('gift_id'),
    userId: uuid('user_id'),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** Promotable | PromotedToPayment | Invalid | Expired | Canceled | RequiresAction */
    status: text('status').notNull(),
    error: text('error'),
    reference: text('reference'),
    /** Merchant (walletId) or Customer (a scanned lookUpId). */
    initiator: text('initiator').notNull(),
    /** Wallet or Gift. */
    paymentMethod: text('payment_method').notNull(),
    lookUpId: text('look_up_id'),
    balance: jsonb('balance').$type<{ available: number; eligibleReward: number; upperLimit: number }>().notNull(),
    billingAddress: jsonb('billing_address').$type<Record<string, string> | null>(),
    email: text('email'),
    fullName: text('full_name'),
    phoneNumber: text('phone_number'),
    expiresAt: ts('expires_at').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('payment_intents_client_idx').on(t.clientId, t.createdAt, t.id),
    index('payment_intents_client_status_idx').on(t.clientId, t.status, t.createdAt, t.id),
    index('payment_intents_client_method_idx').on(t.clientId, t.paymentMethod, t.createdAt, t.id),
    // The expiry job's read (status in EXPIRING, by expires_at): both statuses, or it scans the table.
    index('payment_intents_expiring_idx').on(t.expiresAt).where(sql`status in ('Promotable', 'RequiresAction')`),
  ],
);

/** Where an authorization's money comes from, per wallet bucket, the linked account, the gift. */
export interface Sourcing {
  merchantReward: number;
  accrueReward: number;
  deposit: number;
  linked: number;
  gift: number;
}

export const payments = pgTable(
  'payments',
  {
    id: uuid('id').primaryKey(),
    // No foreign keys on the tables every payment writes (HOT_PATH_REFERENCES below).
    clientId: uuid('client_id').notNull(),
    intentId: uuid('intent_id'),
    walletId: uuid('wallet_id'),
    giftId: uuid('gift_id'),
    userId: uuid('user_id'),
    /** bank | card | gift */
    rail: text('rail').notNull(),
    /** Created | Processing | Sent | Failed | Canceled | Returned */
    status: text('status').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    capturedAmount: bigint('captured_amount', { mode: 'number' }).notNull().default(0),
    refundedAmount: bigint('refunded_amount', { mode: 'number' }).notNull().default(0),
    channel: text('channel'),
    reference: text('reference'),
    linkedAccountId: uuid('linked_account_id'),
    /** Reserved at authorization. */
    sourcing: jsonb('sourcing').$type<Sourcing>().notNull(),
    /** Taken at capture (what refunds return). */
    captured: jsonb('captured').$type<Sourcing | null>(),
    externalPayments: jsonb('external_payments').$type<{ method: string; amount: number }[]>().notNull(),
    disbursement: jsonb('disbursement')
      .$type<{ counterpartyId: string; amount: number; fee: number; remit: boolean }[]>()
      .notNull(),
    /** Opaque processor data (meta.processor in, the processor's answer out). */
    processor: jsonb('processor').$type<Record<string, unknown> | null>(),
    /** Card network: how much of the card was authorized at the point of sale. */
    networkAuthorized: bigint('network_authorized', { mode: 'number' }).notNull().default(0),
    failureReason: text('failure_reason'),
    /** Uncaptured authorizations are released after this (7 days). */
    expiresAt: ts('expires_at').notNull(),
    /** Sandbox settlement of a Processing payment happens after this. */
    settleAfter: ts('settle_after'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    capturedAt: ts('captured_at'),
    settledAt: ts('settled_at'),
    canceledAt: ts('canceled_at'),
  },
  (t) => [
    index('payments_client_idx').on(t.clientId, t.createdAt, t.id),
    // The console's and the API's filters, each a range of one index in the list's order.
    index('payments_status_idx').on(t.clientId, t.status, t.createdAt, t.id),
    index('payments_reference_idx').on(t.clientId, t.reference, t.createdAt, t.id).where(sql`reference is not null`),
    index('payments_client_channel_idx').on(t.clientId, t.channel, t.createdAt, t.id).where(sql`channel is not null`),
    // Only a payment of an intent has one: a direct payment (POST /payments) adds no entry here,
    // neither when it is made nor when it settles (a status change is never a HOT update).
    index('payments_intent_idx').on(t.intentId).where(sql`intent_id is not null`),
    index('payments_expiring_idx').on(t.expiresAt).where(sql`status = 'Created'`),
    index('payments_settling_idx').on(t.settleAfter).where(sql`status = 'Processing'`),
  ],
);

/**
 * One authorization of an intent through the card processor: committed before the processor is
 * called (outside any transaction), finished after. Its id is the processor's idempotency
 * reference. While `state` is processing and the lease is live, other authorizes of the
 * intent are refused (409); a lease that runs out means its process died, and the attempt is
 * taken over and finished with the same reference.
 */
export const authorizationAttempts = pgTable(
  'authorization_attempts',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    intentId: uuid('intent_id')
      .notNull()
      .references(() => paymentIntents.id),
    idempotencyKey: text('idempotency_key'),
    fingerprint: text('fingerprint').notNull(),
    /** processing | succeeded | declined */
    state: text('state').notNull(),
    leaseUntil: ts('lease_until'),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    request: jsonb('request').$type<Record<string, unknown>>().notNull(),
    sourcing: jsonb('sourcing').$type<Sourcing>().notNull(),
    paymentId: uuid('payment_id'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('authorization_attempts_intent_idx').on(t.intentId, t.createdAt),
    index('authorization_attempts_open_idx').on(t.leaseUntil).where(sql`state = 'processing'`),
  ],
);

export const refunds = pgTable(
  'refunds',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    paymentId: uuid('payment_id')
      .notNull()
      .references(() => payments.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** Where the money went back to. */
    returned: jsonb('returned').$type<Sourcing>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('refunds_payment_idx').on(t.paymentId, t.createdAt)],
);

/** Single-use virtual debit cards: one per card-rail payment, one per gift. */
export const virtualCards = pgTable(
  'virtual_cards',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    paymentId: uuid('payment_id').references(() => payments.id),
    giftId: uuid('gift_id').references(() => gifts.id),
    /** The card number and CVC, sealed (AES-256-GCM); never logged, never stored in clear. */
    numberSealed: text('number_sealed').notNull(),
    cvcSealed: text('cvc_sealed').notNull(),
    last4: text('last4').notNull(),
    expirationMonth: integer('expiration_month').notNull(),
    expirationYear: integer('expiration_year').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('virtual_cards_payment_uq').on(t.paymentId), uniqueIndex('virtual_cards_gift_uq').on(t.giftId)],
);

/**
 * The sandbox card network's authorization requests (Accrue's AuthorizationRequest): one row per
 * card authorization, Approved or Declined; Approved ones become Canceled when the payment is
 * canceled or expires before capture.
 */
export const cardAuthorizations = pgTable(
  'card_authorizations',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    paymentId: uuid('payment_id')
      .notNull()
      .references(() => payments.id),
    /** Approved | Declined | Canceled */
    status: text('status').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('card_authorizations_payment_idx').on(t.paymentId, t.createdAt, t.id)],
);

/** The sandbox card network's captures (Accrue's CardCapture), successful or refused. */
export const cardCaptures = pgTable(
  'card_captures',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    paymentId: uuid('payment_id')
      .notNull()
      .references(() => payments.id),
    authorizationId: uuid('authorization_id').references(() => cardAuthorizations.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    success: boolean('success').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('card_captures_payment_idx').on(t.paymentId, t.createdAt, t.id)],
);

/** Every read of a card's data: who, when, from where. */
export const cardReads = pgTable(
  'card_reads',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id').notNull(),
    cardId: uuid('card_id')
      .notNull()
      .references(() => virtualCards.id),
    paymentId: uuid('payment_id').notNull(),
    requestId: text('request_id').notNull(),
    ip: text('ip').notNull(),
    readAt: ts('read_at').notNull(),
  },
  (t) => [index('card_reads_card_idx').on(t.cardId, t.readAt)],
);

/**
 * The sandbox card processor's memory: one row per reference, so a retried or recovered
 * authorization gets the first answer back instead of a second charge, across processes and
 * restarts, as a real processor's idempotency does.
 */
export const sandboxProcessorCharges = pgTable('sandbox_processor_charges', {
  reference: text('reference').primaryKey(),
  clientId: uuid('client_id').notNull(),
  amount: bigint('amount', { mode: 'number' }).notNull(),
  outcome: text('outcome').notNull(),
  calls: integer('calls').notNull().default(1),
  createdAt: createdAt(),
});

// ----- sweepstakes -----------------------------------------------------------------------

/**
 * Sweepstakes results a merchant reported (POST /sweepstakes/{id}/results): one row per
 * sweepstakes and user, so reporting the same result again changes nothing. The sweepstakes id
 * is the merchant's own label; Coffer keeps no sweepstakes of its own.
 */
export const sweepstakesResults = pgTable(
  'sweepstakes_results',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => clients.id),
    sweepstakesId: text('sweepstakes_id').notNull(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** How the merchant named the customer: ID or PhoneNumber, and the value it sent. */
    customerIdType: text('customer_id_type').notNull(),
    customerId: text('customer_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('sweepstakes_results_uq').on(t.clientId, t.sweepstakesId, t.userId)],
);

/**
 * Signed-in console sessions (docs/operations.md#the-console). The cookie carries a random
 * 32-byte id; only its SHA-256 is stored, so a read of this table signs nobody in. `client_id`
 * is the merchant a developer signed in as; null for the operator.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    idHash: bytea('id_hash').primaryKey(),
    /** operator | merchant */
    role: text('role').notNull(),
    clientId: uuid('client_id').references(() => clients.id),
    /** A merchant's session: the secret it signed in with. Deleting the secret deletes its sessions. */
    secretId: uuid('secret_id').references(() => clientSecrets.id, { onDelete: 'cascade' }),
    /**
     * An operator's session: HMAC-SHA256 of ADMIN_TOKEN keyed by the session's id (which only the
     * cookie holds), so a new token ends the session and the table holds nothing to test a guess against.
     */
    adminTokenMac: bytea('admin_token_mac'),
    /** The form token every POST of the session must carry. */
    csrfToken: text('csrf_token').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('console_sessions_expiry_idx').on(t.expiresAt),
    index('console_sessions_client_idx').on(t.clientId),
    index('console_sessions_secret_idx').on(t.secretId),
    check('console_sessions_role', sql`${t.role} in ('operator', 'merchant')`),
    check(
      'console_sessions_bound',
      sql`(${t.role} = 'merchant' and ${t.clientId} is not null and ${t.secretId} is not null) or (${t.role} = 'operator' and ${t.adminTokenMac} is not null)`,
    ),
  ],
);

/**
 * The API requests of each merchant, for the console's request log: written in batches off the
 * request path (modules/request-log), kept REQUEST_LOG_RETENTION_DAYS. Bodies are stored with
 * secrets and card data redacted. No foreign key: it is written on every request. Partitioned by
 * week of its id, which drizzle-kit cannot express (migration 0025, modules/request-log/retention.ts).
 */
export const requestLog = pgTable(
  'request_log',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id'),
    requestId: text('request_id').notNull(),
    method: text('method').notNull(),
    /** The route's pattern (/api/v1/payments/:paymentId); the path itself when no route matched. */
    route: text('route').notNull(),
    path: text('path').notNull(),
    status: integer('status').notNull(),
    durationMs: integer('duration_ms').notNull(),
    idempotencyKey: text('idempotency_key'),
    /** The request body, redacted and cut to a few kilobytes; null without one. */
    body: text('body'),
    createdAt: createdAt(),
  },
  (t) => [
    index('request_log_client_idx').on(t.clientId, t.createdAt, t.id),
    // The console's filters: a status class (4xx; an exact status reads its class's range), a
    // path prefix (text_pattern_ops: LIKE 'prefix%' under any collation), a method.
    index('request_log_client_class_idx').on(t.clientId, sql`(${t.status} / 100)`, t.createdAt, t.id),
    index('request_log_client_path_idx').on(t.clientId, t.path.op('text_pattern_ops')),
    index('request_log_client_method_idx').on(t.clientId, t.method, t.createdAt, t.id),
  ],
);

/**
 * The console's charts: each merchant's payments by the UTC hour they were created in: how many,
 * how many are Failed, and their amounts authorized, captured and refunded, as they stand.
 * Statement-level triggers on payments (migration 0019) append what each statement changed to
 * console_payment_rollup_deltas; the console-payment-rollup job folds those into this table.
 * A chart reads both, so it is exact at once, and never reads payments.
 */
const rollupColumns = () => ({
  clientId: uuid('client_id').notNull(),
  hour: ts('hour').notNull(),
  payments: bigint('payments', { mode: 'number' }).notNull(),
  failed: bigint('failed', { mode: 'number' }).notNull(),
  amount: bigint('amount', { mode: 'number' }).notNull(),
  captured: bigint('captured', { mode: 'number' }).notNull(),
  refunded: bigint('refunded', { mode: 'number' }).notNull(),
});

export const consolePaymentRollup = pgTable('console_payment_rollup', rollupColumns(), (t) => [
  primaryKey({ columns: [t.clientId, t.hour] }),
]);

/**
 * What statements on payments changed, per merchant and hour, not yet folded: appended by the
 * triggers (never updated, so concurrent payments never wait on each other here), deleted by
 * the fold. No index: the fold takes it all, and the job keeps it a few seconds long.
 */
export const consolePaymentRollupDeltas = pgTable('console_payment_rollup_deltas', rollupColumns());

/**
 * The exact totals of the API's lists (docs/internals.md#counters), per merchant: `list`
 * names a list and `key` the values of its counted columns as JSON text (jsonb's own rendering,
 * so equal values make equal keys): '{}' for users and wallets, {"walletId": …} for a wallet's
 * transactions, {"status": …, "initiator": …, "paymentMethod": …} for payment intents, and so
 * on (migration 0021). A filtered total is the sum of the keys that match it. Statement-level
 * triggers append what each statement changed to list_count_deltas; the list-count-fold job
 * folds those into this table. A total reads both, in one statement.
 */
export const listCounts = pgTable(
  'list_counts',
  {
    clientId: uuid('client_id').notNull(),
    list: text('list').notNull(),
    key: text('key').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.list, t.key] })],
);

/**
 * What statements changed in the counted lists, not yet folded: appended by the triggers (no
 * primary key and never updated, so concurrent writers never wait on each other here), deleted
 * by the fold. Indexed like list_counts, since every total reads its key's deltas.
 */
export const listCountDeltas = pgTable(
  'list_count_deltas',
  {
    clientId: uuid('client_id').notNull(),
    list: text('list').notNull(),
    key: text('key').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [index('list_count_deltas_key_idx').on(t.clientId, t.list, t.key)],
);
