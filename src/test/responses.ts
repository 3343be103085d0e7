// Every response the API listener gives during the suite is recorded here (harness.ts), and
// openapi-responses.ts checks them all against the served OpenAPI document at the end.
export interface RecordedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
  body: string;
}

export const recorded: RecordedResponse[] = [];
