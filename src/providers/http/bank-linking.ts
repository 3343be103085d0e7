// The bank-linking port over the adapter protocol.
import { HttpPort } from './client.ts';
import type { BankLinkingProvider, LinkedAccountData, LinkRequest } from '../bank-linking.ts';

export class HttpBankLinking extends HttpPort implements BankLinkingProvider {
  async linkAccount(r: LinkRequest): Promise<LinkedAccountData> {
    const { reference: _, ...account } = await this.adapter.call('linkAccount', { type: 'LinkAccount', ...r });
    return account;
  }

  async deactivateAccount(r: { reference: string; externalId: string }): Promise<void> {
    await this.adapter.call('deactivateAccount', { type: 'DeactivateAccount', ...r });
  }
}
