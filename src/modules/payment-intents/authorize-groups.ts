// Authorizes in groups (group commit, src/db/groups.ts), for merchants whose authorizations ask
// nothing outside (no card processor, not card rails). Authorizes that arrive together share
// one transaction of four round trips whatever their number: BEGIN; one statement checks every
// key, locks every intent without waiting, locks the accounts of every wallet spent from in id
// order and reads what each decides on; each is decided on its own in memory (the same
// functions as an authorize alone, authorize.ts); one statement writes every reservation,
// payment, intent, event and stored response (WriteBatch.merged: one part per kind of row);
// COMMIT. Responses are sent after the commit. An authorize of a wallet that a running group is
// charging waits for the next group (rowOf, db/groups.ts) rather than holding up this one on the
// wallet's lock.
//
// Each authorize keeps its own outcome. One refused (not found, expired, KYC, over the amount)
// writes nothing and gets its error; a replay gets its stored response; two authorizes of one
// wallet are planned one after the other on the balances the first leaves. Two of one key, or of
// one intent, in the same group are concurrent: the later one gets 409, as when two
// transactions meet (IdempotencyKeyInUse, AlreadyExists). What a group does not decide itself
// runs alone after it commits (authorize.ts: an open processor attempt to take over, an intent
// that now requires action). If the group fails as a whole (an intent locked by another
// transaction, a lost connection, a balance the database refuses), nothing of it was written
// and every member runs alone, so each gets exactly the answer it would have had alone.
import { CommitOutcomeUnknown } from '../../db/errors.ts';
import type { Db } from '../../db/open.ts';
import { WriteBatch } from '../../db/batch.ts';
import { groupCommit, type Member as GroupMember } from '../../db/groups.ts';
import { apiError, ApiError } from '../../http/errors.ts';
import {
  checkedKeyOf,
  interpretKeyCheck,
  withoutRepeatedKeys,
  type IdempotencyScope,
  type StoredOutcome,
} from '../../http/idempotency.ts';
import { clientAccountIds, type ClientCode } from '../../ledger/accounts.ts';
import { availableDebits } from '../payments/money.ts';
import {
  alreadyAuthorized,
  alreadyRunning,
  approve,
  asksOutside,
  authorize,
  planSourcing,
  refuseOverAmount,
  refuseUnauthorizable,
  reserve,
  scopeOfInput,
  type AuthorizeDeps,
  type AuthorizeInput,
  type Serialize,
} from './authorize.ts';
import { effectiveStatus } from './render.ts';
import * as q from './sql.ts';
import { walletOfIntent } from './wallet-hints.ts';

interface AuthorizeRequest {
  deps: AuthorizeDeps;
  serialize: Serialize;
  input: AuthorizeInput;
}

type Member = GroupMember<AuthorizeRequest, StoredOutcome> & {
  scope?: IdempotencyScope;
  ext?: Record<ClientCode, string>;
};

const submit = groupCommit<AuthorizeRequest, StoredOutcome>((_db, members) => runGroup(members), {
  name: 'authorize',
  // The wallet whose accounts the group's read locks (only when the wallet's balance is applied).
  rowOf: (r) => (r.input.applyWalletBalance ? walletOfIntent(r.input.intentId) : undefined),
});

/** Authorizes a payment intent: in the next group, or alone when it asks the outside world. */
export function submitAuthorize(
  deps: AuthorizeDeps,
  serialize: Serialize,
  input: AuthorizeInput,
): Promise<StoredOutcome> {
  if (asksOutside(input.settings)) return authorize(deps, serialize, input);
  return submit(deps.db, { deps, serialize, input });
}

/** A member runs alone: settled with what authorize.ts answers. */
const runAlone = (m: Member) => authorize(m.deps, m.serialize, m.input).then(m.resolve, m.reject);

