// The checker: what the history says was asked and answered, against what the database and
// the webhook receivers hold. Pure: it takes the history's records and the database's facts
// and returns the anomalies, each with the history records that show it.
import type { Facts } from './facts.ts';
import type { AttemptRecord, FaultRecord, HistoryRecord, HookRecord, OpRecord } from './history.ts';

export interface Anomaly {
  rule: string;
  detail: string;
  /** The operations involved (their seq), for the slice of history that shows the anomaly. */
  seqs?: number[];
  /** Webhook ids involved. */
  webhookIds?: string[];
}

/** Faults during which PostgreSQL may be unreachable from Coffer: a 503 then is expected. */
const DB_FAULTS = new Set(['postgres-restart', 'db-stall', 'db-reset', 'db-latency', 'db-commit-loss']);
/** After a database fault ends, requests that were waiting on it may still be answered 503 for this long. */
const DB_FAULT_TAIL_MS = 20_000;

/** Retries the campaign's SDK clients make after a first attempt (chaos/api.ts). */
const SDK_RETRIES = 8;

const ok = (s?: number) => s !== undefined && s >= 200 && s < 300;

/** An operation whose effect may or may not have happened: no answer, or an attempt without a definite one. */
function uncertain(op: OpRecord, attempts: AttemptRecord[]): boolean {
  if (ok(op.status)) return false;
  if (op.status === undefined || op.status >= 500) return true;
  return attempts.some((a) => a.status === undefined || a.status >= 500 || a.status === 409 || a.status === 408);
}

export function check(history: HistoryRecord[], f: Facts): Anomaly[] {
  const ops = history.filter((r): r is OpRecord => r.kind === 'op');
  const attempts = new Map<number, AttemptRecord[]>();
  for (const r of history) if (r.kind === 'attempt') attempts.set(r.seq, [...(attempts.get(r.seq) ?? []), r]);
  const hooks = history.filter((r): r is HookRecord => r.kind === 'hook');
  const faults = history.filter((r): r is FaultRecord => r.kind === 'fault');
  return [
    ...checkEffects(ops, attempts, f),
    ...checkRetries(ops, attempts),
    ...checkLedger(f),
    ...checkCardNetwork(f),
    ...checkCounterparties(f),
    ...checkWebhooks(hooks, f),
    ...checkErrors(attempts, faults),
    ...f.stuck.map((s) => ({ rule: 'nothing stuck after faults', detail: s })),
  ];
}

/**
 * A write with an idempotency key is safe to repeat, so the SDK repeats it until it has an
 * answer or runs out of retries: one left without an answer (or with a 5xx) after fewer
 * attempts was given up too early, and whether it happened is left unknown.
 */
function checkRetries(ops: OpRecord[], attempts: Map<number, AttemptRecord[]>): Anomaly[] {
  const out: Anomaly[] = [];
  for (const op of ops) {
    if (!op.idempotencyKey || !(op.status === undefined || op.status >= 500)) continue;
    const n = attempts.get(op.seq)?.length ?? 0;
    if (n < SDK_RETRIES + 1)
      out.push({
        rule: 'keyed writes retried until answered',
        detail: `${op.name} with key ${op.idempotencyKey} ended ${op.status ?? op.error ?? 'unanswered'} after ${n} of ${SDK_RETRIES + 1} attempts`,
        seqs: [op.seq],
      });
  }
  return out;
}

/**
 * Every operation answered 2xx happened exactly once; a refused one (a definite 4xx) not at all;
 * an unanswered one zero or one time. Operations are grouped by the rows they make (a deposit:
 * a transaction of that wallet and amount), so for each group:
 * answered ≤ rows ≤ answered + uncertain.
 */
