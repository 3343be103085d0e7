// Sweepstakes results (Accrue's addSweepstakesResults). Coffer keeps no sweepstakes of its own:
// the sweepstakes id is the merchant's label, and a result records that a customer (one of the
// merchant's users) is in that sweepstakes' results. Results move no money: Accrue's result names
// a customer and nothing else, so there is no amount to credit; a merchant that rewards a winner
// issues a reward (POST /rewards), which goes through the ledger.
import { uuidv7 } from '../../ids.ts';
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { resolveUserReference } from '../users/domain.ts';
import * as q from './sql.ts';

export interface SweepstakesCustomer {
  /** Default PhoneNumber. */
  idType?: 'ID' | 'PhoneNumber';
  id: string;
}

const POINTER = '/data/attributes/customer/id';

/** Records the customer's result once per sweepstakes; an unknown customer is 400 UserNotFound. */
export async function addSweepstakesResult(
  db: Executor,
  opts: { clientId: string; sweepstakesId: string; customer: SweepstakesCustomer; now: Date },
): Promise<void> {
  const idType = opts.customer.idType ?? 'PhoneNumber';
  const userId =
    idType === 'PhoneNumber'
      ? await q.findUserIdByPhone(db, opts.clientId, opts.customer.id)
      : (
          await resolveUserReference(db, {
            clientId: opts.clientId,
            reference: opts.customer.id,
            notFound: { code: 'UserNotFound', status: 400 },
          }).catch((err: unknown) => {
            // One pointer for every way the customer fails to resolve.
            (err as { items?: { source?: unknown }[] }).items?.forEach((i) => (i.source = { pointer: POINTER }));
            throw err;
          })
        ).id;
  if (!userId)
    throw apiError('UserNotFound', `No user has the phone number ${opts.customer.id}.`, {
      status: 400,
      pointer: POINTER,
    });
  await q.insertResultOnce(db, {
    id: uuidv7(),
    clientId: opts.clientId,
    sweepstakesId: opts.sweepstakesId,
    userId,
    customerIdType: idType,
    customerId: opts.customer.id,
    createdAt: opts.now,
  });
}
