// The outside world, behind ports. Each call to a provider runs outside any database
// transaction, and its outcome is recorded, so a retry or a crash never repeats it. A port is
// served by the operator's adapter when its URL is configured (providers/http, docs/providers.md)
// and by the sandbox's own implementation otherwise; live has an adapter for every port or does
// not start (config.ts), and createProviders refuses anything else there.
import type { BankLinkingProvider } from './bank-linking.ts';
import { SandboxBankLinking } from './bank-linking.ts';
import { SandboxBankTransfers, type BankTransferProvider } from './bank-transfers.ts';
import { SandboxCardIssuer, type CardIssuer } from './card-issuing.ts';
import { SandboxCardProcessor, type CardProcessor } from './card-processor.ts';
import { PROVIDER_PORTS, PROVIDER_URL_VARIABLES, type Config, type ProviderConfig } from '../config.ts';
import type { Db } from '../db/open.ts';
import { HttpBankLinking } from './http/bank-linking.ts';
import { HttpBankTransfers } from './http/bank-transfers.ts';
import { HttpCardIssuer } from './http/card-issuing.ts';
import { HttpCardProcessor } from './http/card-processor.ts';
import { HttpPort } from './http/client.ts';
import { HttpKyc } from './http/kyc.ts';
import type { KycProvider } from './kyc.ts';
import { SandboxKyc } from './kyc.ts';

export interface Providers {
  bankLinking: BankLinkingProvider;
  bankTransfers: BankTransferProvider;
  cardProcessor: CardProcessor;
  cardIssuer: CardIssuer;
  kyc: KycProvider;
}

/** The sandbox's providers; `cardKey` keys the sandbox card issuer, `payUrl` is the widget host (the sandbox's KYC document page). */
function sandboxProviders(db: Db | undefined, cardKey: Buffer, payUrl: string): Providers {
  return {
    bankLinking: new SandboxBankLinking(),
    bankTransfers: new SandboxBankTransfers(),
    cardProcessor: db ? new SandboxCardProcessor(db) : unavailableProcessor,
    cardIssuer: new SandboxCardIssuer(cardKey),
    kyc: new SandboxKyc(payUrl),
  };
}

const unavailableProcessor: CardProcessor = {
  authorize: () => Promise.reject(new Error('no card processor configured')),
};

const HTTP_PORTS = {
  kyc: HttpKyc,
  bankLinking: HttpBankLinking,
  bankTransfers: HttpBankTransfers,
  cardIssuer: HttpCardIssuer,
  cardProcessor: HttpCardProcessor,
};

/** The operator's adapters, for the ports that have a URL. */
function httpProviders(c: ProviderConfig): Partial<Providers> {
  const out: Partial<Record<keyof Providers, HttpPort>> = {};
  for (const port of PROVIDER_PORTS) {
    const baseUrl = c.urls[port];
    if (baseUrl)
      out[port] = new HTTP_PORTS[port]({ port, baseUrl, signingSecret: c.signingSecret!, timeoutMs: c.timeoutMs });
  }
  return out as Partial<Providers>;
}

/**
 * The context's providers: each port's adapter where one is configured, else (sandbox only) the
 * sandbox's; `overrides` replace some (tests). Live gets adapters only: a sandbox provider
 * there approves anyone and moves no money, so it is refused even if configuration let one through.
 */
export function createProviders(config: Config, db: Db | undefined, overrides: Partial<Providers> = {}): Providers {
  const live = config.environment === 'live';
  const providers = {
    ...(live ? {} : sandboxProviders(db, config.cardEncryptionKey!, config.listeners.pay.publicUrl)),
    ...httpProviders(config.providers),
    ...overrides,
  } as Providers;
  if (live) {
    for (const port of PROVIDER_PORTS) {
      if (!(providers[port] instanceof HttpPort))
        throw new Error(`live never runs a sandbox provider: ${port} has no adapter (${PROVIDER_URL_VARIABLES[port]})`);
    }
  }
  return providers;
}

/** Closes the adapters' connection pools. */
export async function closeProviders(p: Providers): Promise<void> {
  await Promise.all(Object.values(p).map((x) => (x instanceof HttpPort ? x.close() : undefined)));
}