function checkEffects(ops: OpRecord[], attempts: Map<number, AttemptRecord[]>, f: Facts): Anomaly[] {
  const count = new Map<string, number>();
  const add = (k: string) => count.set(k, (count.get(k) ?? 0) + 1);
  for (const t of f.transactions) add(`deposit|${t.wallet_id}|${t.amount}`);
  for (const w of f.withdrawals) add(`withdraw|${w.wallet_id}|${w.amount}`);
  for (const r of f.rewards) if (r.wallet_id) add(`reward|${r.wallet_id}|${r.amount}`);
  for (const r of f.refunds) add(`refund|${r.payment_id}|${r.amount}`);
  for (const p of f.payments) if (p.intent_id && p.status !== 'Failed') add(`authorize|${p.intent_id}`);
  // A direct payment (no intent): a refused one writes no row, so every row counts, whatever became of it.
  for (const p of f.payments) if (!p.intent_id && p.wallet_id) add(`directPayment|${p.wallet_id}|${p.amount}`);
  // A capture: the merchant's (bank rails) or the card network's (card rails, gifts).
  for (const e of f.entries)
    if (e.ref_type === 'payment' && (e.kind === 'payment.capture' || e.kind === 'gift.capture'))
      add(`capture|${e.ref_id}`);
  // The card network's authorizations it approved (Canceled: approved, then the payment was canceled).
  for (const a of f.cardAuthorizations)
    if (a.status === 'Approved' || a.status === 'Canceled') add(`cardAuth|${a.payment_id}`);
  for (const p of f.incomingPayments) add(`counterpartyDeposit|${p.counterparty_id}|${p.amount}`);
  for (const p of f.payouts) {
    add(`payout|${p.counterparty_id}|${p.amount}`);
    if (p.status === 'Completed') add(`payoutComplete|${p.id}`);
  }
  for (const e of f.entries) if (e.kind === 'counterparty.payout.return') add(`payoutReturn|${e.ref_id}`);
  const keysOf = (op: OpRecord): string[] => {
    switch (op.name) {
      case 'deposit':
      case 'withdraw':
      case 'reward':
      case 'directPayment':
        return [`${op.name}|${op.refs.wallet}|${op.amount}`];
      case 'refund':
        return [`refund|${op.refs.payment}|${op.amount}`];
      case 'authorize':
        return [`authorize|${op.refs.intent}`];
      case 'capture':
      case 'cardCapture':
        return [`capture|${op.refs.payment}`];
      case 'cardAuth':
        return [`cardAuth|${op.refs.payment}`];
      case 'cardAuthCapture':
        return [`cardAuth|${op.refs.payment}`, `capture|${op.refs.payment}`];
      case 'counterpartyDeposit':
      case 'payout':
        return [`${op.name}|${op.refs.counterparty}|${op.amount}`];
      case 'payoutComplete':
      case 'payoutReturn':
        return [`${op.name}|${op.refs.payout}`];
      default:
        return [];
    }
  };
  const groups = new Map<string, { answered: number[]; unsure: number[]; refused: number[] }>();
  for (const op of ops) {
    for (const k of keysOf(op)) {
      const g = groups.get(k) ?? { answered: [], unsure: [], refused: [] };
      groups.set(k, g);
      if (ok(op.status)) g.answered.push(op.seq);
      else if (uncertain(op, attempts.get(op.seq) ?? [])) g.unsure.push(op.seq);
      else g.refused.push(op.seq);
    }
  }
  const out: Anomaly[] = [];
  for (const [k, g] of groups) {
    const rows = count.get(k) ?? 0;
    const seqs = [...g.answered, ...g.unsure, ...g.refused].sort((a, b) => a - b);
    if (rows < g.answered.length)
      out.push({
        rule: 'answered 2xx means applied',
        detail: `${k}: ${g.answered.length} answered 2xx, ${rows} in the database`,
        seqs,
      });
    else if (rows > g.answered.length + g.unsure.length)
      out.push({
        rule: 'at most one effect per operation',
        detail: `${k}: ${rows} in the database for ${g.answered.length} answered, ${g.unsure.length} unanswered, ${g.refused.length} refused`,
        seqs,
      });
  }
  // Resources a 2xx answer named exist.
  const ids: Record<string, Set<string>> = {
    createUser: new Set(f.users.map((u) => u.id)),
    createWallet: new Set(f.wallets.map((w) => w.id)),
    createIntent: new Set(f.intents.map((i) => i.id)),
    createGift: new Set(f.gifts.map((g) => g.look_up_id)),
    deposit: new Set(f.transactions.map((t) => t.id)),
    withdraw: new Set(f.withdrawals.map((w) => w.id)),
    directPayment: new Set(f.payments.map((p) => p.id)),
    createCounterparty: new Set(f.counterparties.map((c) => c.id)),
    payout: new Set(f.payouts.map((p) => p.id)),
  };
  for (const op of ops) {
    const known = ids[op.name];
    if (known && ok(op.status) && op.resultId && !known.has(op.resultId))
      out.push({
        rule: 'answered 2xx means applied',
        detail: `${op.name} answered ${op.status} with ${op.resultId}, which the database does not hold`,
        seqs: [op.seq],
      });
  }
  return out;
}

