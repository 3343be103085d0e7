// Intent cancels in groups (group commit, src/db/groups.ts): cancels that arrive together share
// one transaction: BEGIN; one statement locks the intents in id order; one reads their payments'
// ids, after the locks (a concurrent authorize's payment is then seen); for intents promoted to
// a payment, one locks the active payments in payment id order and one their wallets' (or
// gifts') accounts in id order; each cancel is decided on its own (cancelLockedIntent); one
// statement writes every update, release and event (WriteBatch.merged); COMMIT. Five round trips
// for a group with no payment to cancel, seven with. Intent, then payment, then ledger accounts,
// each in id order, is the order every transition locks them in, so no two can deadlock.
// Responses are sent after the commit; a quiet server runs each cancel as a group of one.
//
// A refused cancel (no intent, not cancelable) writes nothing and gets its error. The same
// intent twice: the later runs after the group commits (and finds it Canceled). A group that
// fails as a whole wrote nothing, and each of its cancels runs again alone.
import { WriteBatch } from '../../db/batch.ts';
import { decideEach, groupCommit, runRowGroup, type Member as GroupMember } from '../../db/groups.ts';
import type { Db } from '../../db/open.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import { lockAccounts } from '../../ledger/post.ts';
import { releasedAccounts } from '../payments/domain.ts';
import { lockActivePayments, paymentIdsOfIntents, type PaymentRow } from '../payments/sql.ts';
import { cancelLockedIntent, type CancelIntentInput } from './domain.ts';
import { effectiveStatus } from './render.ts';
import * as q from './sql.ts';

/** The intent as canceled, with its payments' ids (oldest first). */
export interface CanceledIntent {
  intent: q.IntentRow;
  paymentIds: string[];
}

type Member = GroupMember<CancelIntentInput, CanceledIntent>;

/** Cancels a payment intent in the next group to run. */
export const submitIntentCancel = groupCommit<CancelIntentInput, CanceledIntent>(runGroup, { name: 'intent_cancel' });

function runGroup(db: Db, members: Member[]): Promise<void> {
  return runRowGroup(
    db,
    members,
    (m) => m.intentId,
    async (tx, group) => {
      const settle: (() => void)[] = [];
      const intents = new Map((await q.lockIntents(tx, group)).map((i) => [i.id, i]));
      const paymentIds = await paymentIdsOfIntents(tx, [...intents.keys()]);
      const promoted = group.flatMap((m) => {
        const i = intents.get(m.intentId);
        return i && effectiveStatus(i, m.now) === 'PromotedToPayment' ? [i.id] : [];
      });
      const payments = promoted.length > 0 ? await lockActivePayments(tx, promoted) : new Map<string, PaymentRow>();
      const held = new Set<string>();
      for (const p of payments.values())
        if (p.status === 'Created') for (const id of await releasedAccounts(tx, p)) held.add(id);
      if (held.size > 1) await lockAccounts(tx, [...held].sort());
      const batches = await decideEach(
        group,
        settle,
        (err) => err instanceof ApiError,
        async (m, batch) => {
          const intent = intents.get(m.intentId);
          if (!intent) throw apiError('PaymentIntentNotFound', `No payment intent ${m.intentId}.`);
          const ids = paymentIds.get(intent.id)!;
          const canceled = await cancelLockedIntent(tx, intent, {
            ...m,
            paymentIds: ids,
            payment: payments.get(intent.id),
            held,
            batch,
          });
          return { intent: canceled, paymentIds: ids };
        },
      );
      await WriteBatch.merged(batches).flushWithCommit(tx);
      return settle;
    },
  );
}
