// Merchant-funded rewards (decisions §6): POST /api/v1/rewards credits the wallet's merchant
// reward bucket at once, from the merchant's reward funding account. Idempotent.
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { COMMON_ERRORS, Cents, Nullable, Timestamp, Uuid, document, ref, requestBody, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { IdempotencyKey } from '../transactions/schemas.ts';
import { issueReward } from './domain.ts';

export const Reward = resource('Reward', 'Reward', {
  walletId: Type.String(),
  amount: Type.Integer(),
  message: Nullable(Type.String()),
  createdAt: Timestamp(),
});

const IssueRewardBody = requestBody(
  'IssueReward',
  Type.Object(
    { walletId: Uuid(), amount: Cents({ minimum: 1 }), idempotencyKey: IdempotencyKey, message: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) },
    { additionalProperties: false },
  ),
);

export const schemas = [Reward];

export async function rewardRoutes(app: App, ctx: AppContext): Promise<void> {
  app.post(
    '/api/v1/rewards',
    {
      schema: {
        tags: ['Rewards'],
        operationId: 'issueReward',
        summary: 'Issue a merchant reward',
        description: "Credits the wallet's merchant reward balance at once (spent first at checkout). `idempotencyKey` is required, with the same rules as deposits.",
        body: IssueRewardBody,
        response: responses({ 201: document(ref(Reward)) }, [...COMMON_ERRORS, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, ...attributes } = req.body.data.attributes;
      const clientAccounts = await clientAccountIds(ctx.db, req.client.id);
      const outcome = await idempotent(
        reply,
        { clientId: req.client.id, operation: 'reward', key: idempotencyKey, fingerprint: fingerprintOf(attributes) },
        { db: ctx.db, clock: ctx.clock },
        async (tx) => {
          const r = await issueReward(tx, { clientId: req.client.id, ...attributes, clientAccounts, now: ctx.clock.now() });
          return {
            status: 201,
            body: { data: { id: r.id, type: 'Reward' as const, attributes: { walletId: r.walletId, amount: r.amount, message: r.message, createdAt: r.createdAt.toISOString() } } },
          };
        },
      );
      return sendOutcome(reply, outcome);
    },
  );
}
