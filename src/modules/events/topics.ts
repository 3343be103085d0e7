// Every event topic Coffer sends. A webhook subscribes to some of them, or to ["*"].

export const TOPICS = [
  // KYC (spec "Events"): included[0] is the User.
  'ApplicationApproved',
  'ApplicationAwaitingDocuments',
  'ApplicationDeclined',
  // KYC in Accrue's topics (every change of status; modules/kyc/events.ts): included[0] is the Kyc resource.
  'KycCreated',
  'KycPending',
  'KycManualReview',
  'KycAwaitingDocuments',
  'KycApproved',
  'KycDeclined',
  // Identity verification: a verified phone or e-mail change.
  'UserProfileUpdated',
  // Deposits.
  'TransactionCleared',
  'TransactionFailed',
  // Checkout.
  'PaymentIntentCreated',
  'PaymentIntentUpdated',
  'PaymentCreated',
  'PaymentUpdated',
  'PaymentCaptured',
  'RefundCreated',
  // Counterparties (Accrue's names): money arriving on a counterparty's deposit account, and
  // each step of a payout to its bank account.
  'CounterpartyIncomingPayment',
  'CounterpartyPayoutCreated',
  'CounterpartyPayoutSent',
  'CounterpartyPayoutCompleted',
  'CounterpartyPayoutReturned',
  // Rewards: issued; then claimed, changed, cancelled or expired.
  'RewardCreated',
  'RewardUpdated',
] as const;

export type Topic = (typeof TOPICS)[number];

/** Sent only to the webhook it was requested for (POST /webhooks/{id}/test), never subscribed to. */
export const TEST_TOPIC = 'WebhookTest';

export type AnyTopic = Topic | typeof TEST_TOPIC;
