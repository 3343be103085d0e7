// Withdrawals are written in groups (group commit), as deposits are (transactions/
// deposit-groups.ts): withdrawals that arrive during one turn of the event loop share one
// transaction of five round trips: BEGIN; one statement that checks every key and reads every
// withdrawal's wallet, KYC and connected accounts with what each deposited; the lock of the
// ledger rows the group moves, in id order; one statement with every entry, posting, summed
// balance change, withdrawal and stored response; COMMIT.
//
// The guard is the ledger's no-negative check on each wallet's available deposit money, at the
// write. A group one of whose withdrawals would overdraw its wallet fails as a whole and wrote
// nothing: each of its withdrawals then runs again as a group of one, where that refusal is its
// own (400 InsufficientWithdrawableBalance) and the others are written. A withdrawal refused
// before the write (no wallet, KYC, a reused key...) is left out and answered with its error.
// A group that may have committed (CommitOutcomeUnknown) is not run again: a withdrawal without
// a key would be made twice; each member gets the retryable error. Every response is sent after
// the commit.
import { CommitOutcomeUnknown } from '../../db/errors.ts';
import { WriteBatch } from '../../db/batch.ts';
import type { Db } from '../../db/open.ts';
import { groupCommit, type Member as GroupMember } from '../../db/groups.ts';
import { ApiError } from '../../http/errors.ts';
import { interpretKeyCheck, keyInUse, lockKeyOf, storeOutcomesPart, type IdempotencyScope, type StoredOutcome } from '../../http/idempotency.ts';
import type { ClientCode } from '../../ledger/accounts.ts';
import { postEntries, type EntryInput } from '../../ledger/post.ts';
import { planWithdrawal, withdrawRefused } from './domain.ts';
import { checkWithdrawGroup, withdrawalsInsertPart, type WithdrawalRow } from './sql.ts';

export interface WithdrawRequest {
  /** The key's scope; without a key nothing is checked or stored (the key is optional). */
  scope: Omit<IdempotencyScope, 'key'> & { key: string | undefined };
  input: { clientId: string; walletId: string; amount: number; clientAccounts: Record<ClientCode, string>; now: Date };
  /** The 201 body, serialized as the route sends it (stored for replays). */
  render: (w: WithdrawalRow) => string;
}

type Member = GroupMember<WithdrawRequest, StoredOutcome>;

/** Makes a withdrawal (or replays its key's outcome) in the next group to run. */
export const submitWithdrawal = groupCommit<WithdrawRequest, StoredOutcome>(runGroup, { name: 'withdraw' });

const keyed = (m: Member): IdempotencyScope | undefined => (m.scope.key === undefined ? undefined : { ...m.scope, key: m.scope.key });

async function runGroup(db: Db, members: Member[]): Promise<void> {
  // The same key twice in one group: the later request is concurrent with the first, which is
  // in flight (and one statement could not store both outcomes).
  const seen = new Set<string>();
  const group: Member[] = [];
  for (const m of members) {
    const scope = keyed(m);
    const key = scope && lockKeyOf(scope);
    if (key !== undefined && seen.has(key)) m.reject(keyInUse());
    else {
      if (key !== undefined) seen.add(key);
      group.push(m);
    }
  }
  const settle: (() => void)[] = [];
  try {
    await db.transaction(async (tx) => {
      const checks = await checkWithdrawGroup(
        tx,
        group.map((m) => {
          const scope = keyed(m);
          return { lockKey: scope ? lockKeyOf(scope) : null, clientId: m.input.clientId, key: scope?.key ?? null, walletId: m.input.walletId };
        }),
      );
      const made: { m: Member; row: WithdrawalRow; entry: EntryInput; body: string }[] = [];
      for (const [n, m] of group.entries()) {
        try {
          const scope = keyed(m);
          if (scope) {
            const { state } = interpretKeyCheck(checks[n], scope, m.input.now);
            if (state.kind === 'replay') {
              settle.push(() => m.resolve(state.outcome));
              continue;
            }
          }
          const { row, entry } = await planWithdrawal(tx, { ...m.input, context: checks[n] });
          made.push({ m, row, entry, body: m.render(row) });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          settle.push(() => m.reject(err));
        }
      }
      if (made.length === 0) return;
      const batch = new WriteBatch();
      await postEntries(tx, made.map((w) => w.entry), batch);
      batch.add(withdrawalsInsertPart(made.map((w) => w.row)));
      const stored = made.flatMap((w) => {
        const scope = keyed(w.m);
        return scope ? [{ scope, status: 201, body: w.body, now: w.m.input.now }] : [];
      });
      if (stored.length > 0) batch.add(storeOutcomesPart(stored));
      await batch.flush(tx);
      for (const w of made) settle.push(() => w.m.resolve({ status: 201, body: w.body, replayed: false }));
    });
  } catch (err) {
    if (group.length === 1 || err instanceof CommitOutcomeUnknown) {
      // Alone, a refusal by the ledger is this withdrawal's: more than it may withdraw.
      for (const m of group) m.reject(group.length === 1 ? withdrawRefused(err) : err);
      return;
    }
    await Promise.all(group.map((m) => runGroup(db, [m])));
    return;
  }
  for (const s of settle) s();
}
