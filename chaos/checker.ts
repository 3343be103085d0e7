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
const DB_FAULTS = new Set(['postgres-restart', 'db-stall', 'db-reset', 'db-latency']);
/** After a database fault ends, requests that were waiting on it may still be answered 503 for this long. */
const DB_FAULT_TAIL_MS = 20_000;

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
  return [...checkEffects(ops, attempts, f), ...checkLedger(f), ...checkWebhooks(hooks, f), ...checkErrors(attempts, faults), ...f.stuck.map((s) => ({ rule: 'nothing stuck after faults', detail: s }))];
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
  for (const e of f.entries) if (e.ref_type === 'payment' && (e.kind === 'payment.capture' || e.kind === 'gift.capture')) add(`capture|${e.ref_id}`);
  const keyOf = (op: OpRecord): string | undefined => {
    switch (op.name) {
      case 'deposit':
      case 'withdraw':
      case 'reward':
        return `${op.name}|${op.refs.wallet}|${op.amount}`;
      case 'refund':
        return `refund|${op.refs.payment}|${op.amount}`;
      case 'authorize':
        return `authorize|${op.refs.intent}`;
      case 'capture':
        return `capture|${op.refs.payment}`;
      default:
        return undefined;
    }
  };
  const groups = new Map<string, { answered: number[]; unsure: number[]; refused: number[] }>();
  for (const op of ops) {
    const k = keyOf(op);
    if (!k) continue;
    const g = groups.get(k) ?? { answered: [], unsure: [], refused: [] };
    groups.set(k, g);
    if (ok(op.status)) g.answered.push(op.seq);
    else if (uncertain(op, attempts.get(op.seq) ?? [])) g.unsure.push(op.seq);
    else g.refused.push(op.seq);
  }
  const out: Anomaly[] = [];
  for (const [k, g] of groups) {
    const rows = count.get(k) ?? 0;
    const seqs = [...g.answered, ...g.unsure, ...g.refused].sort((a, b) => a - b);
    if (rows < g.answered.length) out.push({ rule: 'answered 2xx means applied', detail: `${k}: ${g.answered.length} answered 2xx, ${rows} in the database`, seqs });
    else if (rows > g.answered.length + g.unsure.length)
      out.push({ rule: 'at most one effect per operation', detail: `${k}: ${rows} in the database for ${g.answered.length} answered, ${g.unsure.length} unanswered, ${g.refused.length} refused`, seqs });
  }
  // Resources a 2xx answer named exist.
  const ids: Record<string, Set<string>> = {
    createUser: new Set(f.users.map((u) => u.id)),
    createWallet: new Set(f.wallets.map((w) => w.id)),
    createIntent: new Set(f.intents.map((i) => i.id)),
    createGift: new Set(f.gifts.map((g) => g.look_up_id)),
    deposit: new Set(f.transactions.map((t) => t.id)),
    withdraw: new Set(f.withdrawals.map((w) => w.id)),
  };
  for (const op of ops) {
    const known = ids[op.name];
    if (known && ok(op.status) && op.resultId && !known.has(op.resultId)) out.push({ rule: 'answered 2xx means applied', detail: `${op.name} answered ${op.status} with ${op.resultId}, which the database does not hold`, seqs: [op.seq] });
  }
  return out;
}

