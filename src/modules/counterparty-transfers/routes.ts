import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { Tx } from '../../db/open.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { createTransfer, getTransfer, listTransfers } from './domain.ts';
import { CounterpartyTransfer, CreateTransferBody, ListTransfersQuery } from './schemas.ts';
import type { TransferRow } from './sql.ts';

const TAGS = ['Counterparty transfers'];

function transferResource(t: TransferRow) {
  return {
    id: t.id,
    type: 'CounterpartyTransfer' as const,
    attributes: {
      fromCounterpartyId: t.fromCounterpartyId,
      toCounterpartyId: t.toCounterpartyId,
      amount: t.amount,
      status: t.status as 'Pending' | 'Completed' | 'Failed',
      idempotencyKey: t.idempotencyKey,
      externalLedgerTransactionId: t.ledgerEntryId,
      failureReason: t.failureReason,
      metadata: t.metadata,
      createdAt: t.createdAt.toISOString(),
      updatedAt: t.updatedAt.toISOString(),
    },
  };
}

export async function counterpartyTransferRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/counterparty-transfers',
    {
      schema: {
        tags: TAGS,
        operationId: 'createCounterpartyTransfer',
        summary: 'Move money between two counterparties',
        description:
          "Moves `amount` from one counterparty's available balance to another's, at once (`Completed`). Both must be the merchant's: another's, or none, is 404 `CounterpartyNotFound`. " +
          "The same counterparty on both sides, or more than the source's available balance: 400 `ValidationFailed`. `idempotencyKey` is required: the same key and attributes replay " +
          'the first response (`Idempotent-Replayed: true`); while the first runs, 409 `IdempotencyKeyInUse`; other attributes, 409 `IdempotencyKeyReused`.',
        querystring: Type.Object({}, { additionalProperties: false }),
        body: CreateTransferBody,
        response: responses({ 201: document(ref(CounterpartyTransfer)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, ...attributes } = req.body.data.attributes;
      const outcome = await idempotent(
        reply,
        {
          clientId: req.client.id,
          operation: 'counterpartyTransfer',
          key: idempotencyKey,
          fingerprint: fingerprintOf(attributes),
        },
        { db: ctx.db, clock: ctx.clock },
        async (tx: Tx) => {
          const transfer = await createTransfer(tx, {
            clientId: req.client.id,
            ...attributes,
            idempotencyKey,
            now: ctx.clock.now(),
          });
          return { status: 201, body: { data: transferResource(transfer) } };
        },
      );
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/counterparty-transfers',
    {
      schema: {
        tags: TAGS,
        operationId: 'listCounterpartyTransfers',
        summary: 'List counterparty transfers',
        description: "The merchant's transfers, newest first. Both bounds of the time range are inclusive.",
        querystring: ListTransfersQuery,
        response: responses({ 200: listDocument(ref(CounterpartyTransfer)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const q = req.query;
      const filters = {
        fromCounterpartyId: q['filter[fromCounterpartyId]'],
        toCounterpartyId: q['filter[toCounterpartyId]'],
        status: q['filter[status]'],
        createdAfter: q['filter[createdAfter]'] === undefined ? undefined : new Date(q['filter[createdAfter]']),
        createdBefore: q['filter[createdBefore]'] === undefined ? undefined : new Date(q['filter[createdBefore]']),
      };
      const { rows, total } = await listTransfers(ctx.db, { clientId: req.client.id, filters, page });
      return {
        data: rows.map(transferResource),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/counterparty-transfers/:counterpartyTransferId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getCounterpartyTransfer',
        summary: 'Get a counterparty transfer',
        params: idParams('counterpartyTransferId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(CounterpartyTransfer)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({
      data: transferResource(
        await getTransfer(ctx.db, { clientId: req.client.id, transferId: req.params.counterpartyTransferId }),
      ),
    }),
  );
}
