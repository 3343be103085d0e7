import type { paths } from '../schema.ts';
import { type Api, type Query, unwrap } from './shared.ts';

type ExternalTransaction = NonNullable<
  paths['/api/v1/external-transactions']['post']['requestBody']
>['content']['application/vnd.api+json']['data'][number]['attributes'];

/** Purchases, voids and refunds recorded in your other systems (POS, e-commerce). */
export const externalTransactions = (api: Api) => ({
  /** Record up to 100 at once; each `(type, source.id)` is recorded once. */
  add: (items: ExternalTransaction[]) =>
    unwrap(
      api.POST('/api/v1/external-transactions', {
        body: { data: items.map((attributes) => ({ type: 'ExternalTransaction' as const, attributes })) },
      }),
    ).then((r) => r.data),
  get: (externalTransactionId: string) =>
    unwrap(
      api.GET('/api/v1/external-transactions/{externalTransactionId}', {
        params: { path: { externalTransactionId } },
      }),
    ).then((r) => r.data),
  list: (query: Query<'listExternalTransactions'> = {}) =>
    unwrap(api.GET('/api/v1/external-transactions', { params: { query } })),
});
