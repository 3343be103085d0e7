// The one catalogue of coded errors. Every error a route returns is one of these codes,
// rendered as a JSON:API error object by error-handler.ts. Titles follow the spec's error
// table where it gives one; codes it does not name are ours and are listed in docs/errors.md.
import { ProviderError } from '../providers/http/client.ts';

interface ErrorDef {
  status: number;
  title: string;
  /** Shown when the thrower gives no detail. */
  detail: string;
}

const def = (status: number, title: string, detail: string): ErrorDef => ({ status, title, detail });

export const ERRORS = {
  // 400: bad input
  BadRequest: def(400, 'ValidationError', 'The request is malformed.'),
  ValidationError: def(400, 'ValidationError', 'The request body is invalid.'),
  InvalidIdentifier: def(400, 'UserValidationException', 'The user reference does not resolve to a user.'),
  UserNotFound: def(404, 'UserNotFoundException', 'The user does not exist.'),
  InvalidUser: def(400, 'LinkedAccountException', 'The user has no wallet with this merchant.'),
  // Accrue's refund code for an amount it cannot refund.
  InvalidRefund: def(400, 'RefundException', 'The refund is not possible for this payment.'),
  // Accrue's webhook code for a topic list it refuses ("*" beside other topics).
  InvalidTopics: def(400, 'WebhookException', 'The topics are not a valid list.'),
  InvalidKycStatus: def(400, 'Invalid KYC status', 'The user must pass KYC before moving money.'),
  DisclosuresNotAccepted: def(400, 'Disclosures not accepted', 'The user must accept the KYC disclosures first.'),
  // KYC in Accrue's codes (title BankingException, as Accrue's).
  KycApplicationFailed: def(400, 'BankingException', 'A KYC application is already being checked or decided.'),
  DocumentVerificationFailed: def(400, 'BankingException', "The user's KYC is not waiting for documents."),
  IllegalOperation: def(400, 'Illegal operation', "The operation is not allowed in the resource's current state."),
  LinkedAccountDisconnected: def(
    400,
    'Linked account disconnected',
    'The linked account is disconnected and cannot fund anything.',
  ),
  LinkedAccountMissing: def(400, 'Linked account missing', 'The user has no connected linked account.'),
  ExceedsMaxOneTimeDepositAmount: def(
    400,
    'Exceeds max one-time deposit amount',
    'The amount is above the maximum for a one-time deposit.',
  ),
  InsufficientWithdrawableBalance: def(
    400,
    'Insufficient withdrawable balance',
    'The amount is more than the wallet can withdraw.',
  ),
  AmountTooLarge: def(
    400,
    'Amount too large',
    "The amount is above the merchant's maxPaymentAmount setting (default 100000000 cents); an operator can raise it.",
  ),
  // Accrue's createWallet answers it with 400 (its only declared error status besides 500).
  WalletAlreadyExists: def(400, 'WalletValidationException', 'The user already has a wallet with this merchant.'),
  WalletIdentifierExpired: def(400, 'Wallet identifier expired', 'The barcode has expired or been used up.'),
  WalletClosed: def(400, 'Wallet closed', 'The wallet is closed.'),
  PaymentIntentExpired: def(
    400,
    'Payment intent expired',
    'The payment intent is past its expiresAt; create a new one.',
  ),
  LookUpIdNotFound: def(
    400,
    'Lookup id not found',
    'The lookUpId is neither a wallet barcode nor a gift of this merchant.',
  ),
  CooldownActive: def(400, 'Cooldown active', 'A challenge failed recently; try again later.'),
  ChallengeNotFound: def(400, 'Challenge not found', 'The challenge or verification token is unknown.'),
  ChallengeExpired: def(400, 'Challenge expired', 'The challenge or token lifetime has elapsed.'),
  ChallengeFailed: def(400, 'Challenge failed', 'The challenge is no longer active.'),
  // The spec lists it; docs/identity.md#challenges-in-detail reports the third failure as a 200 result's failureReason and later submissions as ChallengeFailed.
  // Accrue's webhook errors are 400 with the title WebhookException.
  WebhookLimitReached: def(
    400,
    'WebhookException',
    'The merchant has as many webhooks as it may have; delete one first.',
  ),
  MaxAttemptsExceeded: def(
    400,
    'Max attempts exceeded',
    'Three failed submissions. Reported as the failureReason of the third failed submission (200); not returned as an error.',
  ),
  // 401 / 403
  Unauthorized: def(401, 'Unauthorized', 'Authentication failed.'),
  ClientDisabled: def(403, 'Forbidden', 'This client is disabled.'),
  InsufficientVerificationData: def(
    403,
    'Insufficient verification data',
    'The user lacks a name, date of birth or active wallet.',
  ),
  // 402
  Failed: def(402, 'PaymentAuthorizationFailedException', 'Authorization failed for the amount.'),
  // 404 / 405
  // Also Accrue's code where its contract names no resource (rewards, the sandbox's card lists
  // and counterparty deposits): see notFoundAsAccrue.
  NotFound: def(404, 'Not found', 'No route matches this path.'),
  // Accrue's createPaymentIntent: a walletId the merchant has no wallet for (its own or another's).
  WalletIdentifierNotFound: def(404, 'Not found', 'The wallet identifier names no wallet of this merchant.'),
  ClientNotFound: def(404, 'Not found', 'The client does not exist.'),
  ClientSecretNotFound: def(404, 'Not found', 'The client secret does not exist.'),
  LinkedAccountNotFound: def(404, 'Not found', 'The linked account does not exist.'),
  WebhookNotFound: def(404, 'Not found', 'The webhook does not exist.'),
  WalletNotFound: def(404, 'Not found', 'The wallet does not exist.'),
  TransactionNotFound: def(404, 'Not found', 'The transaction does not exist.'),
  CounterpartyNotFound: def(404, 'Not found', 'The counterparty does not exist.'),
  GiftNotFound: def(404, 'Not found', 'The gift does not exist.'),
  PaymentIntentNotFound: def(404, 'Not found', 'The payment intent does not exist.'),
  PaymentNotFound: def(404, 'Not found', 'The payment does not exist.'),
  CardNotFound: def(404, 'Not found', 'The payment has no virtual card.'),
  WebhookEventNotFound: def(404, 'Not found', 'The event does not exist.'),
  MethodNotAllowed: def(405, 'Method not allowed', 'This path does not accept this method.'),
  // 408 / 409 / 413 / 414 / 415 / 429
  RequestTimeout: def(408, 'Request timeout', 'The request took too long to arrive.'),
  UserAlreadyExists: def(409, 'User already exists', 'A user with this phone number or e-mail already exists.'),
  ReferenceIdTaken: def(409, 'Reference id taken', 'Another user of this merchant already has this reference id.'),
  IdempotencyKeyInUse: def(
    409,
    'Idempotency key in use',
    'A request with this key is still running; retry the same request.',
  ),
  IdempotencyKeyReused: def(
    409,
    'Idempotency key reused',
    'This key was used with different attributes; do not retry with it.',
  ),
  AlreadyExists: def(409, 'Already exists', 'An authorization is already running or settled; retry the same request.'),
  // JSON:API: a PATCH body's data.id names another resource than the URL.
  Conflict: def(409, 'Conflict', "The body's id is not the resource the URL names; nothing was changed."),
  PayloadTooLarge: def(413, 'Payload too large', 'The request body is too large.'),
  UriTooLong: def(414, 'URI too long', 'A path segment is longer than 256 characters.'),
  UnsupportedMediaType: def(415, 'Unsupported media type', 'Send application/vnd.api+json or application/json.'),
  RateLimitExceeded: def(429, 'Rate limit exceeded', 'Too many requests; retry after the time in Retry-After.'),
  // Counterparties, their payouts and transfers; external transactions (Accrue's codes and titles)
  InsufficientBalance: def(
    400,
    'CounterpartyInsufficientBalanceException',
    "The amount is more than the counterparty's available balance.",
  ),
  ValidationFailed: def(
    400,
    'CounterpartyTransferValidationException',
    'The transfer is not possible: the same counterparty on both sides, or not enough available balance.',
  ),
  TransferNotFound: def(404, 'Not found', 'The counterparty transfer does not exist.'),
  PayoutNotFound: def(404, 'Not found', 'The counterparty has no such payout.'),
  ExternalTransactionNotFound: def(404, 'Not found', 'The external transaction does not exist.'),
  WithdrawalNotFound: def(404, 'Not found', 'The withdrawal does not exist.'),
  CounterpartyHasBalance: def(
    409,
    'CounterpartyHasBalanceException',
    'The counterparty still holds a balance and cannot be deleted; pay it out first.',
  ),
  CounterpartyInUse: def(
    409,
    'Counterparty in use',
    "Money may still reach the counterparty (a payout in flight, an unsettled payment's disbursement) or it pays the merchant's fees.",
  ),
  // Accrue parity: payment updates and rewards (Accrue's titles where it gives them)
  InvalidState: def(409, 'RewardConflictException', 'The reward cannot be changed in its current state.'),
  WalletNotIssuable: def(
    409,
    'RewardConflictException',
    "The recipient's wallet cannot receive rewards in its current state.",
  ),
  PreIssuedConflict: def(409, 'RewardConflictException', 'A pre-issued reward already waits for this phone number.'),
  // 5xx
  InternalError: def(500, 'Internal error', 'Something went wrong on our side; the request can be retried.'),
  ServiceUnavailable: def(503, 'Service unavailable', 'A dependency is unavailable; the request can be retried.'),
  // Accrue's codes for widgets and sandbox barcodes and clearing (docs/adr/0001-spec-then-accrue.md)
  NoWalletFound: def(400, 'WidgetException', 'No wallet found for the given identifiers.'),
  MultipleWalletsFound: def(400, 'WidgetException', 'The given identifiers match more than one wallet.'),
  NoLinkedAccountFound: def(400, 'WidgetException', 'No linked account found for the payment intent.'),
  InvalidTransaction: def(400, 'Invalid transaction', 'The barcode has expired or been used up.'),
  InvalidTransactionType: def(400, 'Invalid transaction type', 'The transaction type must be bank or card.'),
  BarcodeNotFound: def(404, 'Not found', 'The barcode does not exist.'),
} satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof ERRORS;

