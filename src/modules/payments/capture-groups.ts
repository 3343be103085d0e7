// Captures in groups (group commit, src/db/groups.ts): captures that arrive together share one
// transaction of five round trips whatever their number: BEGIN; one statement locks every
// payment (in payment id order, so two groups cannot deadlock) with its intent; one locks
// every wallet's available and reserved accounts in id order; each capture is decided on its
// own (captureBankPayment, as alone); one statement writes every capture's entries, postings,
// summed balance changes, payment updates and events (WriteBatch.merged); COMMIT. Responses
// are sent after the commit.
//
// A refused capture (not found, not Created, over the authorized amount, card rails) writes
// nothing and gets its error. The same payment twice in a group: the later runs after the group
// commits, as it would have waited for the first's lock (and finds the payment Processing). A
// group that fails as a whole wrote nothing, and each of its captures runs alone.
import { CommitOutcomeUnknown } from '../../db/errors.ts';
import { WriteBatch } from '../../db/batch.ts';
import { groupCommit, type Member as GroupMember } from '../../db/groups.ts';
import type { Db } from '../../db/open.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import { accountIds, clientAccountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { lockAccounts } from '../../ledger/post.ts';
import { captureBankPayment, capturedOf, capturePayment, MOVED_WALLET_CODES, type CaptureInput, type ChangedPayment } from './domain.ts';
import * as q from './sql.ts';

type Member = GroupMember<CaptureInput, ChangedPayment>;


/** Captures a bank-rail payment in the next group to run. */
export const submitCapture = groupCommit<CaptureInput, ChangedPayment>(runGroup, { name: 'capture' });

const runAlone = (db: Db, m: Member) => capturePayment(db, m).then(m.resolve, m.reject);

async function runGroup(db: Db, members: Member[]): Promise<void> {
  const seen = new Set<string>();
  const group: Member[] = [];
  const later: Member[] = [];
  for (const m of members) {
    if (seen.has(m.paymentId)) later.push(m);
    else {
      seen.add(m.paymentId);
      group.push(m);
    }
  }
  group.sort((a, b) => (a.paymentId < b.paymentId ? -1 : 1));
  const settle: (() => void)[] = [];
  try {
    const ext = new Map<string, Record<ClientCode, string>>();
    for (const m of group) if (!ext.has(m.clientId)) ext.set(m.clientId, await clientAccountIds(db, m.clientId));
    await db.transaction(async (tx) => {
      const locked = await q.lockPaymentsWithIntents(tx, group);
      const wallets = new Set(locked.flatMap((l) => (l?.payment.status === 'Created' && l.payment.walletId ? [l.payment.walletId] : [])));
      const held: string[] = [];
      for (const w of wallets) {
        const ids = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: w });
        held.push(...MOVED_WALLET_CODES.map((c) => ids[c]));
      }
      if (held.length > 1) await lockAccounts(tx, held.sort());
      const heldSet = new Set(held);
      const batches: WriteBatch[] = [];
      for (const [n, m] of group.entries()) {
        const batch = new WriteBatch();
        try {
          const l = locked[n];
          if (!l) throw apiError('PaymentNotFound', `No payment ${m.paymentId}.`);
          const payment = await captureBankPayment(tx, l.payment, m.amount, { clientId: m.clientId, rc: m.rc, now: m.now, ext: ext.get(m.clientId)!, batch, locked: heldSet });
          batches.push(batch);
          const captured = capturedOf(payment, l.intent);
          settle.push(() => m.resolve(captured));
        } catch (err) {
          // A refusal after some of its writes went out cannot be left out: the group fails.
          if (!(err instanceof ApiError) || batch.flushed) throw err;
          settle.push(() => m.reject(err));
        }
      }
      await WriteBatch.merged(batches).flush(tx);
    });
  } catch (err) {
    // The group may have committed: running its captures again would refuse them (the payment
    // is no longer Created) although they happened. Each gets the retryable error instead.
    if (err instanceof CommitOutcomeUnknown) {
      for (const m of [...group, ...later]) m.reject(err);
      return;
    }
    // Nothing of the group was written: each capture runs alone and gets its own answer.
    await Promise.all(group.map((m) => runAlone(db, m)));
    await Promise.all(later.map((m) => runAlone(db, m)));
    return;
  }
  for (const s of settle) s();
  await Promise.all(later.map((m) => runAlone(db, m)));
}