async function runGroup(members: Member[]): Promise<void> {
  const db: Db = members[0]!.deps.db;
  for (const m of members) m.scope = scopeOfInput(m.input);
  const group = withoutRepeatedKeys(members, (m) => m.scope);
  const settle: (() => void)[] = [];
  const alone: Member[] = [];
  try {
    for (const m of group) m.ext = await clientAccountIds(db, m.input.clientId);
    await db.transaction(async (tx) => {
      const now = group[0]!.deps.now();
      const reads = await q.readAuthorizeGroup(
        tx,
        group.map((m) =>
          Object.assign(checkedKeyOf(m.scope), {
            clientId: m.input.clientId,
            intentId: m.input.intentId,
            spend: m.input.applyWalletBalance,
          }),
        ),
        now,
      );
      const running: { m: Member; intent: q.IntentRow; status: string; c: q.AuthorizeContext }[] = [];
      const intents = new Set<string>();
      for (const [n, m] of group.entries()) {
        try {
          if (m.scope) {
            const { state } = interpretKeyCheck(reads[n], m.scope, now);
            if (state.kind === 'replay') {
              settle.push(() => m.resolve(state.outcome));
              continue;
            }
          }
          const row = reads[n]!.intent_row;
          if (!row) throw apiError('PaymentIntentNotFound', `No payment intent ${m.input.intentId}.`);
          // The same intent twice: the later is concurrent with the earlier, as when two
          // transactions meet on its lock.
          if (intents.has(m.input.intentId)) throw alreadyRunning();
          intents.add(m.input.intentId);
          const intent = q.intentFromJson(row);
          running.push({ m, intent, status: effectiveStatus(intent, now), c: reads[n]! });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          settle.push(() => m.reject(err));
        }
      }
      if (running.length === 0) return;
      // Each wallet's balances as the members before have left them.
      const wallets = new Map<string, [string, string, number][]>();
      const batches: WriteBatch[] = [];
      for (const { m, intent, status, c } of running) {
        const batch = new WriteBatch();
        try {
          if (status === 'PromotedToPayment') {
            const outcome = alreadyAuthorized(intent, c, m.deps.rc, now, m.serialize);
            settle.push(() => m.resolve(outcome));
            continue;
          }
          refuseUnauthorizable(status);
          refuseOverAmount(intent, m.input);
          if (intent.walletId && c.walletAccounts) {
            const earlier = wallets.get(intent.walletId);
            if (earlier) c.walletAccounts = earlier;
            else wallets.set(intent.walletId, c.walletAccounts);
          }
          const plan = c.openAttempt ? undefined : planSourcing(intent, c, m.input);
          if (!plan || plan.kind === 'requires-action') {
            // Taking over a processor attempt, or recording that the intent requires action.
            alone.push(m);
            continue;
          }
          const { attemptId, request, locked } = await reserve(tx, { i: m.input, intent, c, plan, now, batch });
          const { outcome } = await approve(tx, {
            intent,
            paymentIds: c.paymentIds,
            attemptId,
            request,
            sourcing: plan.sourcing,
            answer: undefined,
            scope: m.scope,
            deps: m.deps,
            ext: m.ext!,
            now,
            serialize: m.serialize,
            batch,
            locked,
          });
          spend(c.walletAccounts, plan.sourcing);
          batches.push(batch);
          settle.push(() => m.resolve(outcome));
        } catch (err) {
          // A refusal after some of its writes went out (a batch flushed early) cannot be left
          // out of the group: the group fails and every member runs alone.
          if (!(err instanceof ApiError) || batch.flushed) throw err;
          settle.push(() => m.reject(err));
        }
      }
      // Any failure of the write (a refusal by the ledger too) fails the group, whose members
      // then run alone: it can go with the COMMIT.
      await WriteBatch.merged(batches).flushWithCommit(tx);
    });
  } catch (err) {
    // The group may have committed: each member gets the retryable error (a retry with its key
    // replays what was committed) rather than running again.
    if (err instanceof CommitOutcomeUnknown) {
      for (const m of [...group, ...alone]) m.reject(err);
      return;
    }
    // Nothing of the group was written: each member runs alone and gets its own answer.
    await Promise.all(group.map(runAlone));
    return;
  }
  for (const s of settle) s();
  await Promise.all(alone.map(runAlone));
}

/** What a reservation takes from the wallet's available balances (the shared array, in place). */
function spend(
  accounts: [string, string, number][] | null,
  s: { merchantReward: number; accrueReward: number; deposit: number },
): void {
  const taken: Record<string, number | undefined> = availableDebits(s);
  for (const a of accounts ?? []) if (taken[a[1]]) a[2] -= taken[a[1]]!;
}
