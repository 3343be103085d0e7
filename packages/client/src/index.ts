// @coffer/client: a typed client for the Coffer API. Every operation of the OpenAPI document
// is on `coffer.api` (openapi-fetch, types generated from the served document); the helpers
// below cover the common flows and throw CofferError instead of returning error values.
import createClient from 'openapi-fetch';
import { CofferError, type ApiErrorObject } from './errors.ts';
import { DEFAULT_RETRY, retryingFetch, type RetryOptions } from './retry.ts';
import type { components, operations, paths } from './schema.ts';

export { CofferError, type ApiErrorObject } from './errors.ts';
export { ERROR_CODES, type ErrorCode } from './codes.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.ts';
export type { RetryOptions } from './retry.ts';
export type { components, paths } from './schema.ts';

const JSONAPI = 'application/vnd.api+json';

export type Schemas = components['schemas'];
export type User = Schemas['User'];
export type Wallet = Schemas['Wallet'];
export type PaymentIntent = Schemas['PaymentIntent'];
export type Payment = Schemas['Payment'];

export interface CofferOptions {
  /** Where the API listens, e.g. http://localhost:3000 */
  baseUrl: string;
  clientId: string;
  secret: string;
  retry?: Partial<Omit<RetryOptions, 'fetch'>>;
  fetch?: typeof fetch;
}

/** Paths of list operations (those answering `{data: [...], meta: {total}}`). */
type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: { responses: { 200: { content: { [JSONAPI]: { meta: { total: number } } } } } };
  }
    ? P
    : never;
}[keyof paths];
type ListItem<P extends ListPath> = paths[P] extends {
  get: { responses: { 200: { content: { [JSONAPI]: { data: (infer T)[] } } } } };
}
  ? T
  : never;
type ListQuery<P extends ListPath> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? Q : never;
type ListPathParams<P extends ListPath> = paths[P] extends { get: { parameters: { path: infer A } } } ? A : never;

/** The attributes a POST to `P` takes (`data.attributes` of its JSON:API body). */
type Attributes<P extends keyof paths> = paths[P] extends {
  post: { requestBody?: { content: { [JSONAPI]: { data: { attributes?: infer A } } } } };
}
  ? A
  : never;
/** Attributes whose idempotency key the client makes when it is left out (retry.ts). */
type KeyOptional<A> = A extends { idempotencyKey: string }
  ? Omit<A, 'idempotencyKey'> & { idempotencyKey?: string }
  : A;

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a 2xx answer; a CofferError for anything else. */
export async function unwrap<T>(p: Promise<Result<T>>): Promise<NonNullable<T>> {
  const r = await p;
  if (r.response.ok) return r.data as NonNullable<T>;
  const errors = (r.error as { errors?: ApiErrorObject[] } | undefined)?.errors ?? [];
  throw new CofferError(r.response.status, errors, r.response.headers.get('x-request-id') ?? undefined);
}

