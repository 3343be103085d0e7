import { type Api, type Attributes, body, type KeyOptional, type Query, unwrap } from './shared.ts';

/** Your own bank accounts that receive disbursements, and their payouts. */
export const counterparties = (api: Api) => ({
  create: (a: Attributes<'/api/v1/counterparties'>) =>
    unwrap(api.POST('/api/v1/counterparties', { body: body('Counterparty', a) })).then((r) => r.data),
  get: (counterpartyId: string) =>
    unwrap(api.GET('/api/v1/counterparties/{counterpartyId}', { params: { path: { counterpartyId } } })).then(
      (r) => r.data,
    ),
  /** One page, with `meta.total` (`coffer.paginate` walks them all). */
  list: (query: Query<'listCounterparties'> = {}) => unwrap(api.GET('/api/v1/counterparties', { params: { query } })),
  /** Only the label can change. */
  update: (counterpartyId: string, a: Attributes<'/api/v1/counterparties/{counterpartyId}', 'patch'>) =>
    unwrap(
      api.PATCH('/api/v1/counterparties/{counterpartyId}', {
        params: { path: { counterpartyId } },
        body: body('Counterparty', a),
      }),
    ).then((r) => r.data),
  remove: (counterpartyId: string) =>
    unwrap(api.DELETE('/api/v1/counterparties/{counterpartyId}', { params: { path: { counterpartyId } } })),
  payouts: {
    /** Pay out of the counterparty's balance. Without `idempotencyKey` one is made and reused by every retry. */
    create: (counterpartyId: string, a: KeyOptional<Attributes<'/api/v1/counterparties/{counterpartyId}/payouts'>>) =>
      unwrap(
        api.POST('/api/v1/counterparties/{counterpartyId}/payouts', {
          params: { path: { counterpartyId } },
          body: body('CreateCounterpartyPayout', a) as never,
        }),
      ).then((r) => r.data),
    list: (counterpartyId: string, query: Query<'listCounterpartyPayouts'> = {}) =>
      unwrap(
        api.GET('/api/v1/counterparties/{counterpartyId}/payouts', { params: { path: { counterpartyId }, query } }),
      ),
  },
});

/** Moves between two of your counterparties' balances. */
export const counterpartyTransfers = (api: Api) => ({
  /** Without `idempotencyKey` one is made and reused by every retry. */
  create: (a: KeyOptional<Attributes<'/api/v1/counterparty-transfers'>>) =>
    unwrap(api.POST('/api/v1/counterparty-transfers', { body: body('CounterpartyTransfer', a) as never })).then(
      (r) => r.data,
    ),
  get: (counterpartyTransferId: string) =>
    unwrap(
      api.GET('/api/v1/counterparty-transfers/{counterpartyTransferId}', {
        params: { path: { counterpartyTransferId } },
      }),
    ).then((r) => r.data),
  list: (query: Query<'listCounterpartyTransfers'> = {}) =>
    unwrap(api.GET('/api/v1/counterparty-transfers', { params: { query } })),
});
