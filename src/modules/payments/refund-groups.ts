// Refunds in groups (group commit, src/db/groups.ts): refunds that arrive together share one
// transaction of five round trips whatever their number: BEGIN; one statement checks every
// idempotency key and locks every payment whose refund will run (in payment id order, so two
// groups cannot deadlock); one reads those payments' refunds so far, after the locks, and locks
// the accounts the refunds credit in id order; each refund is decided on its own
// (refundPayment); one statement writes every refund's entry, postings, summed balance changes,
// refund row, payment update, events and stored response (WriteBatch.merged); COMMIT. Responses
// are sent after the commit. A quiet server runs each refund as a group of one.
//
// A refused refund (no payment, not refundable, more than is left) writes nothing and gets its
// error; a key already used replays or answers 409 as alone. The same key twice in a group: the
// later is concurrent with the first (409 IdempotencyKeyInUse). The same payment twice under
// two keys: the later runs after the group commits, as it would have waited for the first's
// lock. A group that fails as a whole wrote nothing, and each of its refunds runs again alone.
import { WriteBatch } from '../../db/batch.ts';
import { decideEach, groupCommit, runRowGroup, type Member as GroupMember } from '../../db/groups.ts';
import type { Db, Tx } from '../../db/open.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import {
  interpretKeyCheck,
  lockKeyOf,
  storeOutcomesPart,
  withoutRepeatedKeys,
  type IdempotencyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import type { ClientCode } from '../../ledger/accounts.ts';
import { creditedAccounts, refundPayment } from './domain.ts';
import type { RenderContext } from './render.ts';
import * as q from './sql.ts';
import { walletOfPayment } from './wallet-hints.ts';

export interface RefundRequest {
  scope: IdempotencyScope;
  clientId: string;
  paymentId: string;
  amount: number;
  ext: Record<ClientCode, string>;
  rc: RenderContext;
  now: Date;
  /** The 200 body, serialized as the route sends it (stored for replays). */
  render(made: RefundMade): string;
}

/** What a refund made: the refund, the payment as updated, all its refunds (oldest first) and its captures. */
interface RefundMade {
  refund: q.RefundRow;
  payment: q.PaymentRow;
  refunds: q.RefundRow[];
  captures: q.CaptureRow[];
}

type Member = GroupMember<RefundRequest, StoredOutcome>;

/** Makes a refund (or replays its key's outcome) in the next group to run. */
export const submitRefund = groupCommit<RefundRequest, StoredOutcome>(runGroup, {
  name: 'refund',
  rowOf: (r) => walletOfPayment(r.paymentId),
});

async function runGroup(db: Db, members: Member[]): Promise<void> {
  await runRowGroup(
    db,
    withoutRepeatedKeys(members, (m) => m.scope),
    (m) => m.paymentId,
    refundGroup,
  );
}

async function refundGroup(tx: Tx, group: Member[]): Promise<(() => void)[]> {
  const settle: (() => void)[] = [];
  const checks = await q.checkRefundGroup(
    tx,
    group.map((m) => ({
      lockKey: lockKeyOf(m.scope),
      clientId: m.clientId,
      key: m.scope.key,
      paymentId: m.paymentId,
      now: m.now,
    })),
  );
  const runs = new Map<Member, q.PaymentRow>();
  for (const [n, m] of group.entries()) {
    try {
      const { state } = interpretKeyCheck(checks[n], m.scope, m.now);
      if (state.kind === 'replay') {
        settle.push(() => m.resolve(state.outcome));
        continue;
      }
      const row = checks[n]!.payment_row;
      if (!row) throw apiError('PaymentNotFound', `No payment ${m.paymentId}.`);
      runs.set(m, q.paymentFromJson(row));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      settle.push(() => m.reject(err));
    }
  }
  if (runs.size === 0) return settle;
  const lock = new Set<string>();
  for (const p of runs.values()) for (const id of await creditedAccounts(tx, p)) lock.add(id);
  const earlier = await q.refundContext(
    tx,
    [...runs.values()].map((p) => p.id),
    [...lock].sort(),
  );
  const stored: { scope: IdempotencyScope; status: number; body: string; now: Date }[] = [];
  const batches = await decideEach(
    [...runs.keys()],
    settle,
    (err) => err instanceof ApiError,
    async (m, batch): Promise<StoredOutcome> => {
      const p = runs.get(m)!;
      const before = earlier.get(p.id)!;
      const { refund, payment } = await refundPayment(tx, p, {
        clientId: m.clientId,
        rc: m.rc,
        now: m.now,
        amount: m.amount,
        ext: m.ext,
        earlier: before,
        batch,
        locked: lock,
      });
      // A bank-rail payment's one capture is the payment itself; the card network's are rows of their own.
      const bank = q.bankCaptureOf(payment);
      const captures =
        payment.rail === 'bank'
          ? bank
            ? [bank]
            : []
          : (
              await q.captureRows(tx, m.clientId, [payment.id], {
                success: true,
                sort: [{ field: 'createdAt', descending: false }],
              })
            ).rows;
      const body = m.render({ refund, payment, refunds: [...before, refund], captures });
      stored.push({ scope: m.scope, status: 200, body, now: m.now });
      return { status: 200, body, replayed: false };
    },
  );
  if (batches.length > 0) {
    const all = WriteBatch.merged(batches);
    all.add(storeOutcomesPart(stored));
    await all.flushWithCommit(tx);
  }
  return settle;
}
