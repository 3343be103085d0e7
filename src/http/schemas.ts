// Schema builders shared by every route. One TypeBox schema per route gives request
// validation, handler types, the response serializer (undeclared fields are never sent) and
// the OpenAPI document.
import { Type, type Static, type TObject, type TProperties, type TSchema } from 'typebox';
import { PATTERN_HINT } from './validation.ts';

export const JSONAPI = 'application/vnd.api+json';

/** Largest amount accepted anywhere: 10^12 cents. Sums of such amounts stay far below 2^53. */
export const MAX_CENTS = 1_000_000_000_000;

export const Uuid = (opts: Record<string, unknown> = {}) => Type.String({ format: 'uuid', ...opts });
export const Timestamp = (opts: Record<string, unknown> = {}) => Type.String({ format: 'date-time', ...opts });
export const Cents = (opts: Record<string, unknown> = {}) =>
  Type.Integer({ minimum: 0, maximum: MAX_CENTS, description: 'Integer cents', ...opts });
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const E164 = (opts: Record<string, unknown> = {}) =>
  Type.String({
    pattern: '^\\+[1-9][0-9]{1,14}$',
    [PATTERN_HINT]: 'an E.164 phone number such as +14155550123',
    examples: ['+14155550123'],
    ...opts,
  });
export const Email = (opts: Record<string, unknown> = {}) =>
  Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'], ...opts });
/** A free text field with sane bounds. */
export const Text = (max = 255, opts: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, maxLength: max, ...opts });

/** `{ data: { type, attributes } }`: the body of a JSON:API create or update request. */
export function requestBody<A extends TObject>(
  type: string | string[],
  attributes: A,
  opts: { description?: string } = {},
) {
  const types = Array.isArray(type) ? type : [type];
  const typeSchema = types.length === 1 ? Type.Literal(types[0]!) : Type.Union(types.map((t) => Type.Literal(t)));
  return Type.Object(
    { data: Type.Object({ type: typeSchema, attributes }, { additionalProperties: false }) },
    { additionalProperties: false, ...opts },
  );
}

export const ResourceIdentifier = (type: string) => Type.Object({ type: Type.Literal(type), id: Type.String() });

/** A JSON:API resource object, registered as an OpenAPI component under `name`. */
export function resource<A extends TProperties, R extends TProperties = Record<never, never>>(
  name: string,
  type: string,
  attributes: A,
  extra: { relationships?: R; links?: TProperties; meta?: TProperties; description?: string } = {},
) {
  const props = {
    id: Type.String(),
    type: Type.Literal(type),
    attributes: Type.Object(attributes),
    ...(extra.relationships ? { relationships: Type.Object(extra.relationships) } : {}),
    ...(extra.links ? { links: Type.Object(extra.links) } : {}),
    ...(extra.meta ? { meta: Type.Optional(Type.Object(extra.meta)) } : {}),
  };
  return Type.Object(props, { $id: name, ...(extra.description ? { description: extra.description } : {}) });
}

/**
 * A reference to a registered component. TypeBox types `Ref` as unknown; keep the static type.
 */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: string }).$id;
  if (!id) throw new Error('ref() needs a schema with $id');
  return Type.Unsafe<Static<T>>(Type.Ref(id));
}

const PageMeta = Type.Object({ total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() });
const PageLinks = Type.Object({
  self: Type.String(),
  first: Type.String(),
  prev: Nullable(Type.String()),
  next: Nullable(Type.String()),
});

export function document<T extends TSchema>(data: T, included?: TSchema[]) {
  return Type.Object({
    data,
    ...(included && included.length > 0 ? { included: Type.Optional(Type.Array(union(included))) } : {}),
  });
}

export function listDocument<T extends TSchema>(item: T, included?: TSchema[]) {
  return Type.Object({
    data: Type.Array(item),
    meta: PageMeta,
    links: PageLinks,
    ...(included && included.length > 0 ? { included: Type.Optional(Type.Array(union(included))) } : {}),
  });
}

