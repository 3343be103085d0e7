// Gifts (docs/adr/0003-double-entry-ledger.md): a balance a merchant funds, spent later by card-present authorization
// of its virtual card. A gift's id is its 19-digit public reference and never a wallet id
// (wallet barcodes have 16 digits).
import { randomInt } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import { uniqueViolation } from '../../db/errors.ts';
import type { Db, Executor } from '../../db/open.ts';
import { accountIds, balancesOf, clientAccountIds, openAccounts, type GiftCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import type { CardIssuer } from '../../providers/card-issuing.ts';
import { providerUnavailable } from '../../http/errors.ts';
import { insertCard } from '../payments/sql.ts';
import * as q from './sql.ts';

export async function giftAvailable(db: Executor, giftId: string): Promise<number> {
  return (await balancesOf(db, 'gift', [giftId])).get(giftId)?.['gift.available'] ?? 0;
}

export async function createGift(
  db: Db,
  opts: { clientId: string; amount: number; issuer: CardIssuer; sealer: Sealer; now: Date },
): Promise<q.GiftRow> {
  const ext = await clientAccountIds(db, opts.clientId);
  // The gift's virtual card, what a point of sale charges to spend it, is asked for before the
  // transaction (never call the outside from inside one). A failure below leaves an issued
  // card nothing refers to, which can spend nothing.
  const id = uuidv7();
  const card = await opts.issuer.issue({ reference: id, amount: opts.amount, now: opts.now }).catch((err: unknown) => {
    throw providerUnavailable(err, 'The card issuer did not answer; no gift was made. Retry the request.');
  });
  for (let attempt = 0; ; attempt++) {
    const lookUpId = Array.from({ length: 19 }, (_, i) => randomInt(i === 0 ? 1 : 0, 10)).join('');
    try {
      return await db.transaction(async (tx) => {
        const gift = await q.insertGift(tx, {
          id,
          clientId: opts.clientId,
          lookUpId,
          originalAmount: opts.amount,
          createdAt: opts.now,
        });
        await openAccounts(tx, { clientId: opts.clientId, ownerType: 'gift', ownerId: gift.id, now: opts.now });
        const g = await accountIds<GiftCode>(tx, { ownerType: 'gift', ownerId: gift.id });
        const cardId = uuidv7();
        await insertCard(tx, {
          id: cardId,
          clientId: opts.clientId,
          giftId: gift.id,
          numberSealed: opts.sealer.seal(card.number, 'card', `virtual_cards:${cardId}:number`),
          cvcSealed: opts.sealer.seal(card.cvc, 'card', `virtual_cards:${cardId}:cvc`),
          last4: card.number.slice(-4),
          expirationMonth: card.expirationMonth,
          expirationYear: card.expirationYear,
          createdAt: opts.now,
        });
        await postEntry(tx, {
          clientId: opts.clientId,
          kind: 'gift.issue',
          refType: 'gift',
          refId: gift.id,
          postings: [
            { accountId: ext['merchant.gifts'], amount: -opts.amount },
            { accountId: g['gift.available'], amount: opts.amount },
          ],
          now: opts.now,
        });
        return gift;
      });
    } catch (err) {
      if (uniqueViolation(err) !== 'gifts_look_up_uq' || attempt > 5) throw err;
    }
  }
}
