// The KYC port over the adapter protocol: the application is sent once, then its answer is
// asked for until the provider decides (modules/kyc's decision job paces the asking); document
// links are asked for when a merchant needs one, and a finished upload is reported once.
import { HttpPort } from './client.ts';
import type { DocumentLinkRequest, DocumentsReport, KycAnswer, KycProvider, KycSubmission } from '../kyc.ts';

export class HttpKyc extends HttpPort implements KycProvider {
  /** Sent at the decision job's next run. */
  decisionDelayMs = 0;

  async submit(application: KycSubmission): Promise<KycAnswer> {
    // The adapter keeps its own record of documents (the report); the sandbox-only hint stays here.
    const { documentsSubmittedAt: _documents, ...sent } = application;
    return (await this.adapter.call('submitKycApplication', { type: 'KycApplication', ...sent })).status;
  }

  async status(application: KycSubmission): Promise<KycAnswer> {
    return (await this.adapter.call('getKycApplication', { reference: application.reference })).status;
  }

  async createDocumentLink(request: DocumentLinkRequest): Promise<{ url: string }> {
    return { url: (await this.adapter.call('createKycDocumentLink', { type: 'KycDocumentLink', ...request })).url };
  }

  async submitDocuments(report: DocumentsReport): Promise<KycAnswer> {
    return (
      await this.adapter.call('submitKycDocuments', {
        type: 'KycDocuments',
        reference: report.reference,
        application: report.application.reference,
      })
    ).status;
  }
}
