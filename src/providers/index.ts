// The outside world, behind ports. Each call to a provider runs outside any database
// transaction, and its outcome is recorded, so a retry or a crash never repeats it.
import type { BankLinkingProvider } from './bank-linking.ts';
import { SandboxBankLinking } from './bank-linking.ts';
import { SandboxBankTransfers, type BankTransferProvider } from './bank-transfers.ts';
import type { KycProvider } from './kyc.ts';
import { SandboxKyc } from './kyc.ts';

export interface Providers {
  bankLinking: BankLinkingProvider;
  bankTransfers: BankTransferProvider;
  kyc: KycProvider;
}

/** The sandbox providers. Live deployments plug real ones in here. */
export function sandboxProviders(): Providers {
  return { bankLinking: new SandboxBankLinking(), bankTransfers: new SandboxBankTransfers(), kyc: new SandboxKyc() };
}
