// The chaos checker catches what it is for: a clean history passes, and each planted anomaly
// (a doubled effect, an unbalanced entry, a missing delivery, ...) is reported with the slice of
// history that shows it. Pure: no database, no processes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { check, slice } from './checker.ts';
import type { Facts } from './facts.ts';
import type { HistoryRecord } from './history.ts';

const W = 'wallet-1';
const P = 'payment-1';
const CLIENT = 'client-1';

/** A small campaign that went right: a deposit, an authorize and its capture, one event delivered. */
function clean(): { history: HistoryRecord[]; facts: Facts } {
  const history: HistoryRecord[] = [
    { kind: 'op', seq: 1, client: 1, name: 'deposit', merchant: 'wallet', refs: { wallet: W }, amount: 500, idempotencyKey: 'k1', at: 1_000, end: 1_100, status: 201, resultId: 'tx-1' },
    { kind: 'attempt', seq: 1, method: 'POST', path: `/api/v1/wallets/${W}/transactions`, at: 1_000, end: 1_100, status: 201 },
    { kind: 'op', seq: 2, client: 1, name: 'authorize', merchant: 'wallet', refs: { wallet: W, intent: 'intent-1' }, amount: 300, idempotencyKey: 'k2', at: 2_000, end: 2_100, status: 201 },
    { kind: 'op', seq: 3, client: 1, name: 'capture', merchant: 'wallet', refs: { payment: P, intent: 'intent-1' }, amount: 300, at: 3_000, end: 3_100, status: 200 },
    // A deposit refused for good (4xx): nothing in the database.
    { kind: 'op', seq: 4, client: 1, name: 'deposit', merchant: 'wallet', refs: { wallet: W }, amount: 700, idempotencyKey: 'k4', at: 3_500, end: 3_600, status: 400, code: 'ExceedsMaxOneTimeDepositAmount' },
    { kind: 'attempt', seq: 4, method: 'POST', path: `/api/v1/wallets/${W}/transactions`, at: 3_500, end: 3_600, status: 400 },
    { kind: 'hook', receiver: 'wallet-a', webhookId: 'event-1', eventId: 'event-1', bodyHash: 'h1', answer: 500, at: 4_000 },
    { kind: 'hook', receiver: 'wallet-a', webhookId: 'event-1', eventId: 'event-1', bodyHash: 'h1', answer: 200, at: 5_000 },
  ];
  const acct = (id: string, code: string, balance: number, owner = W) => ({ id, owner_id: owner, code, balance, tracked: true, allow_negative: false });
  const facts: Facts = {
    transactions: [{ id: 'tx-1', wallet_id: W, amount: 500, status: 'Cleared' }],
    withdrawals: [],
    rewards: [],
    refunds: [],
    payments: [{ id: P, intent_id: 'intent-1', wallet_id: W, status: 'Processing', amount: 300, sourcing: { merchantReward: 0, accrueReward: 0, deposit: 300 } }],
    intents: [{ id: 'intent-1', status: 'PromotedToPayment' }],
    users: [],
    wallets: [{ id: W }],
    gifts: [],
    entries: [
      { id: 'e-deposit', kind: 'deposit.clear', ref_type: 'transaction', ref_id: 'tx-1' },
      { id: 'e-reserve', kind: 'payment.reserve', ref_type: 'attempt', ref_id: 'attempt-1' },
      { id: 'e-capture', kind: 'payment.capture', ref_type: 'payment', ref_id: P },
    ],
    postings: [
      { entry_id: 'e-deposit', account_id: 'bank', amount: -500 },
      { entry_id: 'e-deposit', account_id: 'available', amount: 500 },
      { entry_id: 'e-reserve', account_id: 'available', amount: -300 },
      { entry_id: 'e-reserve', account_id: 'reserved', amount: 300 },
      { entry_id: 'e-capture', account_id: 'reserved', amount: -300 },
      { entry_id: 'e-capture', account_id: 'settlement', amount: 300 },
    ],
    accounts: [
      { ...acct('bank', 'external.bank', -500, CLIENT), allow_negative: true },
      acct('available', 'deposit.available', 200),
      acct('reserved', 'deposit.reserved', 0),
      acct('settlement', 'merchant.settlement', 300, CLIENT),
    ],
    events: [{ id: 'event-1', client_id: CLIENT, topic: 'PaymentCaptured', created_at: 3_100 }],
    webhooks: [{ id: 'webhook-1', client_id: CLIENT, url: 'http://127.0.0.1:1/hooks/wallet-a', created_at: 500 }],
    ledgerViolations: [],
    stuck: [],
  };
  return { history, facts };
}

const rules = (history: HistoryRecord[], facts: Facts) => check(history, facts).map((a) => a.rule);

