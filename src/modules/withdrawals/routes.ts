import { refuseOverMaxAmount } from '../clients/settings.ts';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, sendOutcome } from '../../http/idempotency.ts';
import {
  COMMON_ERRORS,
  Cents,
  JSONAPI,
  Timestamp,
  document,
  idParams,
  ref,
  requestBody,
  resource,
  responses,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { IdempotencyKey } from '../transactions/schemas.ts';
import type { WithdrawalRow } from './sql.ts';
import { submitWithdrawal } from './withdraw-groups.ts';

export const Withdraw = resource('Withdraw', 'Withdraw', {
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
}