/** Each entry balances, each balance equals its postings, nothing forbidden is negative, reservations are released or captured, never both. */
function checkLedger(f: Facts): Anomaly[] {
  const out: Anomaly[] = f.ledgerViolations.map((v) => ({ rule: `ledger: ${v.rule}`, detail: v.detail }));
  const byEntry = new Map<string, { sum: number; n: number }>();
  const byAccount = new Map<string, number>();
  for (const p of f.postings) {
    const e = byEntry.get(p.entry_id) ?? { sum: 0, n: 0 };
    e.sum += p.amount;
    e.n++;
    byEntry.set(p.entry_id, e);
    byAccount.set(p.account_id, (byAccount.get(p.account_id) ?? 0) + p.amount);
  }
  for (const e of f.entries) {
    const s = byEntry.get(e.id) ?? { sum: 0, n: 0 };
    if (s.sum !== 0 || s.n < 2)
      out.push({
        rule: 'each entry balances',
        detail: `entry ${e.id} (${e.kind} of ${e.ref_type} ${e.ref_id}): ${s.n} postings summing to ${s.sum}`,
      });
  }
  for (const a of f.accounts) {
    const s = byAccount.get(a.id) ?? 0;
    if (a.tracked && a.balance !== s)
      out.push({
        rule: 'balance equals its postings',
        detail: `account ${a.id} (${a.code}): balance ${a.balance}, postings ${s}`,
      });
    if (!a.allow_negative && (a.tracked ? a.balance : s) < 0)
      out.push({
        rule: 'no forbidden negative',
        detail: `account ${a.id} (${a.code}) is ${a.tracked ? a.balance : s}`,
      });
  }
  // Reservations. A wallet payment's authorize reserved its wallet part (its sourcing; the entry
  // is the authorization attempt's); what the payment's own entries take off reserved accounts
  // (captures, releases) never exceeds it, and leaves nothing once the payment is past Created.
  const reservedAccounts = new Map(f.accounts.filter((a) => a.code.endsWith('.reserved')).map((a) => [a.id, a]));
  const taken = new Map<string, number>();
  const entryOf = new Map(f.entries.map((e) => [e.id, e]));
  for (const p of f.postings) {
    const e = entryOf.get(p.entry_id);
    if (e?.ref_type === 'payment' && reservedAccounts.has(p.account_id))
      taken.set(e.ref_id, (taken.get(e.ref_id) ?? 0) - p.amount);
  }
  const openByWallet = new Map<string, number>();
  for (const p of f.payments) {
    if (!p.wallet_id) continue;
    // A direct payment (no intent) pays from the available accounts at once and reserves nothing.
    const reserved =
      p.status === 'Failed' || !p.intent_id
        ? 0
        : p.sourcing.merchantReward + p.sourcing.accrueReward + p.sourcing.deposit;
    const t = taken.get(p.id) ?? 0;
    if (t > reserved)
      out.push({
        rule: 'reservation released or captured, never both',
        detail: `payment ${p.id} (${p.status}): reserved ${reserved}, released and captured ${t}`,
      });
    else if (p.status !== 'Created' && t !== reserved)
      out.push({
        rule: 'reservation released or captured',
        detail: `payment ${p.id} is ${p.status} and still holds ${reserved - t} of ${reserved} reserved`,
      });
    if (p.status === 'Created') openByWallet.set(p.wallet_id, (openByWallet.get(p.wallet_id) ?? 0) + reserved - t);
  }
  // A gift payment's holds (the card network's authorizations put gift money on gift.reserved)
  // are captured or released, never both, all of them once the payment is past Created, and
  // a gift's reserved money is what its open payments hold.
  const heldByPayment = new Map<string, { held: number; taken: number }>();
  for (const p of f.postings) {
    const e = entryOf.get(p.entry_id);
    const a = reservedAccounts.get(p.account_id);
    if (e?.ref_type !== 'payment' || a?.code !== 'gift.reserved') continue;
    const h = heldByPayment.get(e.ref_id) ?? { held: 0, taken: 0 };
    if (p.amount > 0) h.held += p.amount;
    else h.taken -= p.amount;
    heldByPayment.set(e.ref_id, h);
  }
  const openByGift = new Map<string, number>();
  for (const p of f.payments) {
    if (!p.gift_id) continue;
    const { held, taken } = heldByPayment.get(p.id) ?? { held: 0, taken: 0 };
    if (held !== p.network_authorized)
      out.push({
        rule: 'a gift holds what the card network authorized',
        detail: `payment ${p.id} (${p.status}): the network authorized ${p.network_authorized}, the gift holds ${held}`,
      });
    if (taken > held)
      out.push({
        rule: 'reservation released or captured, never both',
        detail: `gift payment ${p.id} (${p.status}): held ${held}, released and captured ${taken}`,
      });
    else if (p.status !== 'Created' && taken !== held)
      out.push({
        rule: 'reservation released or captured',
        detail: `gift payment ${p.id} is ${p.status} and still holds ${held - taken} of ${held}`,
      });
    if (p.status === 'Created') openByGift.set(p.gift_id, (openByGift.get(p.gift_id) ?? 0) + held - taken);
  }
  for (const a of reservedAccounts.values()) {
    if (a.code !== 'gift.reserved') continue;
    const open = openByGift.get(a.owner_id) ?? 0;
    if (a.balance !== open)
      out.push({
        rule: 'reserved money is what open payments hold',
        detail: `gift ${a.owner_id}: ${a.balance} reserved, its open payments hold ${open}`,
      });
  }
  // And a wallet's reserved money is what its open payments hold.
  const reservedByWallet = new Map<string, number>();
  for (const a of reservedAccounts.values())
    reservedByWallet.set(a.owner_id, (reservedByWallet.get(a.owner_id) ?? 0) + a.balance);
  const walletIds = new Set(f.wallets.map((w) => w.id));
  for (const [owner, balance] of reservedByWallet) {
    if (!walletIds.has(owner)) continue;
    const open = openByWallet.get(owner) ?? 0;
    if (balance !== open)
      out.push({
        rule: 'reserved money is what open payments hold',
        detail: `wallet ${owner}: ${balance} reserved, its open payments hold ${open}`,
      });
  }
  return out;
}

