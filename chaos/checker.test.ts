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
/** A card-rail payment of W, authorized and captured (in part) by the card network. */
const P2 = 'payment-2';
/** A gift payment, authorized and captured by the card network in one step. */
const P3 = 'payment-3';
const GIFT = 'gift-1';
const CP = 'counterparty-1';
const CLIENT = 'client-1';

/**
 * A small campaign that went right: a deposit, an authorize and its capture, one event
 * delivered; a card-rail payment and a gift payment through the card network; a counterparty
 * funded, paid out twice (one payout returned, one completed).
 */
function clean(): { history: HistoryRecord[]; facts: Facts } {
  const history: HistoryRecord[] = [
    {
      kind: 'op',
      seq: 1,
      client: 1,
      name: 'deposit',
      merchant: 'wallet',
      refs: { wallet: W },
      amount: 500,
      idempotencyKey: 'k1',
      at: 1_000,
      end: 1_100,
      status: 201,
      resultId: 'tx-1',
    },
    {
      kind: 'attempt',
      seq: 1,
      method: 'POST',
      path: `/api/v1/wallets/${W}/transactions`,
      at: 1_000,
      end: 1_100,
      status: 201,
    },
    {
      kind: 'op',
      seq: 2,
      client: 1,
      name: 'authorize',
      merchant: 'wallet',
      refs: { wallet: W, intent: 'intent-1' },
      amount: 300,
      idempotencyKey: 'k2',
      at: 2_000,
      end: 2_100,
      status: 201,
    },
    {
      kind: 'op',
      seq: 3,
      client: 1,
      name: 'capture',
      merchant: 'wallet',
      refs: { payment: P, intent: 'intent-1' },
      amount: 300,
      at: 3_000,
      end: 3_100,
      status: 200,
    },
    // A deposit refused for good (4xx): nothing in the database.
    {
      kind: 'op',
      seq: 4,
      client: 1,
      name: 'deposit',
      merchant: 'wallet',
      refs: { wallet: W },
      amount: 700,
      idempotencyKey: 'k4',
      at: 3_500,
      end: 3_600,
      status: 400,
      code: 'ExceedsMaxOneTimeDepositAmount',
    },
    {
      kind: 'attempt',
      seq: 4,
      method: 'POST',
      path: `/api/v1/wallets/${W}/transactions`,
      at: 3_500,
      end: 3_600,
      status: 400,
    },
    {
      kind: 'hook',
      receiver: 'wallet-a',
      webhookId: 'event-1',
      eventId: 'event-1',
      bodyHash: 'h1',
      answer: 500,
      at: 4_000,
    },
    {
      kind: 'hook',
      receiver: 'wallet-a',
      webhookId: 'event-1',
      eventId: 'event-1',
      bodyHash: 'h1',
      answer: 200,
      at: 5_000,
    },
    // Card rails: authorize, the card read, the network's authorization and a partial capture.
    {
      kind: 'op',
      seq: 10,
      client: 2,
      name: 'authorize',
      merchant: 'network',
      refs: { wallet: W, intent: 'intent-2' },
      amount: 200,
      idempotencyKey: 'k10',
      at: 1_200,
      end: 1_300,
      status: 201,
    },
    {
      kind: 'op',
      seq: 11,
      client: 2,
      name: 'readCard',
      merchant: 'network',
      refs: { payment: P2, intent: 'intent-2' },
      at: 1_300,
      end: 1_310,
      status: 200,
    },
    {
      kind: 'op',
      seq: 12,
      client: 2,
      name: 'cardAuth',
      merchant: 'network',
      refs: { payment: P2, intent: 'intent-2' },
      amount: 200,
      at: 1_310,
      end: 1_320,
      status: 200,
    },
    // A capture over what was authorized is refused (402) and moves nothing.
    {
      kind: 'op',
      seq: 13,
      client: 2,
      name: 'cardCapture',
      merchant: 'network',
      refs: { payment: P2, intent: 'intent-2' },
      amount: 201,
      at: 1_320,
      end: 1_330,
      status: 402,
      code: 'Failed',
    },
    {
      kind: 'op',
      seq: 14,
      client: 2,
      name: 'cardCapture',
      merchant: 'network',
      refs: { payment: P2, intent: 'intent-2' },
      amount: 150,
      at: 1_330,
      end: 1_340,
      status: 200,
    },
    // A gift: authorize, then the network authorizes and captures in one step.
    {
      kind: 'op',
      seq: 15,
      client: 3,
      name: 'authorize',
      merchant: 'wallet',
      refs: { gift: '9990001', intent: 'intent-3' },
      amount: 400,
      idempotencyKey: 'k15',
      at: 1_400,
      end: 1_500,
      status: 201,
    },
    {
      kind: 'op',
      seq: 16,
      client: 3,
      name: 'cardAuthCapture',
      merchant: 'wallet',
      refs: { payment: P3, intent: 'intent-3' },
      amount: 400,
      at: 1_500,
      end: 1_600,
      status: 200,
    },
    // A counterparty: funded, two payouts, one returned by the bank, one completed.
    {
      kind: 'op',
      seq: 20,
      client: 4,
      name: 'createCounterparty',
      merchant: 'wallet',
      refs: {},
      at: 1_000,
      end: 1_010,
      status: 201,
      resultId: CP,
    },
    {
      kind: 'op',
      seq: 21,
      client: 4,
      name: 'counterpartyDeposit',
      merchant: 'wallet',
      refs: { counterparty: CP },
      amount: 5_000,
      at: 1_010,
      end: 1_020,
      status: 204,
    },
    {
      kind: 'op',
      seq: 22,
      client: 4,
      name: 'payout',
      merchant: 'wallet',
      refs: { counterparty: CP },
      amount: 1_000,
      idempotencyKey: 'k22',
      at: 1_020,
      end: 1_030,
      status: 201,
      resultId: 'payout-1',
    },
    {
      kind: 'op',
      seq: 23,
      client: 4,
      name: 'payout',
      merchant: 'wallet',
      refs: { counterparty: CP },
      amount: 2_000,
      idempotencyKey: 'k23',
      at: 1_030,
      end: 1_040,
      status: 201,
      resultId: 'payout-2',
    },
    {
      kind: 'op',
      seq: 24,
      client: 4,
      name: 'payoutReturn',
      merchant: 'wallet',
      refs: { counterparty: CP, payout: 'payout-1' },
      at: 2_040,
      end: 2_050,
      status: 204,
    },
    // Completing a payout the job has not sent yet is refused; later it completes.
    {
      kind: 'op',
      seq: 25,
      client: 4,
      name: 'payoutComplete',
      merchant: 'wallet',
      refs: { counterparty: CP, payout: 'payout-2' },
      at: 1_040,
      end: 1_050,
      status: 400,
      code: 'IllegalOperation',
    },
    {
      kind: 'op',
      seq: 26,
      client: 4,
      name: 'payoutComplete',
      merchant: 'wallet',
      refs: { counterparty: CP, payout: 'payout-2' },
      at: 2_050,
      end: 2_060,
      status: 204,
    },
  ];
  const acct = (id: string, code: string, balance: number, owner = W) => ({
    id,
    owner_id: owner,
    code,
    balance,
    tracked: true,
    allow_negative: false,
  });
  const sourcing = (deposit: number) => ({ merchantReward: 0, accrueReward: 0, deposit });
  const noPayment = { gift_id: null, captured_amount: 0, network_authorized: 0 };
  const facts: Facts = {
    transactions: [{ id: 'tx-1', wallet_id: W, amount: 500, status: 'Cleared' }],
    withdrawals: [],
    rewards: [],
    refunds: [],
    payments: [
      {
        ...noPayment,
        id: P,
        intent_id: 'intent-1',
        wallet_id: W,
        rail: 'bank',
        status: 'Processing',
        amount: 300,
        captured_amount: 300,
        sourcing: sourcing(300),
      },
      {
        id: P2,
        intent_id: 'intent-2',
        wallet_id: W,
        gift_id: null,
        rail: 'card',
        status: 'Sent',
        amount: 200,
        captured_amount: 150,
        network_authorized: 200,
        sourcing: sourcing(200),
      },
      {
        id: P3,
        intent_id: 'intent-3',
        wallet_id: null,
        gift_id: GIFT,
        rail: 'gift',
        status: 'Sent',
        amount: 400,
        captured_amount: 400,
        network_authorized: 400,
        sourcing: sourcing(0),
      },
    ],
    cardAuthorizations: [
      { payment_id: P2, status: 'Approved', amount: 200 },
      { payment_id: P3, status: 'Approved', amount: 400 },
    ],
    cardCaptures: [
      { payment_id: P2, amount: 201, success: false },
      { payment_id: P2, amount: 150, success: true },
      { payment_id: P3, amount: 400, success: true },
    ],
    counterparties: [{ id: CP }],
    payouts: [
      { id: 'payout-1', counterparty_id: CP, amount: 1_000, status: 'Returned' },
      { id: 'payout-2', counterparty_id: CP, amount: 2_000, status: 'Completed' },
    ],
    incomingPayments: [{ id: 'incoming-1', counterparty_id: CP, amount: 5_000 }],
    intents: [{ id: 'intent-1', status: 'PromotedToPayment' }],
    users: [],
    wallets: [{ id: W }],
    gifts: [{ look_up_id: '9990001' }],
    entries: [
      { id: 'e-deposit', kind: 'deposit.clear', ref_type: 'transaction', ref_id: 'tx-1' },
      { id: 'e-reserve', kind: 'payment.reserve', ref_type: 'attempt', ref_id: 'attempt-1' },
      { id: 'e-capture', kind: 'payment.capture', ref_type: 'payment', ref_id: P },
      { id: 'e-reserve-2', kind: 'payment.reserve', ref_type: 'attempt', ref_id: 'attempt-2' },
      { id: 'e-capture-2', kind: 'payment.capture', ref_type: 'payment', ref_id: P2 },
      { id: 'e-release-2', kind: 'payment.release', ref_type: 'payment', ref_id: P2 },
      { id: 'e-gift', kind: 'gift.issue', ref_type: 'gift', ref_id: GIFT },
      { id: 'e-hold-3', kind: 'gift.hold', ref_type: 'payment', ref_id: P3 },
      { id: 'e-capture-3', kind: 'gift.capture', ref_type: 'payment', ref_id: P3 },
      {
        id: 'e-incoming',
        kind: 'counterparty.incoming',
        ref_type: 'counterparty_incoming_payment',
        ref_id: 'incoming-1',
      },
      { id: 'e-payout-1', kind: 'counterparty.payout', ref_type: 'counterparty_payout', ref_id: 'payout-1' },
      { id: 'e-return-1', kind: 'counterparty.payout.return', ref_type: 'counterparty_payout', ref_id: 'payout-1' },
      { id: 'e-payout-2', kind: 'counterparty.payout', ref_type: 'counterparty_payout', ref_id: 'payout-2' },
    ],
    postings: [
      { entry_id: 'e-deposit', account_id: 'bank', amount: -500 },
      { entry_id: 'e-deposit', account_id: 'available', amount: 500 },
      { entry_id: 'e-reserve', account_id: 'available', amount: -300 },
      { entry_id: 'e-reserve', account_id: 'reserved', amount: 300 },
      { entry_id: 'e-capture', account_id: 'reserved', amount: -300 },
      { entry_id: 'e-capture', account_id: 'settlement', amount: 300 },
      { entry_id: 'e-reserve-2', account_id: 'available', amount: -200 },
      { entry_id: 'e-reserve-2', account_id: 'reserved', amount: 200 },
      { entry_id: 'e-capture-2', account_id: 'reserved', amount: -150 },
      { entry_id: 'e-capture-2', account_id: 'card-network', amount: 150 },
      { entry_id: 'e-release-2', account_id: 'reserved', amount: -50 },
      { entry_id: 'e-release-2', account_id: 'available', amount: 50 },
      { entry_id: 'e-gift', account_id: 'gifts', amount: -1_000 },
      { entry_id: 'e-gift', account_id: 'gift-available', amount: 1_000 },
      { entry_id: 'e-hold-3', account_id: 'gift-available', amount: -400 },
      { entry_id: 'e-hold-3', account_id: 'gift-reserved', amount: 400 },
      { entry_id: 'e-capture-3', account_id: 'gift-reserved', amount: -400 },
      { entry_id: 'e-capture-3', account_id: 'card-network', amount: 400 },
      { entry_id: 'e-incoming', account_id: 'bank', amount: -5_000 },
      { entry_id: 'e-incoming', account_id: 'cp-available', amount: 5_000 },
      { entry_id: 'e-payout-1', account_id: 'cp-available', amount: -1_000 },
      { entry_id: 'e-payout-1', account_id: 'bank', amount: 1_000 },
      { entry_id: 'e-return-1', account_id: 'bank', amount: -1_000 },
      { entry_id: 'e-return-1', account_id: 'cp-available', amount: 1_000 },
      { entry_id: 'e-payout-2', account_id: 'cp-available', amount: -2_000 },
      { entry_id: 'e-payout-2', account_id: 'bank', amount: 2_000 },
    ],
    accounts: [
      { ...acct('bank', 'external.bank', -3_500, CLIENT), allow_negative: true },
      acct('available', 'deposit.available', 50),
      acct('reserved', 'deposit.reserved', 0),
      acct('settlement', 'merchant.settlement', 300, CLIENT),
      { ...acct('card-network', 'external.card_network', 550, CLIENT), allow_negative: true },
      { ...acct('gifts', 'merchant.gifts', -1_000, CLIENT), allow_negative: true },
      acct('gift-available', 'gift.available', 600, GIFT),
      acct('gift-reserved', 'gift.reserved', 0, GIFT),
      { ...acct('cp-available', 'counterparty.available', 3_000, CP), allow_negative: true },
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
    assert.deepEqual(
      anomalies.map((a) => a.rule),
      ['at most one effect per operation'],
    );
    // The slice shows the operation and its attempt.
    assert.deepEqual(
      slice(history, anomalies[0]!).map((r) => r.kind),
      ['op', 'attempt'],
    );
  });

  test('an effect of a refused operation, and an answered one that left nothing', () => {
    const { history, facts } = clean();
    facts.transactions = [{ id: 'tx-3', wallet_id: W, amount: 700, status: 'Pending' }];
    assert.deepEqual(rules(history, facts).sort(), [
      'answered 2xx means applied',
      'answered 2xx means applied',
      'at most one effect per operation',
    ]);
  });

  test('an unanswered operation may have happened once, not twice', () => {
    const { history, facts } = clean();
    history.push({
      kind: 'op',
      seq: 5,
      client: 1,
      name: 'withdraw',
      merchant: 'wallet',
      refs: { wallet: W },
      amount: 50,
      idempotencyKey: 'k5',
      at: 6_000,
      end: 7_000,
      error: 'timeout',
    });
    for (let i = 0; i < 9; i++)
      history.push({
        kind: 'attempt',
        seq: 5,
        method: 'POST',
        path: `/api/v1/wallets/${W}/withdraw`,
        at: 6_000,
        end: 7_000,
        error: 'timeout',
      });
    facts.withdrawals.push({ id: 'wd-1', wallet_id: W, amount: 50 });
    assert.deepEqual(check(history, facts), []);
    facts.withdrawals.push({ id: 'wd-2', wallet_id: W, amount: 50 });
    assert.deepEqual(rules(history, facts), ['at most one effect per operation']);
  });

  test('a direct payment (no intent) is one payment row and reserves nothing; a second row for it is a doubled effect', () => {
    const { history, facts } = clean();
    const D = 'payment-4';
    history.push({
      kind: 'op',
      seq: 30,
      client: 1,
      name: 'directPayment',
      merchant: 'wallet',
      refs: { wallet: W },
      amount: 40,
      idempotencyKey: 'k30',
      at: 6_000,
      end: 6_100,
      status: 200,
      resultId: D,
    });
    facts.payments.push({
      id: D,
      intent_id: null,
      wallet_id: W,
      gift_id: null,
      rail: 'bank',
      status: 'Processing',
      amount: 40,
      captured_amount: 40,
      network_authorized: 0,
      sourcing: { merchantReward: 0, accrueReward: 0, deposit: 40 },
    });
    facts.entries.push({ id: 'e-direct', kind: 'payment.direct', ref_type: 'payment', ref_id: D });
    facts.postings.push(
      { entry_id: 'e-direct', account_id: 'available', amount: -40 },
      { entry_id: 'e-direct', account_id: 'settlement', amount: 40 },
    );
    facts.accounts[1]!.balance -= 40;
    facts.accounts[3]!.balance += 40;
    assert.deepEqual(check(history, facts), []);
    facts.payments.push({ ...facts.payments.at(-1)!, id: 'payment-5' });
    assert.deepEqual(rules(history, facts), ['at most one effect per operation']);
    facts.payments.pop();
    facts.payments.pop();
    assert.deepEqual(rules(history, facts), ['answered 2xx means applied', 'answered 2xx means applied']);
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
    facts.postings.push(
      { entry_id: 'e-release', account_id: 'reserved', amount: -300 },
      { entry_id: 'e-release', account_id: 'available', amount: 300 },
    );
    facts.accounts[1]!.balance += 300;
    facts.accounts[2] = { ...facts.accounts[2]!, balance: -300, allow_negative: true };
    assert.ok(rules(history, facts).includes('reservation released or captured, never both'));
  });

  test('a missing delivery: an event no receiver answered 200', () => {
    const { history, facts } = clean();
    facts.events.push({ id: 'event-2', client_id: CLIENT, topic: 'PaymentCreated', created_at: 2_100 });
    history.push({
      kind: 'hook',
      receiver: 'wallet-a',
      webhookId: 'event-2',
      eventId: 'event-2',
      bodyHash: 'h2',
      answer: 'hang',
      at: 2_200,
    });
    const anomalies = check(history, facts);
    assert.deepEqual(
      anomalies.map((a) => a.rule),
      ['every committed event delivered'],
    );
    assert.deepEqual(
      slice(history, anomalies[0]!).map((r) => r.kind),
      ['hook'],
    );
  });

  test('an event still pending at the end is excused only when a job made it after the drain', () => {
    const { history, facts } = clean();
    facts.drainedAt = 10_000;
    facts.events.push(
      { id: 'event-late', client_id: CLIENT, topic: 'PaymentUpdated', created_at: 10_050 },
      { id: 'event-early', client_id: CLIENT, topic: 'PaymentUpdated', created_at: 2_000 },
    );
    facts.pendingEvents = [{ id: 'event-late' }, { id: 'event-early' }];
    const anomalies = check(history, facts);
    assert.deepEqual(
      anomalies.map((a) => a.detail.split(' ')[1]),
      ['event-early'],
      'the late one is excused, the early one is not',
    );
    facts.pendingEvents = [{ id: 'event-early' }];
    assert.deepEqual(
      check(history, facts)
        .map((a) => a.detail.split(' ')[1])
        .sort(),
      ['event-early', 'event-late'],
      'a late event not pending was never delivered at all',
    );
  });

  test('a delivery for a rolled-back change, a changed body, another webhook-id', () => {
    const { history, facts } = clean();
    history.push(
      {
        kind: 'hook',
        receiver: 'wallet-a',
        webhookId: 'event-9',
        eventId: 'event-9',
        bodyHash: 'h9',
        answer: 200,
        at: 6_000,
      },
      {
        kind: 'hook',
        receiver: 'wallet-a',
        webhookId: 'event-1',
        eventId: 'event-1',
        bodyHash: 'other',
        answer: 200,
        at: 6_100,
      },
      {
        kind: 'hook',
        receiver: 'wallet-a',
        webhookId: 'event-x',
        eventId: 'event-1',
        bodyHash: 'h1',
        answer: 200,
        at: 6_200,
      },
    );
    assert.deepEqual(rules(history, facts).sort(), [
      'nothing delivered for a rolled-back change',
      'nothing delivered for a rolled-back change',
      'same body on every attempt',
      'webhook-id is the event id',
    ]);
  });

  test('a 500, and a 503 with PostgreSQL up; a 503 during a restart is fine', () => {
    const { history, facts } = clean();
    history.push(
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'start', at: 10_000 },
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'end', at: 12_000 },
      {
        kind: 'attempt',
        seq: 6,
        method: 'GET',
        path: `/api/v1/wallets/${W}/balance`,
        at: 11_000,
        end: 11_010,
        status: 503,
      },
    );
    assert.deepEqual(check(history, facts), []);
    history.push(
      {
        kind: 'attempt',
        seq: 7,
        method: 'GET',
        path: `/api/v1/wallets/${W}/balance`,
        at: 100_000,
        end: 100_010,
        status: 503,
      },
      {
        kind: 'attempt',
        seq: 8,
        method: 'GET',
        path: `/api/v1/wallets/${W}/balance`,
        at: 11_000,
        end: 11_010,
        status: 500,
      },
    );
    assert.deepEqual(rules(history, facts).sort(), ['503 only while PostgreSQL is away', 'no 5xx but retryable 503']);
  });

  test('a keyed write given up before its retries ran out (the SDK must repeat it with its key)', () => {
    const { history, facts } = clean();
    history.push(
      {
        kind: 'op',
        seq: 30,
        client: 1,
        name: 'withdraw',
        merchant: 'wallet',
        refs: { wallet: W },
        amount: 40,
        idempotencyKey: 'k30',
        at: 10_000,
        end: 10_100,
        status: 503,
        code: 'ServiceUnavailable',
      },
      {
        kind: 'attempt',
        seq: 30,
        method: 'POST',
        path: `/api/v1/wallets/${W}/withdraw`,
        at: 10_000,
        end: 10_100,
        status: 503,
      },
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'start', at: 9_900 },
      { kind: 'fault', fault: 'postgres-restart', target: 'postgres', phase: 'end', at: 11_000 },
    );
    const anomalies = check(history, facts);
    assert.deepEqual(
      anomalies.map((a) => a.rule),
      ['keyed writes retried until answered'],
    );
    assert.deepEqual(
      slice(history, anomalies[0]!).map((r) => r.kind),
      ['fault', 'op', 'attempt'],
    );
    // Retried until the SDK's retries ran out, it is only unanswered.
    for (let i = 0; i < 8; i++)
      history.push({
        kind: 'attempt',
        seq: 30,
        method: 'POST',
        path: `/api/v1/wallets/${W}/withdraw`,
        at: 10_100,
        end: 10_200,
        status: 503,
      });
    assert.deepEqual(check(history, facts), []);
  });

  test('card network: a capture made twice, and an authorization approved twice for one answered', () => {
    const { history, facts } = clean();
    facts.cardCaptures.push({ payment_id: P2, amount: 150, success: true });
    facts.entries.push({ id: 'e-capture-2b', kind: 'payment.capture', ref_type: 'payment', ref_id: P2 });
    facts.postings.push(
      { entry_id: 'e-capture-2b', account_id: 'card-network', amount: 150 },
      { entry_id: 'e-capture-2b', account_id: 'gifts', amount: -150 },
    );
    facts.accounts[4]!.balance += 150;
    facts.accounts[5]!.balance -= 150;
    const anomalies = check(history, facts);
    assert.deepEqual(anomalies.map((a) => a.rule).sort(), [
      'at most one effect per operation',
      'card network: captured once',
      'card network: captured once',
    ]);
    const doubled = anomalies.find((a) => a.rule === 'at most one effect per operation')!;
    assert.match(doubled.detail, /^capture\|payment-2: 2 in the database/);
    assert.deepEqual(doubled.seqs, [13, 14], 'the refused over-capture and the answered one');

    const second = clean();
    second.facts.cardAuthorizations.push({ payment_id: P2, status: 'Approved', amount: 200 });
    assert.deepEqual(rules(second.history, second.facts).sort(), [
      'at most one effect per operation',
      'card network: authorized is what it approved',
    ]);
  });

  test('card network: an authorize-and-capture answered 200 that left nothing; a capture over what was authorized', () => {
    const { history, facts } = clean();
    facts.cardAuthorizations = facts.cardAuthorizations.filter((a) => a.payment_id !== P3);
    facts.cardCaptures = facts.cardCaptures.filter((c) => c.payment_id !== P3);
    facts.entries = facts.entries.filter((e) => e.ref_id !== P3);
    facts.postings = facts.postings.filter((p) => !p.entry_id.endsWith('-3'));
    facts.payments[2] = { ...facts.payments[2]!, status: 'Created', captured_amount: 0, network_authorized: 0 };
    facts.accounts[4]!.balance -= 400;
    facts.accounts[6]!.balance += 400;
    // Both of its effects are missing: the authorization and the capture.
    assert.deepEqual(rules(history, facts), ['answered 2xx means applied', 'answered 2xx means applied']);

    const over = clean();
    over.facts.cardCaptures[1]!.amount = 250;
    over.facts.payments[1]!.captured_amount = 250;
    assert.deepEqual(rules(over.history, over.facts), ['card network: captures at most what it authorized']);
  });

  test('a gift hold both released and captured, and a gift holding more than its open payments', () => {
    const { history, facts } = clean();
    facts.entries.push({ id: 'e-release-3', kind: 'gift.release', ref_type: 'payment', ref_id: P3 });
    facts.postings.push(
      { entry_id: 'e-release-3', account_id: 'gift-reserved', amount: -400 },
      { entry_id: 'e-release-3', account_id: 'gift-available', amount: 400 },
    );
    facts.accounts[6]!.balance += 400;
    facts.accounts[7] = { ...facts.accounts[7]!, balance: -400, allow_negative: true };
    assert.deepEqual(rules(history, facts).sort(), [
      'reservation released or captured, never both',
      'reserved money is what open payments hold',
    ]);
  });

  test('counterparties: a payout made twice, an incoming payment recorded twice, a return applied twice, a completion that did not happen', () => {
    const { history, facts } = clean();
    facts.payouts.push({ id: 'payout-3', counterparty_id: CP, amount: 2_000, status: 'Sent' });
    facts.entries.push({
      id: 'e-payout-3',
      kind: 'counterparty.payout',
      ref_type: 'counterparty_payout',
      ref_id: 'payout-3',
    });
    facts.postings.push(
      { entry_id: 'e-payout-3', account_id: 'cp-available', amount: -2_000 },
      { entry_id: 'e-payout-3', account_id: 'bank', amount: 2_000 },
    );
    facts.accounts[8]!.balance -= 2_000;
    facts.accounts[0]!.balance += 2_000;
    assert.deepEqual(rules(history, facts), ['at most one effect per operation']);

    const incoming = clean();
    incoming.facts.incomingPayments.push({ id: 'incoming-2', counterparty_id: CP, amount: 5_000 });
    assert.deepEqual(rules(incoming.history, incoming.facts), ['at most one effect per operation']);

    const returned = clean();
    returned.facts.entries.push({
      id: 'e-return-1b',
      kind: 'counterparty.payout.return',
      ref_type: 'counterparty_payout',
      ref_id: 'payout-1',
    });
    returned.facts.postings.push(
      { entry_id: 'e-return-1b', account_id: 'bank', amount: -1_000 },
      { entry_id: 'e-return-1b', account_id: 'cp-available', amount: 1_000 },
    );
    returned.facts.accounts[8]!.balance += 1_000;
    returned.facts.accounts[0]!.balance -= 1_000;
    assert.deepEqual(rules(returned.history, returned.facts).sort(), [
      'a returned payout comes back once',
      'at most one effect per operation',
    ]);

    const completed = clean();
    completed.facts.payouts[1]!.status = 'Sent';
    assert.deepEqual(rules(completed.history, completed.facts), ['answered 2xx means applied']);
  });

  test('counterparties: a payout without its ledger entry, and a balance below zero', () => {
    const { history, facts } = clean();
    facts.entries = facts.entries.filter((e) => e.id !== 'e-payout-2');
    facts.postings = facts.postings.filter((p) => p.entry_id !== 'e-payout-2');
    facts.accounts[8]!.balance += 2_000;
    facts.accounts[0]!.balance -= 2_000;
    assert.deepEqual(rules(history, facts), ['a payout leaves the balance once']);

    // The payout of 2,000 took 6,000 (and the answered payout of 2,000 is not in the database).
    const negative = clean();
    negative.facts.postings.find((p) => p.entry_id === 'e-payout-2' && p.account_id === 'cp-available')!.amount =
      -6_000;
    negative.facts.postings.find((p) => p.entry_id === 'e-payout-2' && p.account_id === 'bank')!.amount = 6_000;
    negative.facts.accounts[8]!.balance = -1_000;
    negative.facts.accounts[0]!.balance += 4_000;
    negative.facts.payouts[1]!.amount = 6_000;
    assert.deepEqual(rules(negative.history, negative.facts).sort(), [
      'answered 2xx means applied',
      'no forbidden negative',
    ]);
  });

  test('a process left stuck', () => {
    const { history, facts } = clean();
    facts.stuck.push('coffer1 did not answer /health');
    assert.deepEqual(rules(history, facts), ['nothing stuck after faults']);
  });
});
