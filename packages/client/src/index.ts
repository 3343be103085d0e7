// @coffer/client: a typed client for the Coffer API. Every operation of the OpenAPI document
// is on `coffer.api` (openapi-fetch, types generated from the served document); the helpers
// below cover the common flows and throw CofferError instead of returning error values.
import createClient from 'openapi-fetch';
import { DEFAULT_RETRY, retryingFetch, type RetryOptions } from './retry.ts';
import { counterparties, counterpartyTransfers } from './areas/counterparties.ts';
import { paymentIntents, payments } from './areas/checkout.ts';
import { externalTransactions } from './areas/external-transactions.ts';
import { gifts } from './areas/gifts.ts';
import { rewards } from './areas/rewards.ts';
import { sweepstakes } from './areas/sweepstakes.ts';
import { type Api, JSONAPI, unwrap } from './areas/shared.ts';
import { simulations } from './areas/simulations.ts';
import { identityVerification, kyc, linkedAccounts, users } from './areas/users.ts';
import { deposit, wallets, withdraw } from './areas/wallets.ts';
import { events, webhooks } from './areas/webhooks.ts';
import type { components, paths } from './schema.ts';

export { CofferError, type ApiErrorObject } from './errors.ts';
export { ERROR_CODES, type ErrorCode } from './codes.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.ts';
export type { RetryOptions } from './retry.ts';
export type { components, paths } from './schema.ts';
export { unwrap } from './areas/shared.ts';

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

export function createCoffer(o: CofferOptions) {
  const base = o.fetch ?? globalThis.fetch;
  // JSON:API media type on every body (openapi-fetch defaults to application/json).
  const jsonApiFetch: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    if (req.headers.has('content-type')) req.headers.set('content-type', JSONAPI);
    return base(req);
  };
  const api: Api = createClient<paths>({
    baseUrl: o.baseUrl.replace(/\/$/, ''),
    headers: { 'client-id': o.clientId, authorization: `Bearer ${o.secret}`, accept: JSONAPI },
    fetch: retryingFetch({ ...DEFAULT_RETRY, ...o.retry, fetch: jsonApiFetch }),
  });

  return {
    /** Every operation, typed: `coffer.api.GET('/api/v1/users/{userId}', { params: { path: { userId } } })`. */
    api,
    users: users(api),
    kyc: kyc(api),
    identityVerification: identityVerification(api),
    linkedAccounts: linkedAccounts(api),
    wallets: wallets(api),
    deposit: deposit(api),
    withdraw: withdraw(api),
    paymentIntents: paymentIntents(api),
    payments: payments(api),
    rewards: rewards(api),
    gifts: gifts(api),
    sweepstakes: sweepstakes(api),
    counterparties: counterparties(api),
    counterpartyTransfers: counterpartyTransfers(api),
    externalTransactions: externalTransactions(api),
    webhooks: webhooks(api),
    events: events(api),
    simulations: simulations(api),

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
