// The KYC port over the adapter protocol: the application is sent once, then its answer is
// asked for until the provider decides (modules/kyc's decision job paces the asking).
import { HttpPort } from './client.ts';
import type { KycAnswer, KycProvider, KycSubmission } from '../kyc.ts';

export class HttpKyc extends HttpPort implements KycProvider {
  /** Sent at the decision job's next run. */
  decisionDelayMs = 0;

  async submit(application: KycSubmission): Promise<KycAnswer> {
    return (await this.adapter.call('submitKycApplication', { type: 'KycApplication', ...application })).status;
  }

  async status(application: KycSubmission): Promise<KycAnswer> {
    return (await this.adapter.call('getKycApplication', { reference: application.reference })).status;
  }
}