/**
 * The card network (card rails and gifts): a payment's authorized amount is what the network
 * approved; it captures at most once and at most what it authorized, and a payment it settled
 * (Sent, or Returned by refunds) has that one capture, of its captured amount.
 */
function checkCardNetwork(f: Facts): Anomaly[] {
  const out: Anomaly[] = [];
  const approved = new Map<string, number>();
  for (const a of f.cardAuthorizations)
    if (a.status === 'Approved' || a.status === 'Canceled')
      approved.set(a.payment_id, (approved.get(a.payment_id) ?? 0) + a.amount);
  const captures = new Map<string, number[]>();
  for (const c of f.cardCaptures)
    if (c.success) captures.set(c.payment_id, [...(captures.get(c.payment_id) ?? []), c.amount]);
  for (const p of f.payments) {
    if (p.rail === 'bank') continue;
    const a = approved.get(p.id) ?? 0;
    if (a !== p.network_authorized)
      out.push({
        rule: 'card network: authorized is what it approved',
        detail: `payment ${p.id} (${p.rail}, ${p.status}): network_authorized ${p.network_authorized}, approved ${a}`,
      });
    if (p.network_authorized > p.amount)
      out.push({
        rule: 'card network: authorized is what it approved',
        detail: `payment ${p.id}: ${p.network_authorized} authorized on a payment of ${p.amount}`,
      });
    const c = captures.get(p.id) ?? [];
    if (c.length > 1)
      out.push({
        rule: 'card network: captured once',
        detail: `payment ${p.id} (${p.rail}): ${c.length} successful captures (${c.join(', ')})`,
      });
    const settled = p.status === 'Sent' || p.status === 'Returned';
    if (settled && (c.length !== 1 || c[0] !== p.captured_amount))
      out.push({
        rule: 'card network: captured once',
        detail: `payment ${p.id} (${p.rail}) is ${p.status} with captured ${p.captured_amount}; network captures: ${c.join(', ') || 'none'}`,
      });
    if (!settled && c.length > 0)
      out.push({
        rule: 'card network: captured once',
        detail: `payment ${p.id} (${p.rail}) is ${p.status} but the network captured ${c.join(', ')}`,
      });
    if (c.some((x) => x > p.network_authorized))
      out.push({
        rule: 'card network: captures at most what it authorized',
        detail: `payment ${p.id}: captured ${c.join(', ')} of ${p.network_authorized} authorized`,
      });
  }
  return out;
}

