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
import {
  checkedKeyOf,
  keyedScope,
  replayOf,
  storeOutcomesPart,
  withoutRepeatedKeys,
  type OptionalKeyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import type { ClientCode } from '../../ledger/accounts.ts';
import { postEntries, type EntryInput } from '../../ledger/post.ts';
import { planWithdrawal, withdrawRefused } from './domain.ts';
import { checkWithdrawGroup, withdrawalsInsertPart, type WithdrawalRow } from './sql.ts';

export interface WithdrawRequest {
  /** The key's scope; without a key nothing is checked or stored (the key is optional). */
  scope: OptionalKeyScope;
  input: { clientId: string; walletId: string; amount: number; clientAccounts: Record<ClientCode, string>; now: Date };
  /** The 201 body, serialized as the route sends it (stored for replays). */
  render: (w: WithdrawalRow) => string;
}

type Member = GroupMember<WithdrawRequest, StoredOutcome>;

/** Makes a withdrawal (or replays its key's outcome) in the next group to run. */
export const submitWithdrawal = groupCommit<WithdrawRequest, StoredOutcome>(runGroup, { name: 'withdraw' });

const keyed = (m: Member) => keyedScope(m.scope);

async function runGroup(db: Db, members: Member[]): Promise<void> {
  const group = withoutRepeatedKeys(members, keyed);
  const settle: (() => void)[] = [];
  try {
    await db.transaction(async (tx) => {
      const checks = await checkWithdrawGroup(
        tx,
        group.map((m) =>
          Object.assign(checkedKeyOf(keyed(m)), { clientId: m.input.clientId, walletId: m.input.walletId }),
        ),
      );
      const made: { m: Member; row: WithdrawalRow; entry: EntryInput; body: string }[] = [];
      for (const [n, m] of group.entries()) {
        try {
          const replay = replayOf(checks[n], keyed(m), m.input.now);
          if (replay) {
            settle.push(() => m.resolve(replay));
            continue;
          }
          const { row, entry } = await planWithdrawal(tx, Object.assign({}, m.input, { context: checks[n] }));
          made.push({ m, row, entry, body: m.render(row) });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          settle.push(() => m.reject(err));
        }
      }
      if (made.length === 0) return;
      const batch = new WriteBatch();
      await postEntries(
        tx,
        made.map((w) => w.entry),
        batch,
      );
      batch.add(withdrawalsInsertPart(made.map((w) => w.row)));
      const stored = made.flatMap((w) => {
        const scope = keyed(w.m);
        return scope ? [{ scope, status: 201, body: w.body, now: w.m.input.now }] : [];
      });
      if (stored.length > 0) batch.add(storeOutcomesPart(stored));
      await batch.flushWithCommit(tx);
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
