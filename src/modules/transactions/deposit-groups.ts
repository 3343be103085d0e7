// Deposits are written in groups (group commit). Deposits that arrive during one turn of the
// event loop share one database transaction: one statement checks every key and reads every
// deposit's wallet, user and linked account; each deposit is then checked on its own; one
// statement writes all the transactions, ledger entries, postings, summed balance changes and
// stored responses; one commit makes them durable together. Under load a deposit's share of
// round trips, statements and commits falls with the size of the group: on two cores shared
// with PostgreSQL those, not the rows, are most of a deposit's cost (docs/architecture.md).
//
// Each deposit keeps its own outcome: one refused (no wallet, KYC, a reused key...) is left out
// of the writes and answered with its error; the others are written. If the group fails as a
// whole (a lost connection, a deadlock, a value the database refuses), nothing of it was
// written, and each of its deposits runs again as a group of one, so a bad deposit fails only
// itself and an outage reaches each caller as it would have alone (503). Every response is sent
// after the commit.
//
// The grouping itself (which deposits share a group, how many groups run at once) is
// src/db/groups.ts.
import { CommitOutcomeUnknown } from '../../db/errors.ts';
import { WriteBatch } from '../../db/batch.ts';
import type { Db } from '../../db/open.ts';
import { groupCommit, type Member as GroupMember } from '../../db/groups.ts';
import { ApiError } from '../../http/errors.ts';
import {
  interpretKeyCheck,
  lockKeyOf,
  storeOutcomesPart,
  withoutRepeatedKeys,
  type IdempotencyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import { postEntries, type EntryInput } from '../../ledger/post.ts';
import { planDeposit, type DepositInput } from './domain.ts';
import { checkDepositGroup, depositsInsertPart, type TransactionRow } from './sql.ts';

export interface DepositRequest {
  scope: IdempotencyScope;
  input: DepositInput;
  /** The 201 body, serialized as the route sends it (stored for replays). */
  render: (txn: TransactionRow) => string;
}

type Member = GroupMember<DepositRequest, StoredOutcome>;

/** Makes a deposit (or replays its key's outcome) in the next group to run. */
export const submitDeposit = groupCommit<DepositRequest, StoredOutcome>(runGroup, { name: 'deposit' });

async function runGroup(db: Db, members: Member[]): Promise<void> {
  const group = withoutRepeatedKeys(members, (m) => m.scope);
  const settle: (() => void)[] = [];
  try {
    await db.transaction(async (tx) => {
      const checks = await checkDepositGroup(
        tx,
        group.map((m) => ({
          lockKey: lockKeyOf(m.scope),
          clientId: m.scope.clientId,
          key: m.scope.key,
          walletId: m.input.walletId,
          linkedAccountId: m.input.linkedAccountId,
        })),
      );
      const made: { m: Member; txn: TransactionRow; entry: EntryInput; body: string }[] = [];
      for (const [n, m] of group.entries()) {
        try {
          const { state } = interpretKeyCheck(checks[n], m.scope, m.input.now);
          if (state.kind === 'replay') {
            settle.push(() => m.resolve(state.outcome));
            continue;
          }
          const { txn, entry } = await planDeposit(tx, m.input, checks[n]);
          made.push({ m, txn, entry, body: m.render(txn) });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          settle.push(() => m.reject(err));
        }
      }
      if (made.length === 0) return;
      const batch = new WriteBatch();
      batch.add(depositsInsertPart(made.map((d) => d.txn)));
      await postEntries(
        tx,
        made.map((d) => d.entry),
        batch,
      );
      batch.add(
        storeOutcomesPart(made.map((d) => ({ scope: d.m.scope, status: 201, body: d.body, now: d.m.input.now }))),
      );
      await batch.flushWithCommit(tx);
      for (const d of made) settle.push(() => d.m.resolve({ status: 201, body: d.body, replayed: false }));
    });
  } catch (err) {
    // A group that may have committed is not run again member by member (a deposit without a
    // key would be made twice): each gets the retryable error.
    if (group.length === 1 || err instanceof CommitOutcomeUnknown) {
      for (const m of group) m.reject(err);
      return;
    }
    await Promise.all(group.map((m) => runGroup(db, [m])));
    return;
  }
  for (const s of settle) s();
}
