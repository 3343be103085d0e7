// Port to the KYC provider. An application is sent once (its id is the provider's idempotency
// key) and the provider's answer is asked for until it decides (docs/identity.md#kyc-in-detail, docs/adr/0001-spec-then-accrue.md). When the
// provider wants documents (AwaitingDocuments) or a closer look (ManualReview), Coffer asks it
// for a link where the user uploads them, and reports once (keyed) that the user has finished;
// the provider's review then decides. The sandbox decides at once by the applicant's e-mail
// address; the application is sent a short while after submission, so the decision arrives
// asynchronously as a real provider's would.

/** What the provider may answer about an application: undecided, or where it stands. */
export const KYC_ANSWERS = ['Pending', 'Approved', 'AwaitingDocuments', 'ManualReview', 'Denied'] as const;
export type KycAnswer = (typeof KYC_ANSWERS)[number];

export interface KycSubmission {
  /** Coffer's application id: the provider's idempotency key. */
  reference: string;
  userId: string;
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  email: string;
  address: { street: string; street2?: string; city: string; state: string; postalCode: string; country: string };
  phone?: string;
  ipAddress?: string;
  /** When the user last finished uploading documents (the sandbox decides on them; an adapter knows it from the report). */
  documentsSubmittedAt?: string;
}

export interface DocumentLinkRequest {
  /** Coffer's id of the link: the provider's idempotency key. */
  reference: string;
  /** The application the documents are for. */
  application: string;
  userId: string;
  /** Where the provider's page sends the user when they are done. */
  redirectUrl: string;
}

export interface DocumentsReport {
  /** `{applicationId}:documents:{epoch ms of the completion}`: the provider's idempotency key. */
  reference: string;
  application: KycSubmission;
}

export interface KycProvider {
  /** How long after submission (or after documents) the application is sent to the provider. */
  decisionDelayMs: number;
  /** Sends the application; a repeated reference is the same application. */
  submit(application: KycSubmission): Promise<KycAnswer>;
  /** The provider's answer for an application it already has. */
  status(application: KycSubmission): Promise<KycAnswer>;
  /** A page of the provider's where the user uploads identity documents. */
  createDocumentLink(request: DocumentLinkRequest): Promise<{ url: string }>;
  /** Tells the provider the user has finished uploading; answers where the application stands. */
  submitDocuments(report: DocumentsReport): Promise<KycAnswer>;
}

export class SandboxKyc implements KycProvider {
  decisionDelayMs = 500;

  /** `payUrl`: the widget host, which serves the sandbox's document page (modules/kyc/portal.ts). */
  constructor(private readonly payUrl: string) {}

  async submit(application: KycSubmission): Promise<KycAnswer> {
    return this.status(application);
  }

  async status(application: KycSubmission): Promise<KycAnswer> {
    return sandboxKycDecision(application.email, application.documentsSubmittedAt !== undefined);
  }

  async createDocumentLink(request: DocumentLinkRequest): Promise<{ url: string }> {
    return { url: sandboxDocumentPageUrl(this.payUrl, request.reference) };
  }

  async submitDocuments(report: DocumentsReport): Promise<KycAnswer> {
    return sandboxKycDecision(report.application.email, true);
  }
}

/** The sandbox's document page for a link (served on the widget host). */
export function sandboxDocumentPageUrl(payUrl: string, linkId: string): string {
  return `${payUrl}/kyc/documents/${linkId}`;
}

/**
 * The sandbox's decision (also the reference adapter's), by the applicant's e-mail address:
 * Accrue's sandbox domains (`@lowrisk.com` approved, `@highrisk.com` manual review,
 * `@veryhighrisk.com` denied) and Coffer's (`@highrisk.test` documents requested,
 * `@declined.test` denied); any other is approved. After documents, the review approves,
 * unless the address's local part ends in `+denied`.
 */
export function sandboxKycDecision(email: string, afterDocuments = false): Exclude<KycAnswer, 'Pending'> {
  const e = email.toLowerCase();
  const at = e.lastIndexOf('@');
  const [local, domain] = [e.slice(0, at), e.slice(at + 1)];
  if (domain === 'veryhighrisk.com' || domain === 'declined.test') return 'Denied';
  if (afterDocuments) return local.endsWith('+denied') ? 'Denied' : 'Approved';
  if (domain === 'highrisk.com') return 'ManualReview';
  if (domain === 'highrisk.test') return 'AwaitingDocuments';
  return 'Approved';
}
