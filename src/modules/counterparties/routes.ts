import { randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { notFoundAsAccrue } from '../../http/errors.ts';
import type { AppContext } from '../../context.ts';
import type { Tx } from '../../db/open.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import {
  counterpartyBalances,
  createCounterparty,
  deleteCounterparty,
  getCounterparty,
  listCounterparties,
  updateCounterparty,
} from './domain.ts';
import { completePayout, createPayout, listPayouts, recordIncomingPayment, returnPayout } from './payouts.ts';
import { counterpartyResource, payoutResource } from './render.ts';
import {
  Counterparty,
  CounterpartyPayout,
  CreateCounterpartyBody,
  CreatePayoutBody,
  ListCounterpartiesQuery,
  ListPayoutsQuery,
  SimulateDepositBody,
  SimulatePayoutReturnBody,
  UpdateCounterpartyBody,
} from './schemas.ts';
import type { CounterpartyRow } from './sql.ts';

const TAGS = ['Counterparties'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function counterpartyRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  const render = { baseUrl: base, sandbox: ctx.config.environment === 'sandbox' };
  const withBalance = async (cp: CounterpartyRow) =>
    counterpartyResource(cp, (await counterpartyBalances(ctx.db, [cp.id])).get(cp.id)!, render);

  app.post(
    '/api/v1/counterparties',
    {
      schema: {
        tags: TAGS,
        operationId: 'createCounterparty',
        summary: 'Create a counterparty',
        description:
          'A payee for deposit and payment disbursements, or the payer of processing fees (the merchant setting `feeCounterpartyId`). `routingNumber` must pass the ABA checksum; ' +
          "the account number is stored encrypted and shown masked. Type `CreateCounterparty` (Accrue's) or `Counterparty`.",
        body: CreateCounterpartyBody,
        response: responses({ 201: document(ref(Counterparty)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const cp = await createCounterparty(ctx.db, {
        clientId: req.client.id,
        ...req.body.data.attributes,
        sealer: ctx.sealer,
        now: ctx.clock.now(),
      });
      reply.code(201).header('location', `${base}/api/v1/counterparties/${cp.id}`);
      return { data: counterpartyResource(cp, { pending: 0, available: 0 }, render) };
    },
  );

  app.get(
    '/api/v1/counterparties',
    {
      schema: {
        tags: TAGS,
        operationId: 'listCounterparties',
        summary: 'List counterparties',
        querystring: ListCounterpartiesQuery,
        response: responses({ 200: listDocument(ref(Counterparty)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listCounterparties(ctx.db, { clientId: req.client.id, page });
      const balances = await counterpartyBalances(
        ctx.db,
        rows.map((r) => r.id),
      );
      return {
        data: rows.map((c) => counterpartyResource(c, balances.get(c.id)!, render)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/counterparties/:counterpartyId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getCounterparty',
        summary: 'Get a counterparty',
        params: idParams('counterpartyId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Counterparty)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({
      data: await withBalance(
        await getCounterparty(ctx.db, { clientId: req.client.id, counterpartyId: req.params.counterpartyId }),
      ),
    }),
  );

  app.patch(
    '/api/v1/counterparties/:counterpartyId',
    {
      schema: {
        tags: TAGS,
        operationId: 'updateCounterparty',
        summary: 'Update a counterparty',
        description:
          "Changes the `label`; the bank account (account and routing number, type) cannot change. Type `UpdateCounterparty` (Accrue's) or `Counterparty`.",
        params: idParams('counterpartyId'),
        querystring: NoQuery,
        body: UpdateCounterpartyBody,
        response: responses({ 200: document(ref(Counterparty)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const cp = await updateCounterparty(ctx.db, {
        clientId: req.client.id,
        counterpartyId: req.params.counterpartyId,
        label: req.body.data.attributes.label,
        now: ctx.clock.now(),
      });
      return { data: await withBalance(cp) };
    },
  );

  app.delete(
    '/api/v1/counterparties/:counterpartyId',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteCounterparty',
        summary: 'Delete a counterparty',
        description:
          'Soft delete: the counterparty is gone from the API (404), its history stays. Deleting moves no money: while it holds a balance, 409 `CounterpartyHasBalance` (pay it out first); ' +
          "while money may still reach it (a payout not yet `Completed` or `Returned`, a payment not yet settled that disburses to it) or it pays the merchant's fees, 409 `CounterpartyInUse`.",
        params: idParams('counterpartyId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      await deleteCounterparty(ctx.db, {
        clientId: req.client.id,
        counterpartyId: req.params.counterpartyId,
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/counterparties/:counterpartyId/payouts',
    {
      schema: {
        tags: TAGS,
        operationId: 'createCounterpartyPayout',
        summary: 'Pay a counterparty out to its bank account',
        description:
          "Moves `amount` from the available balance to the counterparty's bank account (`externalBankAccount`): `Pending` until the bank accepts the push (`Sent`, within a second), " +
          'then `Completed`, or `Returned` with the money back on the balance. Each step fires its `CounterpartyPayout…` event. More than the available balance: 400 `InsufficientBalance`. ' +
          '`idempotencyKey` is required: the same key and amount replay the first response (`Idempotent-Replayed: true`, no second payout or event); while the first runs, 409 ' +
          '`IdempotencyKeyInUse`; another amount or counterparty, 409 `IdempotencyKeyReused`.',
        params: idParams('counterpartyId'),
        querystring: NoQuery,
        body: CreatePayoutBody,
        response: responses({ 201: document(ref(CounterpartyPayout)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, amount } = req.body.data.attributes;
      const { counterpartyId } = req.params;
      const clientAccounts = await clientAccountIds(ctx.db, req.client.id);
      const outcome = await idempotent(
        reply,
        {
          clientId: req.client.id,
          operation: 'counterpartyPayout',
          key: idempotencyKey,
          fingerprint: fingerprintOf([counterpartyId, { amount }]),
        },
        { db: ctx.db, clock: ctx.clock },
        async (tx: Tx) => {
          const payout = await createPayout(tx, {
            clientId: req.client.id,
            counterpartyId,
            amount,
            clientAccounts,
            now: ctx.clock.now(),
          });
          return { status: 201, body: { data: payoutResource(payout) } };
        },
      );
      // The bank push is sent by the counterparty-payouts job, outside any transaction.
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/counterparties/:counterpartyId/payouts',
    {
      schema: {
        tags: TAGS,
        operationId: 'listCounterpartyPayouts',
        summary: "List a counterparty's payouts",
        description:
          'Newest first; `meta.total` counts the payouts matching the filters. Both bounds of every range are inclusive.',
        params: idParams('counterpartyId'),
        querystring: ListPayoutsQuery,
        response: responses({ 200: listDocument(ref(CounterpartyPayout)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const q = req.query;
      const filters = {
        status: q['filter[status]'],
        minAmount: q['filter[minAmount]'],
        maxAmount: q['filter[maxAmount]'],
        createdAfter: q['filter[createdAfter]'] === undefined ? undefined : new Date(q['filter[createdAfter]']),
        createdBefore: q['filter[createdBefore]'] === undefined ? undefined : new Date(q['filter[createdBefore]']),
        effectiveDateFrom: q['filter[effectiveDateFrom]'],
        effectiveDateTo: q['filter[effectiveDateTo]'],
      };
      const { rows, total } = await listPayouts(ctx.db, {
        clientId: req.client.id,
        counterpartyId: req.params.counterpartyId,
        filters,
        page,
      });
      return { data: rows.map(payoutResource), meta: { total, ...page }, links: pageLinks(base, req.url, page, total) };
    },
  );
}

/** Sandbox only: the bank's side of a counterparty's money. */
export async function counterpartySimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const SIM = ['Sandbox simulations'];

  app.post(
    '/api/v1/simulation/counterparties/:counterpartyId/deposits',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateCounterpartyDeposit',
        summary: "A payment arrives on a counterparty's deposit account (sandbox)",
        description:
          "An incoming ACH payment to the counterparty's `internalBankAccount`: `amount` is on its available balance when this answers, and `CounterpartyIncomingPayment` fires.",
        params: idParams('counterpartyId'),
        querystring: NoQuery,
        body: SimulateDepositBody,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await notFoundAsAccrue(
        recordIncomingPayment(ctx.db, {
          clientId: req.client.id,
          counterpartyId: req.params.counterpartyId,
          amount: req.body.data.attributes.amount,
          method: 'ach',
          externalId: `ipd_${randomBytes(10).toString('hex')}`,
          clientAccounts: await clientAccountIds(ctx.db, req.client.id),
          now: ctx.clock.now(),
        }),
      );
      return reply.code(204).send();
    },
  );

  const payoutParams = idParams('counterpartyId', 'payoutId');

  app.post(
    '/api/v1/simulation/counterparties/:counterpartyId/payouts/:payoutId/complete',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateCounterpartyPayoutCompleted',
        summary: 'The bank reconciles a payout (sandbox)',
        description:
          'A `Sent` payout becomes `Completed` and `CounterpartyPayoutCompleted` fires. Any other status: 400 `IllegalOperation`.',
        params: payoutParams,
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await completePayout(ctx.db, { clientId: req.client.id, ...req.params, now: ctx.clock.now() });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/simulation/counterparties/:counterpartyId/payouts/:payoutId/return',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateCounterpartyPayoutReturned',
        summary: 'The receiving bank returns a payout (sandbox)',
        description:
          'A `Sent` payout becomes `Returned`: its amount is back on the available balance and `CounterpartyPayoutReturned` fires with `returnCode` (default `R01`) and `returnReason`. ' +
          'Any other status: 400 `IllegalOperation`. The body is optional.',
        params: payoutParams,
        querystring: NoQuery,
        body: SimulatePayoutReturnBody,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'SimulateCounterpartyPayoutReturn', attributes: {} } }),
    },
    async (req, reply) => {
      await returnPayout(ctx.db, {
        clientId: req.client.id,
        ...req.params,
        ...req.body.data.attributes,
        clientAccounts: await clientAccountIds(ctx.db, req.client.id),
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );
}
