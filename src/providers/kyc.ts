// Port to the KYC provider. An application is sent once (its id is the provider's idempotency
// key) and the provider's answer is asked for until it decides (decisions §5). The sandbox
// decides at once by the applicant's e-mail domain; the application is sent a short while
// after submission, so the decision arrives asynchronously as a real provider's would.

export type KycDecision = 'Approved' | 'AwaitingDocuments' | 'Declined';
/** The provider's answer so far. */
export type KycAnswer = 'Pending' | KycDecision;

export interface KycSubmission {
  /** Coffer's application id: the provider's idempotency key. */
  reference: string;
  userId: string;
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  email: string;
  address: { street: string; street2?: string; city: string; state: string; postalCode: string; country: string };
}

export interface KycProvider {
  /** How long after submission the application is first sent to the provider. */
  decisionDelayMs: number;
  /** Sends the application; a repeated reference is the same application. */
  submit(application: KycSubmission): Promise<KycAnswer>;
  /** The provider's answer for an application it already has. */
  status(application: KycSubmission): Promise<KycAnswer>;
}

export class SandboxKyc implements KycProvider {
  decisionDelayMs = 500;

  async submit(application: KycSubmission): Promise<KycAnswer> {
    return this.status(application);
  }

  async status(application: KycSubmission): Promise<KycAnswer> {
    return sandboxKycDecision(application.email);
  }
}

/** The sandbox's decision (also the reference adapter's): by the applicant's e-mail domain. */
export function sandboxKycDecision(email: string): KycDecision {
  const e = email.toLowerCase();
  if (e.endsWith('@highrisk.test')) return 'AwaitingDocuments';
  if (e.endsWith('@declined.test')) return 'Declined';
  return 'Approved';
}