/**
 * Counterparties: each payout left the balance once (one entry of its amount), and came back
 * once if and only if it was returned; a counterparty's balance never goes below zero (the
 * campaign's merchants charge no fees to counterparties, the one thing that may take it there).
 */
function checkCounterparties(f: Facts): Anomaly[] {
  const out: Anomaly[] = [];
  const counterpartyAccounts = new Set(f.accounts.filter((a) => a.code.startsWith('counterparty.')).map((a) => a.id));
  const moved = new Map<string, { payout: number[]; returned: number[] }>();
  const sums = new Map<string, number>();
  for (const p of f.postings)
    if (counterpartyAccounts.has(p.account_id)) sums.set(p.entry_id, (sums.get(p.entry_id) ?? 0) + p.amount);
  for (const e of f.entries) {
    if (e.ref_type !== 'counterparty_payout') continue;
    const m = moved.get(e.ref_id) ?? { payout: [], returned: [] };
    if (e.kind === 'counterparty.payout') m.payout.push(-(sums.get(e.id) ?? 0));
    else if (e.kind === 'counterparty.payout.return') m.returned.push(sums.get(e.id) ?? 0);
    moved.set(e.ref_id, m);
  }
  for (const p of f.payouts) {
    const m = moved.get(p.id) ?? { payout: [], returned: [] };
    if (m.payout.length !== 1 || m.payout[0] !== p.amount)
      out.push({
        rule: 'a payout leaves the balance once',
        detail: `payout ${p.id} of ${p.amount} (${p.status}): ledger entries ${JSON.stringify(m.payout)}`,
      });
    const want = p.status === 'Returned' ? [p.amount] : [];
    if (JSON.stringify(m.returned) !== JSON.stringify(want))
      out.push({
        rule: 'a returned payout comes back once',
        detail: `payout ${p.id} of ${p.amount} (${p.status}): return entries ${JSON.stringify(m.returned)}`,
      });
  }
  for (const a of f.accounts)
    if (a.code === 'counterparty.available' && a.balance < 0)
      out.push({ rule: 'no forbidden negative', detail: `counterparty ${a.owner_id}: available ${a.balance}` });
  return out;
}

/**
 * Every event of a committed change reaches every receiver subscribed when it happened (all
 * answer 200 in the end), with the same webhook-id and body on every attempt; nothing arrives
 * that the database has no event for (a rolled-back change).
 */
