import type { operations } from '../schema.ts';
import { type Api, type Attributes, body, type KeyOptional, unwrap } from './shared.ts';

export const wallets = (api: Api) => ({
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
});

/** A one-time deposit. Without `idempotencyKey` one is made and reused by every retry. */
export const deposit =
  (api: Api) =>
  (
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
    ).then((r) => r.data);

/** A withdrawal to a linked account. Without `idempotencyKey` one is made and reused by every retry. */
export const withdraw =
  (api: Api) => (walletId: string, a: KeyOptional<Attributes<'/api/v1/wallets/{walletId}/withdraw'>>) =>
    unwrap(
      api.POST('/api/v1/wallets/{walletId}/withdraw', {
        params: { path: { walletId } },
        body: body('Withdraw', a) as never,
      }),
    ).then((r) => r.data);
