import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { counterpartyBalances, createCounterparty, getCounterparty, listCounterparties, type CounterpartyBalance } from './domain.ts';
import { Counterparty, CreateCounterpartyBody, ListCounterpartiesQuery } from './schemas.ts';
import type { CounterpartyRow } from './sql.ts';

const TAGS = ['Counterparties'];

function counterpartyResource(c: CounterpartyRow, balance: CounterpartyBalance, baseUrl: string) {
  return {
    id: c.id,
    type: 'Counterparty' as const,
    attributes: {
      label: c.label,
      accountType: c.accountType as 'checking' | 'savings',
      accountNumberLast4: c.accountNumberLast4,
      routingNumber: c.routingNumber,
      balance,
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
    },
    links: { self: `${baseUrl}/api/v1/counterparties/${c.id}` },
  };
}

export async function counterpartyRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/counterparties',
    {
      schema: {
        tags: TAGS,
        operationId: 'createCounterparty',
        summary: 'Create a counterparty',
        description: 'A payee for deposit and payment disbursements, or the payer of processing fees (the merchant setting `feeCounterpartyId`). `routingNumber` must pass the ABA checksum; the account number is stored encrypted.',
        body: CreateCounterpartyBody,
        response: responses({ 201: document(ref(Counterparty)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const cp = await createCounterparty(ctx.db, { clientId: req.client.id, ...req.body.data.attributes, sealer: ctx.sealer, now: ctx.clock.now() });
      reply.code(201).header('location', `${base}/api/v1/counterparties/${cp.id}`);
      return { data: counterpartyResource(cp, { pending: 0, available: 0 }, base) };
    },
  );

  app.get(
    '/api/v1/counterparties',
    {
      schema: { tags: TAGS, operationId: 'listCounterparties', summary: 'List counterparties', querystring: ListCounterpartiesQuery, response: responses({ 200: listDocument(ref(Counterparty)) }, COMMON_ERRORS) },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listCounterparties(ctx.db, { clientId: req.client.id, page });
      const balances = await counterpartyBalances(ctx.db, rows.map((r) => r.id));
      return { data: rows.map((c) => counterpartyResource(c, balances.get(c.id)!, base)), meta: { total, ...page }, links: pageLinks(base, req.url, page, total) };
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
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(Counterparty)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const cp = await getCounterparty(ctx.db, { clientId: req.client.id, counterpartyId: req.params.counterpartyId });
      const balances = await counterpartyBalances(ctx.db, [cp.id]);
      return { data: counterpartyResource(cp, balances.get(cp.id)!, base) };
    },
  );
}
