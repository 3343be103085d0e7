// Captures in groups (group commit, src/db/groups.ts): captures that arrive together share one
// transaction of five round trips whatever their number: BEGIN; one statement locks every
// payment (in payment id order, so two groups cannot deadlock) with its intent; one locks, in
// id order, the wallet accounts the captures move (movedWalletAccounts); each capture is
// decided on its own (captureBankPayment); one statement writes every capture's entries,
// postings, summed balance changes, payment updates and events (WriteBatch.merged); COMMIT.
// Responses are sent after the commit.
//
// A refused capture (not found, not Created, over the authorized amount, card rails) writes
// nothing and gets its error. The same payment twice in a group: the later runs after the group
// commits, as it would have waited for the first's lock (and finds the payment Processing). A
// group that fails as a whole wrote nothing, and each of its captures runs alone (runRowGroup).
// A quiet server runs each capture as a group of one.
import { WriteBatch } from '../../db/batch.ts';
import { decideEach, groupCommit, runRowGroup, type Member as GroupMember } from '../../db/groups.ts';
import type { Db } from '../../db/open.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import { accountIds, clientAccountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { lockAccounts } from '../../ledger/post.ts';
import { captureBankPayment, capturedOf, type CaptureInput, type ChangedPayment } from './domain.ts';
import { movedWalletAccounts, splitCapture } from './money.ts';
import * as q from './sql.ts';
import { walletOfPayment } from './wallet-hints.ts';

type Member = GroupMember<CaptureInput, ChangedPayment>;

/** Captures a bank-rail payment in the next group to run. */
export const submitCapture = groupCommit<CaptureInput, ChangedPayment>(runGroup, {
  name: 'capture',
  rowOf: (r) => walletOfPayment(r.paymentId),
});

async function runGroup(db: Db, members: Member[]): Promise<void> {
  // Outside the transaction: a merchant's accounts are created (once) and committed before their ids are cached.
  const ext = new Map<string, Record<ClientCode, string>>();
  for (const m of members) if (!ext.has(m.clientId)) ext.set(m.clientId, await clientAccountIds(db, m.clientId));
  await runRowGroup(
    db,
    members,
    (m) => m.paymentId,
    async (tx, group) => {
      const settle: (() => void)[] = [];
      const locked = await q.lockPaymentsWithIntents(tx, group);
      // The accounts each capture will move, locked together in id order before any moves.
      const heldSet = new Set<string>();
      for (const [n, m] of group.entries()) {
        const p = locked[n]?.payment;
        if (p?.status !== 'Created' || !p.walletId || m.amount > p.amount) continue; // refused: moves nothing
        const { captured, released } = splitCapture(p.sourcing, m.amount);
        const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: p.walletId });
        for (const id of movedWalletAccounts(w, captured, released)) heldSet.add(id);
      }
      if (heldSet.size > 1) await lockAccounts(tx, [...heldSet].sort());
      const row = new Map(group.map((m, n) => [m, locked[n]]));
      const batches = await decideEach(
        group,
        settle,
        (err) => err instanceof ApiError,
        async (m, batch) => {
          const l = row.get(m);
          if (!l) throw apiError('PaymentNotFound', `No payment ${m.paymentId}.`);
          const payment = await captureBankPayment(tx, l.payment, m.amount, {
            clientId: m.clientId,
            rc: m.rc,
            now: m.now,
            ext: ext.get(m.clientId)!,
            batch,
            locked: heldSet,
          });
          return capturedOf(payment, l.intent);
        },
      );
      await WriteBatch.merged(batches).flushWithCommit(tx);
      return settle;
    },
  );
}
