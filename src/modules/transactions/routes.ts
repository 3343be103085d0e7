import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, JSONAPI, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { clearPendingDeposits, failDeposit, getTransaction, listTransactions } from './domain.ts';
import { submitDeposit } from './deposit-groups.ts';
import { depositResource, transactionResource } from './render.ts';
import { DepositBody, FailTransactionBody, ListTransactionsQuery, OneTimeDeposit, Transaction } from './schemas.ts';

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
          'Pulls `amount` from the user\'s connected linked account. Each `disbursement` goes to its counterparty; the rest credits the wallet as pending until the transfer clears ' +
          '(`TransactionCleared`, with the merchant\'s deposit reward) or fails (`TransactionFailed`). The ACH fee is charged to the merchant\'s fee counterparty, or deducted ' +
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
        scope: { clientId: req.client.id, operation: 'deposit', key: idempotencyKey, fingerprint: fingerprintOf([req.params.walletId, attributes]) },
        input: { clientId: req.client.id, settings: req.client.settings, walletId: req.params.walletId, ...attributes, clientAccounts, now: ctx.clock.now() },
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
        description: 'Newest first. Only `NonRecurring` transactions exist: `type=NonRecurring` (or no `type`) lists them; any other `type` returns an empty list.',
        params: idParams('walletId'),
        querystring: ListTransactionsQuery,
        response: responses({ 200: listDocument(ref(Transaction)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listTransactions(ctx.db, { clientId: req.client.id, walletId: req.params.walletId, type: req.query.type, page });
      return { data: rows.map((t) => transactionResource(t, base)), meta: { total, ...page }, links: pageLinks(base, req.url, page, total) };
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
      data: transactionResource(await getTransaction(ctx.db, { clientId: req.client.id, walletId: req.params.walletId, transactionId: req.params.transactionId }), base),
    }),
  );
}

/** Sandbox only: the bank's answers. */
export async function transactionSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  const SIM = ['Sandbox simulations'];

  app.post(
    '/api/v1/simulation/wallets/:walletId/clear-pending/bank',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateClearPendingDeposits',
        summary: "Clear the wallet's pending deposits (sandbox)",
        description: 'Every pending deposit clears: pending → available, the deposit reward is credited, `TransactionCleared` fires for each.',
        params: idParams('walletId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await clearPendingDeposits(ctx.db, { clientId: req.client.id, walletId: req.params.walletId, settings: req.client.settings, baseUrl: base, now: ctx.clock.now() });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/simulation/wallets/:walletId/fail-transaction',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateFailTransaction',
        summary: 'Fail a pending deposit (sandbox)',
        description: '`transactionId` (default: the oldest pending deposit) fails: the money returns where it came from and `TransactionFailed` fires. The body is optional.',
        params: idParams('walletId'),
        querystring: NoQuery,
        body: FailTransactionBody,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'Transaction', attributes: {} } }),
    },
    async (req, reply) => {
      await failDeposit(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        settings: req.client.settings,
        baseUrl: base,
        ...req.body.data.attributes,
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );
}