/** Each entry balances, each balance equals its postings, nothing forbidden is negative, reservations are released or captured, never both. */
export function checkLedger(f: Facts): Anomaly[] {
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
    if (s.sum !== 0 || s.n < 2) out.push({ rule: 'each entry balances', detail: `entry ${e.id} (${e.kind} of ${e.ref_type} ${e.ref_id}): ${s.n} postings summing to ${s.sum}` });
  }
  for (const a of f.accounts) {
    const s = byAccount.get(a.id) ?? 0;
    if (a.tracked && a.balance !== s) out.push({ rule: 'balance equals its postings', detail: `account ${a.id} (${a.code}): balance ${a.balance}, postings ${s}` });
    if (!a.allow_negative && (a.tracked ? a.balance : s) < 0) out.push({ rule: 'no forbidden negative', detail: `account ${a.id} (${a.code}) is ${a.tracked ? a.balance : s}` });
  }
  // Reservations. A wallet payment's authorize reserved its wallet part (its sourcing; the entry
  // is the authorization attempt's); what the payment's own entries take off reserved accounts
  // (captures, releases) never exceeds it, and leaves nothing once the payment is past Created.
  const reservedAccounts = new Map(f.accounts.filter((a) => a.code.endsWith('.reserved')).map((a) => [a.id, a]));
  const taken = new Map<string, number>();
  const entryOf = new Map(f.entries.map((e) => [e.id, e]));
  for (const p of f.postings) {
    const e = entryOf.get(p.entry_id);
    if (e?.ref_type === 'payment' && reservedAccounts.has(p.account_id)) taken.set(e.ref_id, (taken.get(e.ref_id) ?? 0) - p.amount);
  }
  const openByWallet = new Map<string, number>();
  for (const p of f.payments) {
    if (!p.wallet_id) continue;
    const reserved = p.status === 'Failed' ? 0 : p.sourcing.merchantReward + p.sourcing.accrueReward + p.sourcing.deposit;
    const t = taken.get(p.id) ?? 0;
    if (t > reserved) out.push({ rule: 'reservation released or captured, never both', detail: `payment ${p.id} (${p.status}): reserved ${reserved}, released and captured ${t}` });
    else if (p.status !== 'Created' && t !== reserved) out.push({ rule: 'reservation released or captured', detail: `payment ${p.id} is ${p.status} and still holds ${reserved - t} of ${reserved} reserved` });
    if (p.status === 'Created') openByWallet.set(p.wallet_id, (openByWallet.get(p.wallet_id) ?? 0) + reserved - t);
  }
  // And a wallet's reserved money is what its open payments hold.
  const reservedByWallet = new Map<string, number>();
  for (const a of reservedAccounts.values()) reservedByWallet.set(a.owner_id, (reservedByWallet.get(a.owner_id) ?? 0) + a.balance);
  const walletIds = new Set(f.wallets.map((w) => w.id));
  for (const [owner, balance] of reservedByWallet) {
    if (!walletIds.has(owner)) continue;
    const open = openByWallet.get(owner) ?? 0;
    if (balance !== open) out.push({ rule: 'reserved money is what open payments hold', detail: `wallet ${owner}: ${balance} reserved, its open payments hold ${open}` });
  }
  return out;
}

/**
 * Every event of a committed change reaches every receiver subscribed when it happened (all
 * answer 200 in the end), with the same webhook-id and body on every attempt; nothing arrives
 * that the database has no event for (a rolled-back change).
 */
export function checkWebhooks(hooks: HookRecord[], f: Facts): Anomaly[] {
  const out: Anomaly[] = [];
  const events = new Map(f.events.map((e) => [e.id, e]));
  const bodies = new Map<string, string>();
  const delivered = new Set<string>();
  for (const h of hooks) {
    if (h.eventId !== h.webhookId) out.push({ rule: 'webhook-id is the event id', detail: `${h.receiver} got webhook-id ${h.webhookId} for event ${h.eventId}`, webhookIds: [h.webhookId] });
    if (!events.has(h.webhookId)) out.push({ rule: 'nothing delivered for a rolled-back change', detail: `${h.receiver} got ${h.webhookId}, which is no event in the database`, webhookIds: [h.webhookId] });
    const k = `${h.receiver}|${h.webhookId}`;
    const body = bodies.get(k);
    if (body !== undefined && body !== h.bodyHash) out.push({ rule: 'same body on every attempt', detail: `${h.receiver} got two bodies for ${h.webhookId}`, webhookIds: [h.webhookId] });
    bodies.set(k, h.bodyHash);
    if (h.answer === 200) delivered.add(k);
  }
  for (const w of f.webhooks) {
    const receiver = w.url.split('/').pop()!;
    for (const e of f.events) {
      if (e.client_id !== w.client_id || e.created_at < w.created_at || e.topic === 'WebhookTest') continue;
      if (!delivered.has(`${receiver}|${e.id}`)) out.push({ rule: 'every committed event delivered', detail: `event ${e.id} (${e.topic}) never answered 200 by ${receiver}`, webhookIds: [e.id] });
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
      if (a.status !== 503) out.push({ rule: 'no 5xx but retryable 503', detail: `${a.method} ${a.path} answered ${a.status} ${a.code ?? ''}`, seqs: [a.seq] });
      else if (!windows.some((w) => a.end >= w.from && a.at <= w.to)) out.push({ rule: '503 only while PostgreSQL is away', detail: `${a.method} ${a.path} answered 503 ${a.code ?? ''} with no database fault near`, seqs: [a.seq] });
    }
  }
  return out;
}

/** The shortest slice of history that shows an anomaly: its operations, their attempts, the faults around them, its webhook requests. */
export function slice(history: HistoryRecord[], a: Anomaly): HistoryRecord[] {
  const seqs = new Set(a.seqs ?? []);
  const ids = new Set(a.webhookIds ?? []);
  const mine = history.filter((r) => ((r.kind === 'op' || r.kind === 'attempt') && seqs.has(r.seq)) || (r.kind === 'hook' && ids.has(r.webhookId)));
  if (mine.length === 0) return [];
  const from = Math.min(...mine.map((r) => r.at));
  const to = Math.max(...mine.map((r) => (r.kind === 'op' || r.kind === 'attempt' ? r.end : r.at)));
  const faults = history.filter((r) => r.kind === 'fault' && r.at >= from - 10_000 && r.at <= to);
  return [...mine, ...faults].sort((x, y) => x.at - y.at);
}
