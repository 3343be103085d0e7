// Merchant-funded rewards (Accrue's Rewards operations; docs/money.md): issue (idempotent),
// list, read, change a waiting pre-issued reward, cancel.
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { wrappedOrBare } from '../../http/patch-body.ts';
import { ApiError } from '../../http/errors.ts';
import { COMMON_ERRORS, document, idParams, listDocument, Nullable, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { cancelReward, issueReward, listRewards, showReward, updateReward, type RewardMetadata } from './domain.ts';
import { rewardResource } from './render.ts';
import { IssueRewardBody, ListRewardsQuery, Reward, UpdateRewardBodies } from './schemas.ts';

export { schemas } from './schemas.ts';

const TAGS = ['Rewards'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function rewardRoutes(app: App, ctx: AppContext): Promise<void> {
  const baseUrl = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/rewards',
    {
      schema: {
        tags: TAGS,
        operationId: 'issueReward',
        summary: 'Issue a merchant reward',
        description:
          'To a wallet (`walletId`) or a phone number (`phoneNumber`, E.164), exactly one. A wallet, or a number whose user has an Active wallet, is credited at once ' +
          '(`kind: immediate`, `Credited`: the merchant reward balance, spent first at checkout). A number with no wallet gets a pre-issued reward (`kind: preIssued`, `Created`), ' +
          'credited when a wallet is opened for it (`Claimed`), else `Expired` after 90 days; one may wait per number (409 `PreIssuedConflict`). ' +
          "A Closed wallet: 409 `WalletNotIssuable`. 200 in every case (Accrue's status). `idempotencyKey` is required, with the same rules as deposits.",
        body: IssueRewardBody,
        response: responses({ 200: document(ref(Reward)) }, [...COMMON_ERRORS, 409]),
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
          const now = ctx.clock.now();
          const r = await issueReward(tx, { clientId: req.client.id, ...attributes, clientAccounts, baseUrl, now });
          return { status: 200, body: { data: rewardResource(r, { baseUrl, now, unspent: r.amount }) } };
        },
      );
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/rewards',
    {
      schema: {
        tags: TAGS,
        operationId: 'listIssuedRewards',
        summary: 'List rewards',
        description:
          'Newest first. `filter[phoneNumber]` matches the number a reward was issued to and the current number of the user whose wallet holds it; `filter[status]` as shown ' +
          '(a pre-issued reward past its claim window is `Expired`).',
        querystring: ListRewardsQuery,
        response: responses({ 200: listDocument(ref(Reward)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const now = ctx.clock.now();
      const { rows, total, unspent } = await listRewards(ctx.db, {
        clientId: req.client.id,
        filters: { phoneNumber: req.query['filter[phoneNumber]'], status: req.query['filter[status]'] },
        page,
        now,
      });
      return {
        data: rows.map((r) => rewardResource(r, { baseUrl, now, unspent: unspent.get(r.id) ?? 0 })),
        meta: { total, ...page },
        links: pageLinks(baseUrl, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/rewards/:id',
    {
      schema: {
        tags: TAGS,
        operationId: 'getIssuedRewardById',
        summary: 'Get a reward (data: null when there is no such reward)',
        description: "Unknown, or another merchant's: 200 with `data: null`, as Accrue answers it.",
        params: idParams('id'),
        querystring: NoQuery,
        response: responses({ 200: document(Nullable(ref(Reward))) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const shown = await showReward(ctx.db, { clientId: req.client.id, rewardId: req.params.id }).catch(
        (err: unknown) => {
          if (err instanceof ApiError && err.status === 404) return undefined;
          throw err;
        },
      );
      if (!shown) return { data: null };
      return { data: rewardResource(shown.reward, { baseUrl, now: ctx.clock.now(), unspent: shown.unspent }) };
    },
  );

  const { body: UpdateRewardBody, options: updateOptions } = wrappedOrBare(UpdateRewardBodies);
  app.patch(
    '/api/v1/rewards/:id',
    {
      schema: {
        tags: TAGS,
        operationId: 'updateReward',
        summary: 'Change a pre-issued reward',
        description:
          'Only while `canUpdate`: a pre-issued reward waiting to be claimed (no money has moved). Any other: 409 `InvalidState`. At least one attribute. ' +
          "An `id` in the body must be the path's id (409 `Conflict`).",
        params: idParams('id'),
        body: UpdateRewardBody,
        response: responses({ 200: document(ref(Reward)) }, [...COMMON_ERRORS, 404, 409]),
      },
      ...updateOptions,
    },
    async (req) => {
      const { data } = req.body as { data: { id?: string; attributes: RewardMetadata & { amount?: number } } };
      const now = ctx.clock.now();
      const r = await updateReward(ctx.db, {
        clientId: req.client.id,
        rewardId: req.params.id,
        bodyId: data.id,
        patch: data.attributes,
        baseUrl,
        now,
      });
      return { data: rewardResource(r, { baseUrl, now, unspent: 0 }) };
    },
  );

  app.delete(
    '/api/v1/rewards/:id',
    {
      schema: {
        tags: TAGS,
        operationId: 'cancelReward',
        summary: 'Cancel a reward',
        description:
          'While `canCancel`. A waiting pre-issued reward is cancelled (nothing had moved). A credited one gives back the part still in the wallet (the wallet spends its merchant rewards ' +
          'oldest first, so its newest rewards hold what is left), shown as `reversedAmount`. All spent, cancelled or expired: 409 `InvalidState`.',
        params: idParams('id'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      await cancelReward(ctx.db, { clientId: req.client.id, rewardId: req.params.id, baseUrl, now: ctx.clock.now() });
      return reply.code(204).send();
    },
  );
}
