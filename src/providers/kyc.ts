// Port to the KYC provider. The sandbox decides by the applicant's e-mail domain, a short
// while after submission, as a real provider would answer asynchronously (decisions §5).

export type KycDecision = 'Approved' | 'AwaitingDocuments' | 'Declined';

export interface KycProvider {
  /** How long after submission the provider's decision arrives. */
  decisionDelayMs: number;
  decide(applicant: { email: string }): Promise<KycDecision>;
}

export class SandboxKyc implements KycProvider {
  decisionDelayMs = 500;

  async decide(applicant: { email: string }): Promise<KycDecision> {
    const email = applicant.email.toLowerCase();
    if (email.endsWith('@highrisk.test')) return 'AwaitingDocuments';
    if (email.endsWith('@declined.test')) return 'Declined';
    return 'Approved';
  }
}
