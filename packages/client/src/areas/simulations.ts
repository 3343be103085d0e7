import { type Api, type Attributes, body, unwrap } from './shared.ts';

/** The sandbox's simulations of what outside providers do (404 in live). */
export const simulations = (api: Api) => ({
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
  /** A merchant-funded gift of `amount` cents; its `id` is the lookup id a customer presents. */
  createGift: (amount: number) =>
    unwrap(api.POST('/api/v1/simulation/gifts', { body: body('Gift', { amount }) })).then((r) => r.data),
  /** Money arriving in the counterparty's balance. */
  counterpartyDeposit: (counterpartyId: string, amount: number) =>
    unwrap(
      api.POST('/api/v1/simulation/counterparties/{counterpartyId}/deposits', {
        params: { path: { counterpartyId } },
        body: body('SimulateCounterpartyDeposit', { amount }),
      }),
    ),
  /** The bank completes a counterparty payout. */
  completeCounterpartyPayout: (counterpartyId: string, payoutId: string) =>
    unwrap(
      api.POST('/api/v1/simulation/counterparties/{counterpartyId}/payouts/{payoutId}/complete', {
        params: { path: { counterpartyId, payoutId } },
      }),
    ),
  /** The bank returns a counterparty payout (an ACH return code such as R01). */
  returnCounterpartyPayout: (
    counterpartyId: string,
    payoutId: string,
    a: Attributes<'/api/v1/simulation/counterparties/{counterpartyId}/payouts/{payoutId}/return'> = {},
  ) =>
    unwrap(
      api.POST('/api/v1/simulation/counterparties/{counterpartyId}/payouts/{payoutId}/return', {
        params: { path: { counterpartyId, payoutId } },
        body: body('SimulateCounterpartyPayoutReturn', a),
      }),
    ),
});
