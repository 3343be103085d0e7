import { refuseOverMaxAmount } from '../clients/settings.ts';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { apiError } from '../../http/errors.ts';
import { fingerprintOf, sendOutcome } from '../../http/idempotency.ts';
import { listQuery, pageLinks, pageOf } from '../../http/paging.ts';
import {
  COMMON_ERRORS,
  Cents,
  JSONAPI,
  Timestamp,
  document,
  idParams,
  listDocument,
  ref,
  requestBody,
  resource,
  responses,
  IdempotencyKey,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { findWallet } from '../wallets/sql.ts';
import { findWithdrawal, listWithdrawalRows, type WithdrawalRow } from './sql.ts';
import { submitWithdrawal } from './withdraw-groups.ts';

const Withdraw = resource('Withdraw', 'Withdraw', {
  amount: Type.Integer(),
  split: Type.Array(
    Type.Object({
      linkedAccountId: Type.String(),
      institutionName: Type.String(),
      accountMask: Type.String(),
      amount: Type.Integer(),
    }),
  ),
  createdAt: Timestamp(),
});

const WithdrawBody = requestBody(
  'Withdraw',
  Type.Object(
    {
      amount: Cents({ minimum: 1 }),
      idempotencyKey: Type.Optional({
        ...IdempotencyKey,
        description: 'Optional: makes retries safe (same rules as deposits)',
      }),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [Withdraw];

function withdrawResource(w: WithdrawalRow) {
  return {
    id: w.id,
    type: 'Withdraw' as const,
    attributes: { amount: w.amount, split: w.split, createdAt: w.createdAt.toISOString() },
  };
}

export async function withdrawalRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  app.post(
    '/api/v1/wallets/:walletId/withdraw',
    {
      schema: {
        tags: ['Withdrawals'],
        operationId: 'closedLoopWithdraw',
        summary: 'Withdraw to linked accounts (closed loop)',
        description:
          "Sends available deposit money back to the user's connected linked accounts, split in proportion to what each deposited (largest remainder). " +
          'Never more than the withdrawable amount (400 `InsufficientWithdrawableBalance`); no connected account: 400 `LinkedAccountMissing`. Needs KYC `Approved`.',
        params: idParams('walletId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        body: WithdrawBody,
        response: responses({ 201: document(ref(Withdraw)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, amount } = req.body.data.attributes;
      refuseOverMaxAmount(amount, req.client.settings, '/data/attributes/amount');
      const clientAccounts = await clientAccountIds(ctx.db, req.client.id);
      const serialize = reply.getSerializationFunction('201', JSONAPI) ?? JSON.stringify;
      const outcome = await submitWithdrawal(ctx.db, {
        scope: {
          clientId: req.client.id,
          operation: 'withdraw',
          key: idempotencyKey,
          fingerprint: fingerprintOf([req.params.walletId, { amount }]),
        },
        input: { clientId: req.client.id, walletId: req.params.walletId, amount, clientAccounts, now: ctx.clock.now() },
        render: (created) => serialize({ data: withdrawResource(created) }),
      });
      // The bank pushes are started by the bank-pushes job, outside any transaction.
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/withdrawals/:withdrawalId',
    {
      schema: {
        tags: ['Withdrawals'],
        operationId: 'getWithdrawal',
        summary: 'Get a withdrawal',
        description: "Another merchant's withdrawal is 404 `WithdrawalNotFound`.",
        params: idParams('withdrawalId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(Withdraw)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const w = await findWithdrawal(ctx.db, req.client.id, req.params.withdrawalId);
      if (!w) throw apiError('WithdrawalNotFound', `No withdrawal ${req.params.withdrawalId}.`);
      return { data: withdrawResource(w) };
    },
  );

  app.get(
    '/api/v1/wallets/:walletId/withdrawals',
    {
      schema: {
        tags: ['Withdrawals'],
        operationId: 'listWalletWithdrawals',
        summary: "List a wallet's withdrawals",
        description: "Newest first. Another merchant's wallet is 404 `WalletNotFound`.",
        params: idParams('walletId'),
        querystring: listQuery({}),
        response: responses({ 200: listDocument(ref(Withdraw)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { walletId } = req.params;
      if (!(await findWallet(ctx.db, req.client.id, walletId)))
        throw apiError('WalletNotFound', `No wallet ${walletId}.`);
      const page = pageOf(req.query);
      const { rows, total } = await listWithdrawalRows(ctx.db, req.client.id, walletId, page);
      return {
        data: rows.map(withdrawResource),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );
}
