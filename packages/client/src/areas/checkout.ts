import { type Api, type Attributes, body, type KeyOptional, type Query, unwrap } from './shared.ts';

export const paymentIntents = (api: Api) => ({
  create: (a: { amount: number; walletId?: string; lookUpId?: string; reference?: string }) =>
    unwrap(api.POST('/api/v1/payment-intents', { body: body('CreatePaymentIntent', a) })).then((r) => r.data),
  get: (intentId: string) =>
    unwrap(
      api.GET('/api/v1/payment-intents/{paymentIntentId}', { params: { path: { paymentIntentId: intentId } } }),
    ).then((r) => r.data),
  /** One page of intents, with `meta.total` (`coffer.paginate` walks them all). */
  list: (query: Query<'listPaymentIntents'> = {}) => unwrap(api.GET('/api/v1/payment-intents', { params: { query } })),
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
  cancel: (intentId: string) =>
    unwrap(
      api.POST('/api/v1/payment-intents/{paymentIntentId}/cancel', {
        params: { path: { paymentIntentId: intentId } },
      }),
    ).then((r) => r.data),
});

export const payments = (api: Api) => ({
  /** A direct payment from a wallet (no intent). Without `idempotencyKey` one is made and reused by every retry. */
  create: (a: KeyOptional<Attributes<'/api/v1/payments'>>) =>
    unwrap(api.POST('/api/v1/payments', { body: body('CreatePayment', a) as never })).then((r) => r.data),
  get: (paymentId: string) =>
    unwrap(api.GET('/api/v1/payments/{paymentId}', { params: { path: { paymentId } } })).then((r) => r.data),
  /** One page of payments, with `meta.total` (`coffer.paginate` walks them all). */
  list: (query: Query<'listPayments'> = {}) => unwrap(api.GET('/api/v1/payments', { params: { query } })),
  /** Set or clear (`null`) the payment's reference. */
  update: (paymentId: string, a: Attributes<'/api/v1/payments/{paymentId}', 'patch'>) =>
    unwrap(
      api.PATCH('/api/v1/payments/{paymentId}', { params: { path: { paymentId } }, body: body('Payment', a) }),
    ).then((r) => r.data),
  capture: (paymentId: string, amount: number) =>
    unwrap(
      api.POST('/api/v1/payments/{paymentId}/capture', {
        params: { path: { paymentId } },
        body: body('CapturePayment', { amount }),
      }),
    ).then((r) => r.data),
  /** Reserve `increase` more cents. Without `idempotencyKey` one is made and reused by every retry. */
  increaseAuthorization: (paymentId: string, a: { increase: number; idempotencyKey?: string }) =>
    unwrap(
      api.PATCH('/api/v1/payments/{paymentId}/increase-authorization', {
        params: { path: { paymentId } },
        body: body('IncreaseAuthorization', a),
      }),
    ).then((r) => r.data),
  /** Cancel an authorization: the reserved funds are released. */
  cancel: (paymentId: string) =>
    unwrap(api.POST('/api/v1/payments/{paymentId}/cancel', { params: { path: { paymentId } } })).then((r) => r.data),
  /** Complete a card-rail or gift payment the card network captured. */
  complete: (paymentId: string) =>
    unwrap(api.POST('/api/v1/payments/{paymentId}/complete', { params: { path: { paymentId } } })).then((r) => r.data),
  refund: (paymentId: string, a: { amount: number; idempotencyKey?: string; reason?: string }) =>
    unwrap(
      api.POST('/api/v1/payments/{paymentId}/refund', {
        params: { path: { paymentId } },
        body: body('Refund', a as never),
      }),
    ),
});
