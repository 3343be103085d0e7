// JSON:API 1.1 request documents as JSON:API libraries send them (docs/adr/0001-spec-then-accrue.md): the top-level
// `jsonapi`, `meta` and `links` members are accepted and ignored, and a PATCH body may name its
// resource in `data.id`, which must be the resource the URL names (else 409 Conflict, nothing
// changed). Every route with a body gets this from createServer: an onRoute hook documents the
// members in the route's body schema (so the OpenAPI document and the SDK show them), and a
// preValidation hook takes them out of the body before the route's own strict validation, which
// still refuses anything else it does not know.
import type { FastifyRequest, RouteOptions } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { apiError } from './errors.ts';
import { responses } from './schemas.ts';

/** Per-route options, in the route's `config.jsonApi`. */
interface JsonApiRouteOptions {
  /**
   * The body may also be a bare resource object (`{type, attributes}` without `data`, as the
   * spec samples the attached-profile update): it is wrapped in `data` before validation, and
   * `req.jsonApi.bare` tells the route to point its errors into the bare shape.
   */
  bareResource?: boolean;
  /**
   * The route checks a PATCH's `data.id` itself (`req.jsonApi.id`), because the URL's
   * parameter is not always the resource's id (a reference that resolves to a user). By
   * default `data.id` must equal the route's last path parameter.
   */
  idCheckedByRoute?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    jsonApi?: JsonApiRouteOptions;
  }
  interface FastifyRequest {
    /** What the JSON:API request hook took out of the body. */
    jsonApi?: { bare: boolean; id?: string };
  }
}

/** Top-level members of a request document that carry nothing a route acts on. */
const IGNORED_MEMBERS = ['jsonapi', 'meta', 'links'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const IgnoredMembers = {
  jsonapi: Type.Optional(
    Type.Object({}, { additionalProperties: true, description: 'The JSON:API object (accepted and ignored)' }),
  ),
  meta: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Accepted and ignored' })),
  links: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Accepted and ignored' })),
};
const ResourceId = Type.String({
  minLength: 1,
  maxLength: 255,
  description: "The resource's id: when present it must be the resource the URL names (409 Conflict otherwise)",
});

type Schema = TSchema & { properties?: Record<string, Schema>; anyOf?: Schema[]; required?: string[] };

/** The body schema as documented: the ignored members at the top level, `data.id` on a PATCH. */
function documentedBody(body: Schema, patch: boolean, bareResource: boolean): Schema {
  if (body.anyOf) return { ...body, anyOf: body.anyOf.map((b) => documentedBody(b, patch, bareResource)) };
  const props = body.properties;
  if (!props) return body;
  if (props.data) {
    const data =
      patch && props.data.properties && !props.data.properties.id
        ? { ...props.data, properties: { id: ResourceId, ...props.data.properties } }
        : props.data;
    return { ...body, properties: { ...props, data, ...IgnoredMembers } };
  }
  // A bare resource object: its `id` sits beside `type`.
  if (bareResource && patch && props.type && !props.id) return { ...body, properties: { id: ResourceId, ...props } };
  return body;
}

/** onRoute hook: documents the accepted members in every JSON:API request body schema, and a PATCH's 409. */
export function documentJsonApiRequest(route: RouteOptions): void {
  const schema = route.schema as { body?: Schema; response?: Record<number, unknown> } | undefined;
  if (!schema?.body) return;
  const patch = [route.method].flat().includes('PATCH');
  schema.body = documentedBody(schema.body, patch, route.config?.jsonApi?.bareResource === true);
  if (patch && schema.response && !schema.response[409]) Object.assign(schema.response, responses({}, [409]));
}

/** preValidation hook: takes the accepted members out of the body and checks a PATCH's `data.id`. */
export function normalizeJsonApiRequest(req: FastifyRequest): void {
  if (!isObject(req.body)) return;
  const options = req.routeOptions.config.jsonApi ?? {};
  let body = req.body;
  const bare = options.bareResource === true && !('data' in body);
  if (bare) body = req.body = { data: body };
  req.jsonApi = { bare };
  for (const member of IGNORED_MEMBERS) {
    if (!(member in body)) continue;
    if (!isObject(body[member]))
      throw apiError('ValidationError', `\`${member}\` must be an object.`, { pointer: `/${member}` });
    delete body[member];
  }
  if (req.method !== 'PATCH' || !isObject(body.data) || !('id' in body.data)) return;
  const id = body.data.id;
  if (typeof id !== 'string' || id.length === 0)
    throw apiError('ValidationError', '`id` must be a non-empty string.', { pointer: '/data/id' });
  delete body.data.id;
  req.jsonApi.id = id;
  if (options.idCheckedByRoute) return;
  const params = Object.values((req.params ?? {}) as Record<string, string>);
  const named = params.at(-1);
  if (id !== named) throw resourceIdConflict(id, named ?? '');
}

/** 409: the body's `data.id` names another resource than the URL. */
export function resourceIdConflict(id: string, named: string) {
  return apiError(
    'Conflict',
    `The body's id ${JSON.stringify(id)} is not the resource this URL names (${JSON.stringify(named)}); nothing was changed.`,
    {
      pointer: '/data/id',
    },
  );
}

/** Error pointers into a wrapped bare body lose their `/data` prefix (validation errors too). */
export function unwrapBarePointers(err: unknown, req: FastifyRequest): void {
  if (!req.jsonApi?.bare) return;
  const items = (err as { items?: { source?: { pointer?: string } }[] }).items;
  if (Array.isArray(items))
    for (const i of items) if (i.source?.pointer?.startsWith('/data')) i.source.pointer = i.source.pointer.slice(5);
  const v = (err as { validation?: { instancePath: string }[] }).validation;
  if (Array.isArray(v))
    for (const e of v) if (e.instancePath.startsWith('/data')) e.instancePath = e.instancePath.slice(5);
}
