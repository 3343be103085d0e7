// What every area's helpers share: the typed client, the JSON:API body, and `unwrap`.
import type { Client } from 'openapi-fetch';
import { CofferError, type ApiErrorObject } from '../errors.ts';
import type { operations, paths } from '../schema.ts';

export const JSONAPI = 'application/vnd.api+json';

export type Api = Client<paths>;

/** The attributes a `method` to `P` takes (`data.attributes` of its JSON:API body). */
export type Attributes<P extends keyof paths, M extends 'post' | 'patch' = 'post'> = paths[P] extends {
  [K in M]: { requestBody?: { content: { [JSONAPI]: infer B } } };
}
  ? Extract<B, { data: unknown }> extends { data: { attributes?: infer A } }
    ? A
    : never
  : never;

/** Attributes whose idempotency key the client makes when it is left out (retry.ts). */
export type KeyOptional<A> = A extends { idempotencyKey: string }
  ? Omit<A, 'idempotencyKey'> & { idempotencyKey?: string }
  : A;

/** The query parameters of operation `O`. */
export type Query<O extends keyof operations> = NonNullable<
  operations[O]['parameters'] extends { query?: infer Q } ? Q : never
>;

export const body = <T extends string, A>(type: T, attributes: A) => ({ data: { type, attributes } });

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a 2xx answer; a CofferError for anything else. */
export async function unwrap<T>(p: Promise<Result<T>>): Promise<NonNullable<T>> {
  const r = await p;
  if (r.response.ok) return r.data as NonNullable<T>;
  const errors = (r.error as { errors?: ApiErrorObject[] } | undefined)?.errors ?? [];
  throw new CofferError(r.response.status, errors, r.response.headers.get('x-request-id') ?? undefined);
}