function checkWebhooks(hooks: HookRecord[], f: Facts): Anomaly[] {
  const out: Anomaly[] = [];
  const events = new Map(f.events.map((e) => [e.id, e]));
  const bodies = new Map<string, string>();
  const delivered = new Set<string>();
  for (const h of hooks) {
    if (h.eventId !== h.webhookId)
      out.push({
        rule: 'webhook-id is the event id',
        detail: `${h.receiver} got webhook-id ${h.webhookId} for event ${h.eventId}`,
        webhookIds: [h.webhookId],
      });
    if (!events.has(h.webhookId))
      out.push({
        rule: 'nothing delivered for a rolled-back change',
        detail: `${h.receiver} got ${h.webhookId}, which is no event in the database`,
        webhookIds: [h.webhookId],
      });
    const k = `${h.receiver}|${h.webhookId}`;
    const body = bodies.get(k);
    if (body !== undefined && body !== h.bodyHash)
      out.push({
        rule: 'same body on every attempt',
        detail: `${h.receiver} got two bodies for ${h.webhookId}`,
        webhookIds: [h.webhookId],
      });
    bodies.set(k, h.bodyHash);
    if (h.answer === 200) delivered.add(k);
  }
  // An event still pending at the end is excused only when it came after the drain, which found
  // nothing pending (5 s allows for its commit after its created_at): a job made it as the
  // processes were stopping.
  const late = new Set((f.pendingEvents ?? []).map((p) => p.id));
  const afterDrain = (e: { id: string; created_at: number }) =>
    late.has(e.id) && f.drainedAt !== undefined && e.created_at >= f.drainedAt - 5_000;
  for (const w of f.webhooks) {
    const receiver = w.url.split('/').pop()!;
    for (const e of f.events) {
      if (e.client_id !== w.client_id || e.created_at < w.created_at || e.topic === 'WebhookTest' || afterDrain(e))
        continue;
      if (!delivered.has(`${receiver}|${e.id}`))
        out.push({
          rule: 'every committed event delivered',
          detail: `event ${e.id} (${e.topic}) never answered 200 by ${receiver}`,
          webhookIds: [e.id],
        });
    }
  }
  return out;
}

/** No 5xx but 503, and a 503 only while PostgreSQL is (or just was) unreachable. */
function checkErrors(attempts: Map<number, AttemptRecord[]>, faults: FaultRecord[]): Anomaly[] {
  const windows: { from: number; to: number }[] = [];
  const open = new Map<string, number>();
  for (const r of faults) {
    if (!DB_FAULTS.has(r.fault)) continue;
    if (r.phase === 'start') open.set(r.fault, r.at);
    else windows.push({ from: open.get(r.fault) ?? r.at, to: r.at + DB_FAULT_TAIL_MS });
  }
  const out: Anomaly[] = [];
  for (const list of attempts.values()) {
    for (const a of list) {
      if (a.status === undefined || a.status < 500) continue;
      if (a.status !== 503)
        out.push({
          rule: 'no 5xx but retryable 503',
          detail: `${a.method} ${a.path} answered ${a.status} ${a.code ?? ''}`,
          seqs: [a.seq],
        });
      else if (!windows.some((w) => a.end >= w.from && a.at <= w.to))
        out.push({
          rule: '503 only while PostgreSQL is away',
          detail: `${a.method} ${a.path} answered 503 ${a.code ?? ''} with no database fault near`,
          seqs: [a.seq],
        });
    }
  }
  return out;
}

/** The shortest slice of history that shows an anomaly: its operations, their attempts, the faults around them, its webhook requests. */
export function slice(history: HistoryRecord[], a: Anomaly): HistoryRecord[] {
  const seqs = new Set(a.seqs ?? []);
  const ids = new Set(a.webhookIds ?? []);
  const mine = history.filter(
    (r) =>
      ((r.kind === 'op' || r.kind === 'attempt') && seqs.has(r.seq)) || (r.kind === 'hook' && ids.has(r.webhookId)),
  );
  if (mine.length === 0) return [];
  const from = Math.min(...mine.map((r) => r.at));
  const to = Math.max(...mine.map((r) => (r.kind === 'op' || r.kind === 'attempt' ? r.end : r.at)));
  const faults = history.filter((r) => r.kind === 'fault' && r.at >= from - 10_000 && r.at <= to);
  return [...mine, ...faults].sort((x, y) => x.at - y.at);
}
