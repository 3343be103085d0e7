import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { apiError } from '../../http/errors.ts';
import {
  COMMON_ERRORS,
  defaultBody,
  document,
  idParams,
  JSONAPI,
  listDocument,
  ref,
  responses,
  Uuid,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { clearPendingDeposits, failDeposit, getTransaction, listTransactions } from './domain.ts';
import { submitDeposit } from './deposit-groups.ts';
import { depositResource, transactionResource } from './render.ts';
import {
  DepositBody,
  FAILURE_REASONS,
  FailTransactionBody,
  ListTransactionsQuery,
  OneTimeDeposit,
  Transaction,
} from './schemas.ts';

const CLEARING_TYPES = ['bank', 'card'] as const;

const TAGS = ['Deposits and transactions'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function transactionRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/wallets/:walletId/transactions',
    {
      schema: {
        tags: TAGS,
        operationId: 'createOneTimeDeposit',
        summary: 'Make a one-time deposit',
        description:
          "Pulls `amount` from the user's connected linked account. Each `disbursement` goes to its counterparty; the rest credits the wallet as pending until the transfer clears " +
          "(`TransactionCleared`, with the merchant's deposit reward) or fails (`TransactionFailed`). The ACH fee is charged to the merchant's fee counterparty, or deducted " +
          '(`deductions.fee`) when it has none. Needs KYC `Approved`. `idempotencyKey` is required: the same key and attributes replay the first response byte for byte ' +
          '(`Idempotent-Replayed: true`); while the first runs, 409 `IdempotencyKeyInUse`; other attributes, 409 `IdempotencyKeyReused`.',
        params: idParams('walletId'),
        querystring: NoQuery,
        body: DepositBody,
        response: responses({ 201: document(ref(OneTimeDeposit)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, ...attributes } = req.body.data.attributes;
      const clientAccounts = await clientAccountIds(ctx.db, req.client.id);
      const serialize = reply.getSerializationFunction('201', JSONAPI) ?? JSON.stringify;
      const outcome = await submitDeposit(ctx.db, {
        scope: {
          clientId: req.client.id,
          operation: 'deposit',
          key: idempotencyKey,
          fingerprint: fingerprintOf([req.params.walletId, attributes]),
        },
        input: {
          clientId: req.client.id,
          settings: req.client.settings,
          walletId: req.params.walletId,
          ...attributes,
          clientAccounts,
          now: ctx.clock.now(),
        },
        render: (created) => serialize({ data: depositResource(created, base) }),
      });
      // The bank pull is started by the bank-pulls job, outside any transaction.
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/wallets/:walletId/transactions',
    {
      schema: {
        tags: TAGS,
        operationId: 'listTransactions',
        summary: "List a wallet's transactions",
        description:
          'Newest first. Only `NonRecurring` transactions exist: `type=NonRecurring` (or no `type`) lists them; any other `type` returns an empty list.',
        params: idParams('walletId'),
        querystring: ListTransactionsQuery,
        response: responses({ 200: listDocument(ref(Transaction)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listTransactions(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        type: req.query.type,
        page,
      });
      return {
        data: rows.map((t) => transactionResource(t, base)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/wallets/:walletId/transactions/:transactionId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getTransaction',
        summary: 'Get a transaction',
        params: idParams('walletId', 'transactionId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Transaction)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({
      data: transactionResource(
        await getTransaction(ctx.db, {
          clientId: req.client.id,
          walletId: req.params.walletId,
          transactionId: req.params.transactionId,
        }),
        base,
      ),
    }),
  );
}

/** Sandbox only: the bank's answers. */
export async function transactionSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  const SIM = ['Sandbox simulations'];

  app.post(
    '/api/v1/simulation/wallets/:walletId/clear-pending/:type',
    {
      schema: {
        tags: SIM,
        operationId: 'clearPendingTransactions',
        summary: "Clear the wallet's pending deposits of one kind (sandbox)",
        description:
          '`bank`: every pending deposit pulled from a bank account clears; `card`: every pending deposit charged to a card (a demo backup payment method) clears. ' +
          'Pending → available, the deposit reward is credited, `TransactionCleared` fires for each. Any other `type` is 400 `InvalidTransactionType`.',
        params: Type.Object({ walletId: Uuid(), type: Type.Enum(CLEARING_TYPES) }, { additionalProperties: false }),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
      // Before validation, so an unknown type is Accrue's InvalidTransactionType, not BadRequest.
      preValidation: async (req) => {
        const type = (req.params as { type?: string }).type;
        if (!(CLEARING_TYPES as readonly string[]).includes(type ?? '')) {
          throw apiError('InvalidTransactionType', `Unknown transaction type "${type}"; use bank or card.`, {
            parameter: 'type',
          });
        }
      },
    },
    async (req, reply) => {
      await clearPendingDeposits(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        funding: req.params.type,
        settings: req.client.settings,
        baseUrl: base,
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/simulation/wallets/:walletId/fail-transaction',
    {
      schema: {
        tags: SIM,
        operationId: 'failPendingTransaction',
        summary: 'Fail a pending deposit (sandbox)',
        description:
          '`transactionId` (default: the oldest pending deposit) fails: the money returns where it came from and `TransactionFailed` fires with `failureReason`. ' +
          `Type \`FailPendingTransaction\` (Accrue's name) takes \`reason\` from ${FAILURE_REASONS.map((r) => `\`${r}\``).join(', ')} (default \`Unknown\`); ` +
          'types `Transaction` and `SimulateFailTransaction` take any text. The body is optional.',
        params: idParams('walletId'),
        querystring: NoQuery,
        body: FailTransactionBody,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'Transaction', attributes: {} } }),
    },
    async (req, reply) => {
      const { type, attributes } = req.body.data;
      let reason = attributes.reason;
      if (type === 'FailPendingTransaction') {
        if (reason !== undefined && !(FAILURE_REASONS as readonly string[]).includes(reason)) {
          throw apiError(
            'ValidationError',
            `\`reason\` must be one of ${FAILURE_REASONS.map((r) => `"${r}"`).join(', ')}`,
            { pointer: '/data/attributes/reason' },
          );
        }
        reason ??= 'Unknown';
      }
      await failDeposit(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        settings: req.client.settings,
        baseUrl: base,
        transactionId: attributes.transactionId,
        reason,
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );
}
