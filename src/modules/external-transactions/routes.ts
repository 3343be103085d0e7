import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { addExternalTransactions, getExternalTransaction, listExternalTransactions } from './domain.ts';
import {
  AddExternalTransactionsBody,
  ExternalTransaction,
  ExternalTransactionReference,
  ListExternalTransactionsQuery,
  type PaymentMethod,
} from './schemas.ts';
import type { ExternalTransactionRow } from './sql.ts';

const TAGS = ['External transactions'];
const NoQuery = Type.Object({}, { additionalProperties: false });

function relationships(r: ExternalTransactionRow) {
  return {
    linkedExternalTransaction: {
      data: r.linkedExternalTransactionId
        ? [{ id: r.linkedExternalTransactionId, type: 'ExternalTransaction' as const }]
        : [],
    },
    user: { data: r.userId ? [{ id: r.userId, type: 'User' as const }] : [] },
  };
}

function externalTransactionResource(r: ExternalTransactionRow) {
  return {
    id: r.id,
    type: 'ExternalTransaction' as const,
    attributes: {
      type: r.type as 'Purchase' | 'Void' | 'Refund',
      linkedExternalTransactionId: r.linkedExternalTransactionId,
      source: {
        id: r.sourceId,
        createdAt: r.sourceCreatedAt.toISOString(),
        ...(r.sourceCustomerId !== null ? { customerId: r.sourceCustomerId } : {}),
      },
      channel: r.channel,
      payments: r.payments as { amount: number; method: PaymentMethod }[],
      ...(r.payload !== null ? { payload: r.payload as Record<string, unknown> } : {}),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    },
    relationships: relationships(r),
  };
}

export async function externalTransactionRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/external-transactions',
    {
      schema: {
        tags: TAGS,
        operationId: 'addExternalTransactions',
        summary: 'Record purchases, voids and refunds made outside Coffer',
        description:
          'Up to 100 at once, all or nothing (any invalid item: 400 naming every problem, nothing recorded). They move no money. A `Void` or `Refund` names the `Purchase` it is about ' +
          '(`linkedExternalTransactionId`). `source.customerId` links one to the user it names (a user id or reference id). A (type, `source.id`) already recorded is not recorded ' +
          'again: its first record is returned, so a batch can be retried whole. 200 with a reference per item, in order.',
        querystring: NoQuery,
        body: AddExternalTransactionsBody,
        response: responses(
          { 200: Type.Object({ data: Type.Array(ref(ExternalTransactionReference)) }) },
          COMMON_ERRORS,
        ),
      },
    },
    async (req) => {
      const rows = await addExternalTransactions(ctx.db, {
        clientId: req.client.id,
        items: req.body.data.map((d) => d.attributes),
        now: ctx.clock.now(),
      });
      return {
        data: rows.map((r) => ({
          id: r.id,
          type: 'ExternalTransaction' as const,
          attributes: {
            id: r.id,
            sourceId: r.sourceId,
            createdAt: r.createdAt.toISOString(),
            updatedAt: r.updatedAt.toISOString(),
          },
          relationships: relationships(r),
        })),
      };
    },
  );

  app.get(
    '/api/v1/external-transactions',
    {
      schema: {
        tags: TAGS,
        operationId: 'listExternalTransactions',
        summary: 'List external transactions',
        description:
          'Newest first. `filter[userId]` and `filter[phoneNumber]` find those linked to a user; `filter[sourceId]` those with that source id.',
        querystring: ListExternalTransactionsQuery,
        response: responses({ 200: listDocument(ref(ExternalTransaction)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const filters = {
        phoneNumber: req.query['filter[phoneNumber]'],
        userId: req.query['filter[userId]'],
        sourceId: req.query['filter[sourceId]'],
      };
      const { rows, total } = await listExternalTransactions(ctx.db, { clientId: req.client.id, filters, page });
      return {
        data: rows.map(externalTransactionResource),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/external-transactions/:externalTransactionId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getExternalTransaction',
        summary: 'Get an external transaction',
        params: idParams('externalTransactionId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(ExternalTransaction)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({
      data: externalTransactionResource(
        await getExternalTransaction(ctx.db, {
          clientId: req.client.id,
          externalTransactionId: req.params.externalTransactionId,
        }),
      ),
    }),
  );
}
