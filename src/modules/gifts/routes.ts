// Gifts (decisions §6): a balance a merchant funds, spent later by card-present authorization
// of its virtual card. The sandbox creates them; GET /api/v1/gifts/{lookUpId} reads what is
// left. A gift's id is its 19-digit public reference and never a wallet id (wallet barcodes
// have 16 digits).
import { randomInt } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { Type } from 'typebox';
import { uuidv7 } from 'uuidv7';
import type { AppContext } from '../../context.ts';
import { uniqueViolation } from '../../db/errors.ts';
import type { Db, Executor } from '../../db/open.ts';
import { gifts, virtualCards } from '../../db/schema.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { CardIssuer } from '../../providers/card-issuing.ts';
import { apiError } from '../../http/errors.ts';
import { COMMON_ERRORS, Cents, document, ref, requestBody, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { accountIds, balancesOf, clientAccountIds, openAccounts, type GiftCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import { LookUpParams } from '../wallets/schemas.ts';

export type GiftRow = typeof gifts.$inferSelect;

export const Gift = resource('Gift', 'Gift', {
  available: Type.Integer({ description: 'Cents left to spend' }),
  originalAmount: Type.Integer(),
});

const CreateGiftBody = requestBody(['Gift', 'SimulateGift'], Type.Object({ amount: Cents({ minimum: 1 }) }, { additionalProperties: false }));

export const schemas = [Gift];

export async function findGift(db: Executor, clientId: string, lookUpId: string): Promise<GiftRow | undefined> {
  const [row] = await db.select().from(gifts).where(and(eq(gifts.clientId, clientId), eq(gifts.lookUpId, lookUpId)));
  return row;
}

export async function giftAvailable(db: Executor, giftId: string): Promise<number> {
  return (await balancesOf(db, 'gift', [giftId])).get(giftId)?.['gift.available'] ?? 0;
}

export async function createGift(db: Db, opts: { clientId: string; amount: number; issuer: CardIssuer; sealer: Sealer; now: Date }): Promise<GiftRow> {
  const ext = await clientAccountIds(db, opts.clientId);
  // The gift's virtual card, what a point of sale charges to spend it, is asked for before the
  // transaction (never call the outside from inside one). A failure below leaves an issued
  // card nothing refers to, which can spend nothing.
  const id = uuidv7();
  const card = await opts.issuer.issue({ reference: id, now: opts.now });
  for (let attempt = 0; ; attempt++) {
    const lookUpId = Array.from({ length: 19 }, (_, i) => randomInt(i === 0 ? 1 : 0, 10)).join('');
    try {
      return await db.transaction(async (tx) => {
        const [gift] = await tx.insert(gifts).values({ id, clientId: opts.clientId, lookUpId, originalAmount: opts.amount, createdAt: opts.now }).returning();
        await openAccounts(tx, { clientId: opts.clientId, ownerType: 'gift', ownerId: gift!.id, now: opts.now });
        const g = await accountIds<GiftCode>(tx, { ownerType: 'gift', ownerId: gift!.id });
        await tx.insert(virtualCards).values({
          id: uuidv7(),
          clientId: opts.clientId,
          giftId: gift!.id,
          numberSealed: opts.sealer.seal(card.number, 'card'),
          cvcSealed: opts.sealer.seal(card.cvc, 'card'),
          last4: card.number.slice(-4),
          expirationMonth: card.expirationMonth,
          expirationYear: card.expirationYear,
          createdAt: opts.now,
        });
        await postEntry(tx, {
          clientId: opts.clientId,
          kind: 'gift.issue',
          refType: 'gift',
          refId: gift!.id,
          postings: [
            { accountId: ext['merchant.gifts'], amount: -opts.amount },
            { accountId: g['gift.available'], amount: opts.amount },
          ],
          now: opts.now,
        });
        return gift!;
      });
    } catch (err) {
      if (uniqueViolation(err) !== 'gifts_look_up_uq' || attempt > 5) throw err;
    }
  }
}

function giftResource(g: GiftRow, available: number) {
  return { id: g.lookUpId, type: 'Gift' as const, attributes: { available, originalAmount: g.originalAmount } };
}

export async function giftRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get(
    '/api/v1/gifts/:lookUpId',
    {
      schema: {
        tags: ['Gifts'],
        operationId: 'getGift',
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
        description: 'A merchant-funded gift of `amount` cents; its `id` is the 19-digit lookup id a customer presents.',
        body: CreateGiftBody,
        response: responses({ 201: document(ref(Gift)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const g = await createGift(ctx.db, { clientId: req.client.id, amount: req.body.data.attributes.amount, issuer: ctx.providers.cardIssuer, sealer: ctx.sealer, now: ctx.clock.now() });
      return reply.code(201).send({ data: giftResource(g, g.originalAmount) });
    },
  );
}
