// Response serializers: Fastify's own (fast-json-stringify over the route's response schema and
// the shared ones), given the schemas with their nullable fields written as type arrays. A
// TypeBox Nullable is `anyOf: [X, null]`, and fast-json-stringify serializes an anyOf by running
// an Ajv validator of each branch against the value until one matches: a field of a payment
// intent page paid that for each of its eight nullable attributes, per row (about 4% of the
// server's CPU on a page of ten, CPU profile). `type: ['string', 'null']` is a typeof test. An
// enum of strings without a type gets `type: 'string'` too (otherwise it goes through
// JSON.stringify). Only the serializers see the rewritten schemas: request validation and the
// OpenAPI document keep the schemas as written.
import fastJsonStringify, { type Options } from 'fast-json-stringify';

type Schema = Record<string, unknown>;

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export function buildSerializer(externalSchemas?: unknown, serializerOpts?: Options) {
  const shared = externalSchemas ? (nullableAsTypes(externalSchemas) as Record<string, unknown>) : undefined;
  return ({ schema }: { schema?: unknown }): ((doc: unknown) => string) => {
    const own = nullableAsTypes(schema ?? {}) as Schema;
    // A route's schema with an $id is among the shared ones too; fast-json-stringify refuses a duplicate id.
    let schemas = shared;
    if (schemas && typeof own.$id === 'string' && own.$id in schemas) {
      schemas = { ...schemas };
      delete schemas[own.$id];
    }
    return fastJsonStringify(own, { ...serializerOpts, schema: schemas as Options['schema'] });
  };
}

const ONE_TYPE = new Set(['string', 'integer', 'number', 'boolean', 'object', 'array']);

/** A copy of `value` with every `anyOf: [X, { type: 'null' }]` (X of one JSON type, not a $ref or a union) as X with `type: [X.type, 'null']`. */
export function nullableAsTypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullableAsTypes);
  if (typeof value !== 'object' || value === null) return value;
  const node = value as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(node)) out[k] = nullableAsTypes(v);
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nullAt = anyOf.findIndex((b) => isNullSchema(b));
    const other = anyOf[1 - nullAt] as Schema | undefined;
    if (nullAt >= 0 && other && typeof other.type === 'string' && ONE_TYPE.has(other.type) && !('$ref' in other) && !('anyOf' in other)) {
      const { anyOf: _, ...rest } = out;
      return { ...other, ...rest, type: [other.type, 'null'] };
    }
  }
  if (out.type === undefined && Array.isArray(out.enum) && out.enum.length > 0 && out.enum.every((e) => typeof e === 'string')) out.type = 'string';
  return out;
}

function isNullSchema(s: unknown): boolean {
  if (typeof s !== 'object' || s === null) return false;
  const keys = Object.keys(s);
  return (s as Schema).type === 'null' && keys.every((k) => k === 'type' || k === 'description');
}