export function createCoffer(o: CofferOptions) {
  const base = o.fetch ?? globalThis.fetch;
  // JSON:API media type on every body (openapi-fetch defaults to application/json).
  const jsonApiFetch: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    if (req.headers.has('content-type')) req.headers.set('content-type', JSONAPI);
    return base(req);
  };
  const api = createClient<paths>({
    baseUrl: o.baseUrl.replace(/\/$/, ''),
    headers: { 'client-id': o.clientId, authorization: `Bearer ${o.secret}`, accept: JSONAPI },
    fetch: retryingFetch({ ...DEFAULT_RETRY, ...o.retry, fetch: jsonApiFetch }),
  });

  const body = <T extends string, A>(type: T, attributes: A) => ({ data: { type, attributes } });

  return {
    /** Every operation, typed: `coffer.api.GET('/api/v1/users/{userId}', { params: { path: { userId } } })`. */
    api,

    users: {
      /** A user needs `phoneNumber` or `email`, or both. */
      create: (
        a: ({ phoneNumber: string; email?: string } | { phoneNumber?: string; email: string }) & {
          firstName?: string;
          lastName?: string;
        },
      ) => unwrap(api.POST('/api/v1/users', { body: body('User', a) })).then((r) => r.data),
      get: (userId: string) =>
        unwrap(api.GET('/api/v1/users/{userId}', { params: { path: { userId } } })).then((r) => r.data),
    },

    wallets: {
      create: (userId: string) =>
        unwrap(api.POST('/api/v1/wallets', { body: body('Wallet', { userId }) })).then((r) => r.data),
      balance: (walletId: string, query: { purchaseAmount?: number; includeWithdrawableAmount?: boolean } = {}) =>
        unwrap(api.GET('/api/v1/wallets/{walletId}/balance', { params: { path: { walletId }, query } })).then(
          (r) => r.data,
        ),
      /** One page of every movement of the wallet's money, newest first (`coffer.paginate` walks them all). */
      activity: (walletId: string, query: operations['listWalletActivity']['parameters']['query'] = {}) =>
        unwrap(api.GET('/api/v1/wallets/{walletId}/activity', { params: { path: { walletId }, query } })),
      withdrawals: (walletId: string) =>
        unwrap(api.GET('/api/v1/wallets/{walletId}/withdrawals', { params: { path: { walletId } } })),
      widgetPayload: (walletId: string, purchaseAmount?: number) =>
        unwrap(
          api.GET('/api/v1/widgets/wallet/{walletId}', {
            params: { path: { walletId }, query: purchaseAmount === undefined ? {} : { purchaseAmount } },
          }),
        ).then((r) => r.data.attributes.payload),
    },

    /** A one-time deposit. Without `idempotencyKey` one is made and reused by every retry. */
    deposit: (
      walletId: string,
      a: {
        amount: number;
        linkedAccountId: string;
        idempotencyKey?: string;
        disbursement?: { amount: number; counterpartyId: string }[];
      },
    ) =>
      unwrap(
        api.POST('/api/v1/wallets/{walletId}/transactions', {
          params: { path: { walletId } },
          body: body('OneTimeDeposit', a as { amount: number; linkedAccountId: string; idempotencyKey: string }),
        }),
      ).then((r) => r.data),

    paymentIntents: {
      create: (a: { amount: number; walletId?: string; lookUpId?: string; reference?: string }) =>
        unwrap(api.POST('/api/v1/payment-intents', { body: body('CreatePaymentIntent', a) })).then((r) => r.data),
      get: (intentId: string) =>
        unwrap(
          api.GET('/api/v1/payment-intents/{paymentIntentId}', { params: { path: { paymentIntentId: intentId } } }),
        ).then((r) => r.data),
      /**
       * Authorize. Without `idempotencyKey` one is made once and sent on every retry, so a
       * timeout followed by a retry returns the first result instead of charging twice.
       */
      authorize: (
        intentId: string,
        a: {
          amount: number;
          applyWalletBalance?: boolean;
          idempotencyKey?: string;
          reference?: string;
          channel?: string;
        },
      ) =>
        unwrap(
          api.POST('/api/v1/payment-intents/{paymentIntentId}/authorize', {
            params: { path: { paymentIntentId: intentId } },
            body: body('AuthorizePaymentIntent', a),
          }),
        ),
    },

    payments: {
      get: (paymentId: string) =>
        unwrap(api.GET('/api/v1/payments/{paymentId}', { params: { path: { paymentId } } })).then((r) => r.data),
      capture: (paymentId: string, amount: number) =>
        unwrap(
          api.POST('/api/v1/payments/{paymentId}/capture', {
            params: { path: { paymentId } },
            body: body('CapturePayment', { amount }),
          }),
        ).then((r) => r.data),
      refund: (paymentId: string, a: { amount: number; idempotencyKey?: string; reason?: string }) =>
        unwrap(
          api.POST('/api/v1/payments/{paymentId}/refund', {
            params: { path: { paymentId } },
            body: body('Refund', a as never),
          }),
        ),
    },

    kyc: {
      /** The user accepts the KYC disclosures: needed before the first application. */
      acceptDisclosures: (userId: string) =>
        unwrap(api.POST('/api/v1/users/{userId}/disclosures/kyc', { params: { path: { userId } } })),
      /** Apply; the KYC provider decides (the sandbox within a second): see `status`. */
      apply: (userId: string, a: Attributes<'/api/v1/users/{userId}/kyc/application'>) =>
        unwrap(
          api.POST('/api/v1/users/{userId}/kyc/application', {
            params: { path: { userId } },
            body: body('KycApplication', a) as never,
          }),
        ).then((r) => r.data),
      status: (userId: string) =>
        unwrap(api.GET('/api/v1/users/{userId}/kyc/status', { params: { path: { userId } } })).then((r) => r.data),
      get: (userId: string) =>
        unwrap(api.GET('/api/v1/users/{userId}/kyc', { params: { path: { userId } } })).then((r) => r.data),
      /** A link to the provider's identity-document page, for a user whose KYC waits for documents. */
      documentVerificationLink: (
        userId: string,
        a: Attributes<'/api/v1/users/{userId}/kyc/document-verification-link'>,
      ) =>
        unwrap(
          api.POST('/api/v1/users/{userId}/kyc/document-verification-link', {
            params: { path: { userId } },
            body: body('DocumentVerificationLink', a) as never,
          }),
        ).then((r) => r.data),
    },

    linkedAccounts: {
      list: (userId: string) =>
        unwrap(api.GET('/api/v1/users/{userId}/linked-accounts', { params: { path: { userId } } })).then((r) => r.data),
      /** Removes the account for good. */
      remove: (userId: string, linkedAccountId: string) =>
        unwrap(
          api.DELETE('/api/v1/users/{userId}/linked-accounts/{linkedAccountId}', {
            params: { path: { userId, linkedAccountId } },
          }),
        ),
    },

    /** A withdrawal to a linked account. Without `idempotencyKey` one is made and reused by every retry. */
    withdraw: (walletId: string, a: KeyOptional<Attributes<'/api/v1/wallets/{walletId}/withdraw'>>) =>
      unwrap(
        api.POST('/api/v1/wallets/{walletId}/withdraw', {
          params: { path: { walletId } },
          body: body('Withdraw', a) as never,
        }),
      ).then((r) => r.data),

    rewards: {
      /** Issue a merchant reward. Without `idempotencyKey` one is made and reused by every retry. */
      issue: (a: KeyOptional<Attributes<'/api/v1/rewards'>>) =>
        unwrap(api.POST('/api/v1/rewards', { body: body('IssueReward', a) as never })).then((r) => r.data),
    },

    webhooks: {
      create: (a: Attributes<'/api/v1/webhooks'>) =>
        unwrap(api.POST('/api/v1/webhooks', { body: body('Webhook', a) as never })).then((r) => r.data),
      remove: (webhookId: string) =>
        unwrap(api.DELETE('/api/v1/webhooks/{webhookId}', { params: { path: { webhookId } } })),
    },

    /** The sandbox's simulations of what outside providers do (404 in live). */
    simulations: {
      /** Link a bank account to the user, as the bank-linking provider would. */
      linkAccount: (userId: string, a: Attributes<'/api/v1/simulation/users/{userId}/linked-accounts'> = {}) =>
        unwrap(
          api.POST('/api/v1/simulation/users/{userId}/linked-accounts', {
            params: { path: { userId } },
            body: body('LinkedAccount', a) as never,
          }),
        ).then((r) => r.data),
      /** Clear the wallet's pending bank (or card) transfers now. */
      clearPending: (walletId: string, type: 'bank' | 'card' = 'bank') =>
        unwrap(
          api.POST('/api/v1/simulation/wallets/{walletId}/clear-pending/{type}', {
            params: { path: { walletId, type } as never },
          }),
        ),
      /** Fail one of the wallet's pending transactions. */
      failTransaction: (walletId: string, a: Attributes<'/api/v1/simulation/wallets/{walletId}/fail-transaction'>) =>
        unwrap(
          api.POST('/api/v1/simulation/wallets/{walletId}/fail-transaction', {
            params: { path: { walletId } },
            body: body('FailPendingTransaction', a) as never,
          }),
        ),
      /** Settle a captured payment now. */
      settlePayment: (paymentId: string) =>
        unwrap(api.POST('/api/v1/simulation/payments/{paymentId}/settle', { params: { path: { paymentId } } })),
      /** Fail the bank pull behind a payment. */
      failBankPull: (paymentId: string, a: Attributes<'/api/v1/simulation/payments/{paymentId}/fail-bank-pull'> = {}) =>
        unwrap(
          api.POST('/api/v1/simulation/payments/{paymentId}/fail-bank-pull', {
            params: { path: { paymentId } },
            body: body('SimulateBankPullFailure', a) as never,
          }),
        ),
    },

    /** Every item of a list operation, fetching pages of 50 as it goes. */
    async *paginate<P extends ListPath>(
      path: P,
      opts: { query?: ListQuery<P>; path?: ListPathParams<P> } = {},
    ): AsyncGenerator<ListItem<P>> {
      for (let offset = 0; ; ) {
        const query = { ...(opts.query as object), 'page[limit]': 50, 'page[offset]': offset };
        // biome-ignore lint/suspicious/noExplicitAny: openapi-fetch cannot type a path chosen at run time
        const page = (await unwrap((api.GET as any)(path, { params: { query, path: opts.path } }))) as {
          data: ListItem<P>[];
          meta: { total: number };
        };
        for (const item of page.data) yield item;
        offset += page.data.length;
        if (page.data.length === 0 || offset >= page.meta.total) return;
      }
    },
  };
}

export type Coffer = ReturnType<typeof createCoffer>;
