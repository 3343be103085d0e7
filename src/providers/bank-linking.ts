// Port to the bank-linking provider (Plaid in production). Both calls carry Coffer's linked
// account id as the provider's idempotency key. The sandbox links made-up accounts at once and
// accepts every deactivation.
import { randomBytes, randomInt } from 'node:crypto';

export interface LinkedAccountData {
  provider: string;
  externalId: string;
  accountType: 'checking' | 'savings';
  accountName: string;
  accountMask: string;
  institutionName: string;
  institutionId: string;
}

export interface LinkRequest {
  /** Coffer's id for the new linked account: the provider's idempotency key. */
  reference: string;
  userId: string;
  /** What the user's linking flow with the provider produced (live); the sandbox needs none. */
  token?: string;
  institutionName?: string;
  accountType?: 'checking' | 'savings';
  accountMask?: string;
}

export interface BankLinkingProvider {
  linkAccount(opts: LinkRequest): Promise<LinkedAccountData>;
  /** Deactivates the account with the provider; called after it is disconnected here. */
  deactivateAccount(opts: { reference: string; externalId: string }): Promise<void>;
}

export class SandboxBankLinking implements BankLinkingProvider {
  readonly deactivated = new Set<string>();

  async linkAccount(opts: LinkRequest): Promise<LinkedAccountData> {
    const accountType = opts.accountType ?? 'checking';
    const institutionName = opts.institutionName ?? 'Sandbox Bank';
    return {
      provider: 'Plaid',
      externalId: `acc_${randomBytes(12).toString('hex')}`,
      accountType,
      accountName: `${institutionName} ${accountType === 'checking' ? 'Checking' : 'Savings'}`,
      accountMask: opts.accountMask ?? String(randomInt(0, 10_000)).padStart(4, '0'),
      institutionName,
      institutionId: `ins_${institutionName
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '_')
        .slice(0, 40)}`,
    };
  }

  async deactivateAccount(opts: { externalId: string }): Promise<void> {
    this.deactivated.add(opts.externalId);
  }
}
