// Errors as values to branch on: every non-2xx answer becomes a CofferError whose `code` is one
// of the server's catalogue (codes.ts is generated from it with the OpenAPI types).
import type { ErrorCode } from './codes.ts';

export interface ApiErrorObject {
  status: string;
  id?: string;
  code: ErrorCode | (string & {});
  title?: string;
  detail?: string;
  source?: { pointer?: string; parameter?: string; header?: string };
  meta?: { environment?: string; timestamp?: string; path?: string; retryAfter?: string; paymentId?: string };
}

export class CofferError extends Error {
  /** The HTTP status, or 0 when no answer arrived (network error or timeout). */
  readonly status: number;
  /** The first error's code: branch on this. */
  readonly code: ErrorCode | 'NetworkError' | 'Timeout' | (string & {});
  /** Every error the server identified. */
  readonly errors: ApiErrorObject[];
  readonly requestId: string | undefined;

  constructor(status: number, errors: ApiErrorObject[], requestId?: string, cause?: unknown) {
    const first = errors[0];
    super(first ? `${status} ${first.code}: ${first.detail ?? first.title ?? ''}` : `HTTP ${status}`, { cause });
    this.name = 'CofferError';
    this.status = status;
    this.code = first?.code ?? `HTTP${status}`;
    this.errors = errors;
    this.requestId = requestId;
  }
}
