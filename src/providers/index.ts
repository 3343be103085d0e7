// The outside world, behind ports. Each call to a provider runs outside any database
// transaction, and its outcome is recorded, so a retry or a crash never repeats it.
import type { BankLinkingProvider } from './bank-linking.ts';
import { SandboxBankLinking } from './bank-linking.ts';
import { SandboxBankTransfers, type BankTransferProvider } from './bank-transfers.ts';
import { SandboxCardIssuer, type CardIssuer } from './card-issuing.ts';
import { SandboxCardProcessor, type CardProcessor } from './card-processor.ts';
import type { Db } from '../db/open.ts';
import type { KycProvider } from './kyc.ts';
import { SandboxKyc } from './kyc.ts';

export interface Providers {
  bankLinking: BankLinkingProvider;
  bankTransfers: BankTransferProvider;
  cardProcessor: CardProcessor;
  cardIssuer: CardIssuer;
  kyc: KycProvider;
}

/** The sandbox providers. Live deployments plug real ones in here. */
/** The sandbox's providers; `cardKey` keys the sandbox card issuer. */
export function sandboxProviders(db: Db | undefined, cardKey: Buffer): Providers {
  return {
    bankLinking: new SandboxBankLinking(),
    bankTransfers: new SandboxBankTransfers(),
    cardProcessor: db ? new SandboxCardProcessor(db) : unavailableProcessor,
    cardIssuer: new SandboxCardIssuer(cardKey),
    kyc: new SandboxKyc(),
  };
}

const unavailableProcessor: CardProcessor = {
  authorize: () => Promise.reject(new Error('no card processor configured')),
};
