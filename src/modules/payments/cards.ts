// Reading a virtual debit card (the secure card listener, {secure_url}). Card data is sealed at
// rest, readable only while its payment is Created (after that it has been used or is void),
// every read recorded (who, when, from where), and never logged or cached.
import { Type } from 'typebox';
import { uuidv7 } from '../../ids.ts';
import type { AppContext } from '../../context.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { COMMON_ERRORS, document, idParams, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { findIntent } from '../payment-intents/sql.ts';
import { getPayment } from './domain.ts';
import { VirtualDebitCard } from './schemas.ts';
import * as q from './sql.ts';

async function readCard(
  db: Db,
  sealer: Sealer,
  opts: { clientId: string; paymentId: string; requestId: string; ip: string; now: Date },
) {
  return db.transaction(async (tx) => {
    const payment = await getPayment(tx, opts);
    if (payment.rail === 'bank') throw apiError('CardNotFound', 'A bank-rail payment has no virtual card.');
    if (payment.status !== 'Created') {
      throw apiError(
        'IllegalOperation',
        `The card can be read only while the payment is Created; it is ${payment.status}.`,
      );
    }
    const card = payment.giftId ? await q.cardOfGift(tx, payment.giftId) : await q.cardOfPayment(tx, payment.id);
    if (!card) throw apiError('CardNotFound');
    await q.recordCardRead(tx, {
      id: uuidv7(),
      clientId: opts.clientId,
      cardId: card.id,
      paymentId: payment.id,
      requestId: opts.requestId,
      ip: opts.ip,
      readAt: opts.now,
    });
    const intent = payment.intentId ? await findIntent(tx, opts.clientId, payment.intentId) : undefined;
    // The intent's billing address, else the address the user gave in their latest KYC application.
    const billingAddress =
      intent?.billingAddress ??
      (payment.userId ? await q.latestKycAddress(tx, opts.clientId, payment.userId) : undefined) ??
      null;
    return {
      id: card.id,
      type: 'VirtualDebitCard' as const,
      attributes: {
        number: sealer.open(card.numberSealed, 'card', `virtual_cards:${card.id}:number`).toString('utf8'),
        expirationMonth: String(card.expirationMonth).padStart(2, '0'),
        expirationYear: String(card.expirationYear),
        cvc: sealer.open(card.cvcSealed, 'card', `virtual_cards:${card.id}:cvc`).toString('utf8'),
        billingAddress: billingAddress as never,
      },
      relationships: {
        payment: { data: { type: 'Payment' as const, id: payment.id } },
        paymentIntent: { data: payment.intentId ? { type: 'PaymentIntent' as const, id: payment.intentId } : null },
      },
    };
  });
}

export async function cardRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get(
    '/api/v1/payments/:paymentId/card',
    {
      schema: {
        tags: ['Cards'],
        operationId: 'getVirtualDebitCard',
        summary: "Read a payment's virtual debit card",
        description:
          "On the secure card listener, with the same headers. Card-rail payments have a single-use card for exactly the authorized amount; gift payments return the gift's card. " +
          'Readable only while the payment is `Created`. Process it at once through your gateway and never store it; every read is recorded.',
        params: idParams('paymentId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(VirtualDebitCard)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const data = await readCard(ctx.db, ctx.sealer, {
        clientId: req.client.id,
        paymentId: req.params.paymentId,
        requestId: req.id,
        ip: req.ip,
        now: ctx.clock.now(),
      });
      return { data };
    },
  );
}