describe('chaos checker', () => {
  test('a campaign that went right has no anomaly', () => {
    const { history, facts } = clean();
    assert.deepEqual(check(history, facts), []);
  });

  test('a doubled effect: two deposits in the database for one answered deposit', () => {
    const { history, facts } = clean();
    facts.transactions.push({ id: 'tx-2', wallet_id: W, amount: 500, status: 'Cleared' });
    const anomalies = check(history, facts);
    assert.deepEqual(anomalies.map((a) => a.rule), ['at most one effect per operation']);
    // The slice shows the operation and its attempt.
    assert.deepEqual(slice(history, anomalies[0]!).map((r) => r.kind), ['op', 'attempt']);
  });

  test('an effect of a refused operation, and an answered one that left nothing', () => {
    const { history, facts } = clean();
    facts.transactions = [{ id: 'tx-3', wallet_id: W, amount: 700, status: 'Pending' }];
    assert.deepEqual(rules(history, facts).sort(), ['answered 2xx means applied', 'answered 2xx means applied', 'at most one effect per operation']);
  });

  test('an unanswered operation may have happened once, not twice', () => {
    const { history, facts } = clean();
    history.push({ kind: 'op', seq: 5, client: 1, name: 'withdraw', merchant: 'wallet', refs: { wallet: W }, amount: 50, idempotencyKey: 'k5', at: 6_000, end: 7_000, error: 'timeout' });
    facts.withdrawals.push({ id: 'wd-1', wallet_id: W, amount: 50 });
    assert.deepEqual(check(history, facts), []);
    facts.withdrawals.push({ id: 'wd-2', wallet_id: W, amount: 50 });
    assert.deepEqual(rules(history, facts), ['at most one effect per operation']);
  });

  test('an unbalanced entry, and a balance that is not its postings', () => {
    const { history, facts } = clean();
    facts.postings[1] = { entry_id: 'e-deposit', account_id: 'available', amount: 490 };
    assert.deepEqual(rules(history, facts).sort(), ['balance equals its postings', 'each entry balances']);
  });

  test('what the ledger invariant check reports is an anomaly', () => {
    const { history, facts } = clean();
    facts.ledgerViolations.push({ rule: 'postings sum to zero', detail: 'all postings sum to 10' });
    assert.deepEqual(rules(history, facts), ['ledger: postings sum to zero']);
  });

  test('a reservation both released and captured', () => {
    const { history, facts } = clean();
    facts.entries.push({ id: 'e-release', kind: 'payment.release', ref_type: 'payment', ref_id: P });
    facts.postings.push({ entry_id: 'e-release', account_id: 'reserved', amount: -300 }, { entry_id: 'e-release', account_id: 'available', amount: 300 });
    facts.accounts[1]!.balance = 500;
    facts.accounts[2] = { ...facts.accounts[2]!, balance: -300, allow_negative: true };
    assert.ok(rules(history, facts).includes('reservation released or captured, never both'));
  });

  test('a missing delivery: an event no receiver answered 200', () => {
    const { history, facts } = clean();
    facts.events.push({ id: 'event-2', client_id: CLIENT, topic: 'PaymentCreated', created_at: 2_100 });
    history.push({ kind: 'hook', receiver: 'wallet-a', webhookId: 'event-2', eventId: 'event-2', bodyHash: 'h2', answer: 'hang', at: 2_200 });
    const anomalies = check(history, facts);
    assert.deepEqual(anomalies.map((a) => a.rule), ['every committed event delivered']);
    assert.deepEqual(slice(history, anomalies[0]!).map((r) => r.kind), ['hook']);
  });

  test('a delivery for a rolled-back change, a changed body, another webhook-id', () => {
    const { history, facts } = clean();
    history.push(
      { kind: 'hook', receiver: 'wallet-a', webhookId: 'event-9', eventId: 'event-9', bodyHash: 'h9', answer: 200, at: 6_000 },
      { kind: 'hook', receiver: 'wallet-a', webhookId: 'event-1', eventId: 'event-1', bodyHash: 'other', answer: 200, at: 6_100 },
      { kind: 'hook', receiver: 'wallet-a', webhookId: 'event-x', eventId: 'event-1', bodyHash: 'h1', answer: 200, at: 6_200 },
    );
    assert.deepEqual(rules(history, facts).sort(), ['nothing delivered for a rolled-back change', 'nothing delivered for a rolled-back change', 'same body on every attempt', 'webhook-id is the event id']);
  });

  test('a 500, and a 503 with PostgreSQL up; a 503 during a restart is fine', () => {
    const { history, facts } = clean();
    history.push(
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'start', at: 10_000 },
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'end', at: 12_000 },
      { kind: 'attempt', seq: 6, method: 'GET', path: `/api/v1/wallets/${W}/balance`, at: 11_000, end: 11_010, status: 503 },
    );
    assert.deepEqual(check(history, facts), []);
    history.push(
      { kind: 'attempt', seq: 7, method: 'GET', path: `/api/v1/wallets/${W}/balance`, at: 100_000, end: 100_010, status: 503 },
      { kind: 'attempt', seq: 8, method: 'GET', path: `/api/v1/wallets/${W}/balance`, at: 11_000, end: 11_010, status: 500 },
    );
    assert.deepEqual(rules(history, facts).sort(), ['503 only while PostgreSQL is away', 'no 5xx but retryable 503']);
  });

  test('a process left stuck', () => {
    const { history, facts } = clean();
    facts.stuck.push('coffer1 did not answer /health');
    assert.deepEqual(rules(history, facts), ['nothing stuck after faults']);
  });
});