interface ErrorSource {
  pointer?: string;
  parameter?: string;
  header?: string;
}

/** One identified problem; a response lists every one it found. */
export interface ErrorItem {
  code: ErrorCode;
  status: number;
  title: string;
  detail: string;
  source?: ErrorSource;
  meta?: Record<string, unknown>;
  /** `about`: the resource the error is about (an existing one a create collided with). */
  links?: { about: string };
}

export interface ErrorOptions {
  /** Overrides the catalogue status (e.g. UserNotFound is 400 for an id in a body). */
  status?: number;
  pointer?: string;
  parameter?: string;
  header?: string;
  meta?: Record<string, unknown>;
  /**
   * The resource that already exists (a create or update collided with it): its id goes to
   * `meta.existingId` and its URL to `links.about`, so the client can go on with it.
   */
  existing?: { id: string; href: string };
  /** Response headers that go with this error (Retry-After, Allow). */
  headers?: Record<string, string>;
}

export function errorItem(code: ErrorCode, detail?: string, opts: ErrorOptions = {}): ErrorItem {
  const d = ERRORS[code];
  const item: ErrorItem = { code, status: opts.status ?? d.status, title: d.title, detail: detail ?? d.detail };
  const source: ErrorSource = {};
  if (opts.pointer !== undefined) source.pointer = opts.pointer;
  if (opts.parameter !== undefined) source.parameter = opts.parameter;
  if (opts.header !== undefined) source.header = opts.header;
  if (Object.keys(source).length > 0) item.source = source;
  if (opts.meta) item.meta = opts.meta;
  if (opts.existing) {
    item.meta = { ...item.meta, existingId: opts.existing.id };
    item.links = { about: opts.existing.href };
  }
  return item;
}

