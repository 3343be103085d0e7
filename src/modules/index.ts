// Every module, in the order its schemas and routes are registered on the API listener.
// A new module adds its module.ts and one line here.
import { users } from './users/module.ts';
import { kyc } from './kyc/module.ts';
import { identity } from './identity/module.ts';
import { linkedAccounts } from './linked-accounts/module.ts';
import { webhooks } from './webhooks/module.ts';
import { events } from './events/module.ts';
import { wallets } from './wallets/module.ts';
import { counterparties } from './counterparties/module.ts';
import { transactions } from './transactions/module.ts';
import { withdrawals } from './withdrawals/module.ts';
import { rewards } from './rewards/module.ts';
import { gifts } from './gifts/module.ts';
import { paymentIntents } from './payment-intents/module.ts';
import { payments } from './payments/module.ts';
import { widgets } from './widgets/module.ts';
import { counterpartyTransfers } from './counterparty-transfers/module.ts';
import { externalTransactions } from './external-transactions/module.ts';
import { sweepstakes } from './sweepstakes/module.ts';
import { bankTransfers } from './bank-transfers/module.ts';
import { requestLog } from './request-log/module.ts';
import type { Module } from './module.ts';

export const MODULES: readonly Module[] = [
  users,
  kyc,
  identity,
  linkedAccounts,
  webhooks,
  events,
  wallets,
  counterparties,
  transactions,
  withdrawals,
  rewards,
  gifts,
  paymentIntents,
  payments,
  widgets,
  counterpartyTransfers,
  externalTransactions,
  sweepstakes,
  bankTransfers,
  requestLog,
];