function union(schemas: TSchema[]): TSchema {
  return schemas.length === 1 ? schemas[0]! : Type.Union(schemas);
}

const ErrorObject = Type.Object(
  {
    status: Type.String({ examples: ['400'] }),
    id: Uuid(),
    code: Type.String({ examples: ['ValidationError'] }),
    title: Type.String(),
    detail: Type.String(),
    source: Type.Optional(
      Type.Object({
        pointer: Type.Optional(Type.String()),
        parameter: Type.Optional(Type.String()),
        header: Type.Optional(Type.String()),
      }),
    ),
    links: Type.Optional(
      Type.Object({
        about: Type.String({ format: 'uri', description: 'With `meta.existingId`: the existing resource' }),
      }),
    ),
    meta: Type.Object({
      environment: Type.Union([Type.Literal('sandbox'), Type.Literal('live')]),
      timestamp: Timestamp(),
      path: Type.String(),
      retryAfter: Type.Optional(Timestamp()),
      paymentId: Type.Optional(Type.String({ description: 'A declined authorization: the Failed payment' })),
      existingId: Type.Optional(
        Type.String({ description: 'A collision with a resource that exists (`UserAlreadyExists`, …): its id' }),
      ),
      traceId: Type.Optional(
        Type.String({
          description:
            "With tracing on (OTEL_EXPORTER_OTLP_ENDPOINT): the request's trace, to find it in the tracing backend",
        }),
      ),
    }),
  },
  { $id: 'Error' },
);

const ErrorDocument = Type.Object({ errors: Type.Array(ref(ErrorObject)) }, { $id: 'ErrorDocument' });

/** Schemas every listener registers so `$ref`s resolve (and become OpenAPI components). */
export const sharedSchemas: TSchema[] = [ErrorObject, ErrorDocument];

// ----- route schema helpers -------------------------------------------------------------

type ResponseMap = Record<number, TSchema | null>;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  400: 'Invalid request',
  401: 'Authentication failed',
  402: 'Payment failed',
  403: 'Permission denied',
  404: 'Not found',
  409: 'Conflict',
  413: 'Body too large',
  414: 'Path segment too long',
  415: 'Unsupported media type',
  429: 'Rate limit exceeded',
  503: 'Service unavailable; retry',
};

/**
 * Error statuses every authenticated API route can return (503: the database is unreachable).
 * 413 is added to every route with a body by createServer.
 */
export const COMMON_ERRORS = [400, 401, 403, 415, 429, 503] as const;

/**
 * Builds a route's `response` block with the JSON:API media type. `null` means no body (204).
 * Error statuses get the shared error document.
 */
export function responses(success: ResponseMap, errors: readonly number[] = []) {
  const out: Record<number, unknown> = {};
  for (const [code, schema] of Object.entries(success)) {
    const status = Number(code);
    out[status] =
      schema === null
        ? { description: STATUS_TEXT[status] ?? 'No content', type: 'null' }
        : { description: STATUS_TEXT[status] ?? 'OK', content: { [JSONAPI]: { schema } } };
  }
  for (const status of new Set(errors)) {
    out[status] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: { [JSONAPI]: { schema: ref(ErrorDocument) } },
    };
  }
  return out;
}

/** Path parameter schema for one or more UUID ids. */
export function idParams<K extends string>(...names: K[]) {
  const props = Object.fromEntries(names.map((n) => [n, Uuid()])) as { [P in K]: ReturnType<typeof Uuid> };
  return Type.Object(props, { additionalProperties: false });
}

/**
 * preValidation hook for routes whose body is optional: a missing body validates as `value`.
 * (Fastify validates a declared body even when none was sent.)
 */
export function defaultBody(value: unknown) {
  return async (req: { body: unknown }) => {
    if (req.body === undefined || req.body === null) req.body = structuredClone(value);
  };
}

/** A write's `idempotencyKey` attribute (src/http/idempotency.ts). */
export const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Reuse it for every retry of this one operation (UUID v4 recommended)',
});
