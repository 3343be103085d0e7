// Merchant-funded rewards (decisions §6): POST /api/v1/rewards credits the wallet's merchant
// reward bucket at once, from the merchant's reward funding account. Idempotent.
import { eq } from 'drizzle-orm';
import { Type } from 'typebox';
import { uuidv7 } from 'uuidv7';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/open.ts';
import { rewards } from '../../db/schema.ts';
import { apiError } from '../../http/errors.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { COMMON_ERRORS, Cents, Nullable, Timestamp, Uuid, document, ref, requestBody, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { accountIds, clientAccountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import { IdempotencyKey } from '../transactions/schemas.ts';
import { findWallet } from '../wallets/sql.ts';

export type RewardRow = typeof rewards.$inferSelect;

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

export async function issueReward(
  tx: Executor,
  i: { clientId: string; walletId: string; amount: number; message?: string; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<RewardRow> {
  const wallet = await findWallet(tx, i.clientId, i.walletId);
  if (!wallet) throw apiError('WalletNotFound', `No wallet ${i.walletId}.`, { status: 400, pointer: '/data/attributes/walletId' });
  if (wallet.status !== 'Active') throw apiError('WalletClosed', undefined, { pointer: '/data/attributes/walletId' });
  const id = uuidv7();
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: wallet.id });
  await postEntry(tx, {
    clientId: i.clientId,
    kind: 'reward.merchant',
    refType: 'reward',
    refId: id,
    postings: [
      { accountId: i.clientAccounts['merchant.rewards'], amount: -i.amount },
      { accountId: w['reward.merchant.available'], amount: i.amount },
    ],
    now: i.now,
  });
  const [row] = await tx.insert(rewards).values({ id, clientId: i.clientId, walletId: wallet.id, amount: i.amount, message: i.message ?? null, createdAt: i.now }).returning();
  return row!;
}

export async function findReward(db: Executor, id: string): Promise<RewardRow | undefined> {
  const [row] = await db.select().from(rewards).where(eq(rewards.id, id));
  return row;
}

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
