// Payment cancels in groups (group commit, src/db/groups.ts): cancels that arrive together
// share one transaction of six round trips whatever their number: BEGIN; one statement locks
// the payments' intents in intent id order; one locks the payments in payment id order, each
// with its intent as it stands after that lock; one locks the wallets' (or gifts') accounts in
// id order; each cancel is decided on its own (cancelLockedPayment); one statement writes every
// release, payment and intent update and event (WriteBatch.merged); COMMIT. Intent, then
// payment, then ledger accounts is the order every transition locks them in, so a cancel racing
// an intent's cancel, a capture or another group waits instead of deadlocking. Responses are
// sent after the commit; a quiet server runs each cancel as a group of one.
//
// A refused cancel (no payment, not Created) writes nothing and gets its error. The same payment
// twice: the later runs after the group commits (and finds it Canceled). A group that fails as
// a whole wrote nothing, and each of its cancels runs again alone.
import { WriteBatch } from '../../db/batch.ts';
import { decideEach, groupCommit, runRowGroup, type Member as GroupMember } from '../../db/groups.ts';
import type { Db } from '../../db/open.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import { lockAccounts } from '../../ledger/post.ts';
import { cancelLockedPayment, releasedAccounts, type CancelInput, type ChangedPayment } from './domain.ts';
import * as q from './sql.ts';
import { walletOfPayment } from './wallet-hints.ts';

type Member = GroupMember<CancelInput, ChangedPayment>;

/** Cancels a Created payment in the next group to run. */
export const submitCancel = groupCommit<CancelInput, ChangedPayment>(runGroup, {
  name: 'cancel',
  rowOf: (r) => walletOfPayment(r.paymentId),
});

function runGroup(db: Db, members: Member[]): Promise<void> {
  return runRowGroup(
    db,
    members,
    (m) => m.paymentId,
    async (tx, group) => {
      const settle: (() => void)[] = [];
      await q.lockIntentsOfPayments(tx, group);
      const locked = await q.lockPaymentsWithIntents(tx, group);
      const created = locked.flatMap((l) => (l?.payment.status === 'Created' ? [l.payment] : []));
      const held = new Set<string>();
      for (const p of created) for (const id of await releasedAccounts(tx, p)) held.add(id);
      if (held.size > 1) await lockAccounts(tx, [...held].sort());
      const row = new Map(group.map((m, n) => [m, locked[n]]));
      const batches = await decideEach(
        group,
        settle,
        (err) => err instanceof ApiError,
        async (m, batch) => {
          const l = row.get(m);
          if (!l) throw apiError('PaymentNotFound', `No payment ${m.paymentId}.`);
          return cancelLockedPayment(tx, l, { ...m, batch, held });
        },
      );
      await WriteBatch.merged(batches).flushWithCommit(tx);
      return settle;
    },
  );
}