/** The error every route throws; the error handler renders it. */
export class ApiError extends Error {
  readonly items: ErrorItem[];
  readonly headers: Record<string, string>;

  constructor(items: ErrorItem[], headers: Record<string, string> = {}) {
    super(items.map((i) => `${i.code}: ${i.detail}`).join('; '));
    this.name = 'ApiError';
    this.items = items;
    this.headers = headers;
  }

  /** The response status: shared by all items, else the most general for their class. */
  get status(): number {
    const statuses = new Set(this.items.map((i) => i.status));
    if (statuses.size === 1) return this.items[0]!.status;
    return [...statuses].some((s) => s >= 500) ? 500 : 400;
  }
}

export function apiError(code: ErrorCode, detail?: string, opts: ErrorOptions = {}): ApiError {
  return new ApiError([errorItem(code, detail, opts)], opts.headers);
}

/**
 * What a request that needed an adapter answers when it failed: 503 ServiceUnavailable, to be
 * retried (any other error passes through unchanged).
 */
export function providerUnavailable(err: unknown, detail: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  return apiError('ServiceUnavailable', detail, { headers: { 'retry-after': '2' } }) satisfies ApiError;
}

/**
 * Runs `work`; a 404 it throws (`PaymentNotFound`, `CounterpartyNotFound`, …) leaves as Accrue's
 * generic `NotFound`, for the operations whose contract names that code.
 */
export async function notFoundAsAccrue<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const item = err instanceof ApiError && err.items.length === 1 ? err.items[0]! : undefined;
    if (item?.status === 404) throw apiError('NotFound', item.detail, { ...item.source });
    throw err;
  }
}
