// Gifts (docs/adr/0003-double-entry-ledger.md): a balance a merchant funds, spent later by card-present authorization
// of its virtual card. The sandbox creates them; GET /api/v1/gifts/{lookUpId} reads what is
// left. A gift's id is its 19-digit public reference and never a wallet id (wallet barcodes
// have 16 digits).
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { apiError } from '../../http/errors.ts';
import { COMMON_ERRORS, Cents, document, ref, requestBody, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { LookUpParams } from '../wallets/schemas.ts';
import { createGift, giftAvailable } from './domain.ts';
import { findGift, type GiftRow } from './sql.ts';

const Gift = resource('Gift', 'Gift', {
  available: Type.Integer({ description: 'Cents left to spend' }),
  originalAmount: Type.Integer(),
});

const CreateGiftBody = requestBody(
  ['Gift', 'SimulateGift'],
  Type.Object({ amount: Cents({ minimum: 1 }) }, { additionalProperties: false }),
);

export const schemas = [Gift];

function giftResource(g: GiftRow, available: number) {
  return { id: g.lookUpId, type: 'Gift' as const, attributes: { available, originalAmount: g.originalAmount } };
}

export async function giftRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get(
    '/api/v1/gifts/:lookUpId',
    {
      schema: {
        tags: ['Gifts'],
        operationId: 'getGiftByLookUpId',
        summary: "Read a gift's remaining balance",
        description: 'By the scanned lookup id; scoped to the merchant. A wallet barcode is never a gift (404).',
        params: LookUpParams,
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(Gift)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const g = await findGift(ctx.db, req.client.id, req.params.lookUpId);
      if (!g) throw apiError('GiftNotFound', 'No gift has this lookup id.');
      return { data: giftResource(g, await giftAvailable(ctx.db, g.id)) };
    },
  );
}

export async function giftSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  app.post(
    '/api/v1/simulation/gifts',
    {
      schema: {
        tags: ['Sandbox simulations'],
        operationId: 'simulateGift',
        summary: 'Create a gift (sandbox)',
        description:
          'A merchant-funded gift of `amount` cents; its `id` is the 19-digit lookup id a customer presents.',
        body: CreateGiftBody,
        response: responses({ 201: document(ref(Gift)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const g = await createGift(ctx.db, {
        clientId: req.client.id,
        amount: req.body.data.attributes.amount,
        issuer: ctx.providers.cardIssuer,
        sealer: ctx.sealer,
        now: ctx.clock.now(),
      });
      return reply.code(201).send({ data: giftResource(g, g.originalAmount) });
    },
  );
}
