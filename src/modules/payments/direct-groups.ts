// Direct payments (POST /payments) in groups (group commit, src/db/groups.ts): payments that
// arrive together share one transaction of five round trips whatever their number: BEGIN; one
// statement checks every key and reads what each payment decides on (counterparties, wallet, KYC,
// balances, linked account); the spendable accounts of every wallet paid from, locked in id order
// (so two groups cannot deadlock); each payment decided on its own (createDirectPayment); one
// statement writes every entry, posting, summed balance change, payment, event and stored
// response (WriteBatch.merged); COMMIT. Responses are sent after the commit.
//
// Payments of one wallet in a group are planned in the order they came, each on the balances the
// ones before it in the group left; one of a wallet a running group is paying from waits for the
// next group (rowOf), so it is planned on what that group committed. (Running a wallet's second
// payment after the group committed, as a transaction of its own, held the group's slot for
// that transaction too: one slow payment made the next of its wallet slow in turn.) The balances are read with the key's check, before the accounts
// are locked: the ledger's no-negative check is the guard, and a group whose write it
// refuses (a plan a concurrent spend made stale) wrote nothing and runs each payment alone,
// where that refusal is the payment's own (402 Failed, to retry). A payment refused before the
// write (validation, no wallet, KYC, a reused key...) writes nothing and gets its error. A
// group that may have committed is not run again (a payment without a key would be taken
// twice): each member gets the retryable error.
import { WriteBatch } from '../../db/batch.ts';
import { decideEach, groupCommit, runRowGroup, type Member as GroupMember } from '../../db/groups.ts';
import type { Db, Tx } from '../../db/open.ts';
import type { Sourcing } from '../../db/schema.ts';
import { ApiError } from '../../http/errors.ts';
import {
  checkedKeyOf,
  keyedScope,
  replayOf,
  storeOutcomesPart,
  withoutRepeatedKeys,
  type IdempotencyScope,
  type OptionalKeyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import { accountIds, type WalletCode } from '../../ledger/accounts.ts';
import { lockAccounts } from '../../ledger/post.ts';
import { createDirectPayment, directPaymentRefused, type DirectPaymentInput } from './domain.ts';
import { availableDebits } from './money.ts';
import * as q from './sql.ts';

export interface DirectPaymentRequest {
  /** The key's scope; without a key nothing is checked or stored (the key is optional). */
  scope: OptionalKeyScope;
  input: Omit<DirectPaymentInput, 'context' | 'batch' | 'locked'>;
  /** The 200 body, serialized as the route sends it (stored for replays). */
  render: (p: q.PaymentRow) => string;
}

type Member = GroupMember<DirectPaymentRequest, StoredOutcome>;

/** The wallet accounts a payment spends from (payFromWallet's debits). */
const SPENT: WalletCode[] = ['reward.merchant.available', 'reward.accrue.available', 'deposit.available'];

/** Takes a direct payment (or replays its key's outcome) in the next group to run. */
export const submitDirectPayment = groupCommit<DirectPaymentRequest, StoredOutcome>(runGroup, {
  name: 'payment',
  rowOf: (r) => r.input.walletId,
});

const keyed = (m: Member) => keyedScope(m.scope);

async function runGroup(db: Db, members: Member[]): Promise<void> {
  // Every member is a row of its own (no repeat runs after the commit); sorted by wallet, then
  // in the order they came.
  const order = new Map(members.map((m, n) => [m, `${m.input.walletId}:${String(n).padStart(3, '0')}`]));
  await runRowGroup(db, withoutRepeatedKeys(members, keyed), (m) => order.get(m)!, paymentGroup);
}

/** Takes a decided payment's sourcing off its wallet's balances (payFromWallet's debits). */
function spend(buckets: Record<string, number>, s: Sourcing): void {
  for (const [code, amount] of Object.entries(availableDebits(s))) buckets[code] = (buckets[code] ?? 0) - amount;
}

async function paymentGroup(tx: Tx, group: Member[]): Promise<(() => void)[]> {
  const settle: (() => void)[] = [];
  const checks = await q.checkDirectPaymentGroup(
    tx,
    group.map((m) =>
      Object.assign(checkedKeyOf(keyed(m)), {
        clientId: m.input.clientId,
        walletId: m.input.walletId,
        counterpartyIds: (m.input.disbursement ?? []).map((d) => d.counterpartyId),
        linkedAccountId: m.input.linkedAccountId ?? null,
      }),
    ),
  );
  const runs = new Map<Member, q.DirectPaymentCheck>();
  for (const [n, m] of group.entries()) {
    try {
      const replay = replayOf(checks[n], keyed(m), m.input.now);
      if (replay) {
        settle.push(() => m.resolve(replay));
        continue;
      }
      runs.set(m, checks[n]!);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      settle.push(() => m.reject(err));
    }
  }
  if (runs.size === 0) return settle;
  const locked = new Set<string>();
  for (const [m, c] of runs) {
    if (!c.walletStatus) continue;
    const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: m.input.walletId });
    for (const code of SPENT) locked.add(w[code]);
  }
  if (locked.size > 0) await lockAccounts(tx, [...locked].sort());
  const stored: { scope: IdempotencyScope; status: number; body: string; now: Date }[] = [];
  // Each wallet's balances as the payments before it in the group have left them.
  const balances = new Map<string, Record<string, number>>();
  const batches = await decideEach(
    [...runs.keys()],
    settle,
    (err) => err instanceof ApiError,
    async (m, batch): Promise<StoredOutcome> => {
      const c = runs.get(m)!;
      const buckets = balances.get(m.input.walletId) ?? { ...c.buckets };
      balances.set(m.input.walletId, buckets);
      const p = await createDirectPayment(
        tx,
        Object.assign({}, m.input, { context: Object.assign({}, c, { buckets }), batch, locked }),
      );
      spend(buckets, p.sourcing);
      const body = m.render(p);
      const scope = keyed(m);
      if (scope) stored.push({ scope, status: 200, body, now: m.input.now });
      return { status: 200, body, replayed: false };
    },
  );
  if (batches.length === 0) return settle;
  const all = WriteBatch.merged(batches);
  if (stored.length > 0) all.add(storeOutcomesPart(stored));
  if (group.length > 1) {
    // A refusal by the ledger fails the group, whose payments then run alone (runRowGroup): the
    // write can go with the COMMIT.
    await all.flushWithCommit(tx);
    return settle;
  }
  try {
    await all.flush(tx);
  } catch (err) {
    // Alone, a refusal by the ledger is this payment's: its plan is stale (402, retry).
    throw directPaymentRefused(err);
  }
  return settle;
}
