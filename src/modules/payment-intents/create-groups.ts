// Intent creations written in groups (group commit, src/db/groups.ts). Each creation by wallet
// reads its wallet (a coalesced read: the reads of one turn of the event loop are one statement,
// sql.ts) and decides its intent and PaymentIntentCreated event on its own; the creations ready
// in one turn are then written by one statement (WriteBatch.merged) in autocommit, which is
// atomic without a BEGIN. A quiet server writes each at once, as a group of one.
//
// Why: an intent is a plain insert, so what it costs is per statement: the round trip, the
// commit's WAL flush, the list counters' statement triggers (one delta row per statement, not per
// intent). A group pays them once, and the checkout flow creates one intent per payment.
//
// A group's statement that PostgreSQL refused wrote nothing: each member is written again alone
// and gets its own answer. One that got no answer (the connection was lost on the way) may have
// been written; an intent carries no idempotency key, so none is written again and each member
// gets the retryable 503 (CommitOutcomeUnknown), as a creation alone would.
import { WriteBatch } from '../../db/batch.ts';
import { CommitOutcomeUnknown, commitError } from '../../db/errors.ts';
import { groupCommit, type Member as GroupMember } from '../../db/groups.ts';
import type { Db } from '../../db/open.ts';

type Member = GroupMember<{ batch: WriteBatch }, void>;

const submit = groupCommit<{ batch: WriteBatch }, void>(writeGroup, { name: 'intent_create' });

/** Writes a decided intent's batch (the intent and its event) in the next group. */
export function submitIntentWrite(db: Db, batch: WriteBatch): Promise<void> {
  return submit(db, { batch });
}

async function writeGroup(db: Db, members: Member[]): Promise<void> {
  try {
    // Alone, the batch's own statement (plain parameters); together, the merged one.
    await (members.length === 1 ? members[0]!.batch : WriteBatch.merged(members.map((m) => m.batch))).flush(db);
  } catch (err) {
    if (members.length === 1) return members[0]!.reject(err);
    const outcome = commitError(err);
    if (outcome instanceof CommitOutcomeUnknown) {
      for (const m of members) m.reject(outcome);
      return;
    }
    await Promise.all(members.map((m) => writeGroup(db, [m])));
    return;
  }
  for (const m of members) m.resolve();
}
