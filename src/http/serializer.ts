// Response serializers: Fastify's own (fast-json-stringify over the route's response schema and
// the shared ones), given the schemas with their nullable fields written as type arrays. A
// TypeBox Nullable is `anyOf: [X, null]`, and fast-json-stringify serializes an anyOf by running
// an Ajv validator of each branch against the value until one matches: a field of a payment
// intent page paid that for each of its eight nullable attributes, per row (about 4% of the
// server's CPU on a page of ten, CPU profile). `type: ['string', 'null']` is a typeof test. An
// enum of strings without a type gets `type: 'string'` too (otherwise it goes through
// JSON.stringify). Only the serializers see the rewritten schemas: request validation and the
// OpenAPI document keep the schemas as written.
//
// A field marked `'x-json-text': true` (an event's payload: the body as stored and sent) is
// written as the JSON text it holds, a JsonText, instead of being parsed into objects and
// serialized again (about 20 µs for a 1.2 KB body, ten times a page). Its schema becomes
// `{ type: 'string', format: 'unsafe' }`, which fast-json-stringify writes as `"` + value + `"`
// unescaped; the JsonText's string value is its text between two U+0000, and the serializer
// takes out each `"` U+0000 and U+0000 `"`. That is exact: every other string in the output is
// escaped, so a raw U+0000 appears nowhere else, and the text itself is JSON (PostgreSQL's text
// cannot hold U+0000 either).
import fastJsonStringify, { type Options } from 'fast-json-stringify';

type Schema = Record<string, unknown>;

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export function buildSerializer(externalSchemas?: unknown, serializerOpts?: Options) {
  const shared = externalSchemas ? (nullableAsTypes(externalSchemas) as Record<string, unknown>) : undefined;
  return ({ schema }: { schema?: unknown }): ((doc: unknown) => string) => {
    const own = nullableAsTypes(schema ?? {}) as Schema;
    // Only the shared schemas this one refers to: fast-json-stringify validates, walks and adds
    // every shared schema it is given, for each serializer it builds (each route's each status),
    // and given all of them that was about 2 s of building every app. A route's schema with an
    // $id is among the shared ones too; fast-json-stringify refuses a duplicate id.
    const schemas = shared && referencedSchemas(own, shared);
    if (schemas && typeof own.$id === 'string') delete schemas[own.$id];
    // Only where a JsonText can be: a scan of every other response would cost (a 17 KB page: about 25 µs).
    const texts = holdsJsonText(schema, (externalSchemas ?? {}) as Record<string, unknown>);
    const key = JSON.stringify([texts, serializerOpts ?? null, own, schemas ?? null]);
    let serialize = built.get(key);
    if (!serialize) {
      const plain = fastJsonStringify(own, { ...serializerOpts, schema: schemas as Options['schema'] });
      serialize = texts ? (doc) => unquoteJsonTexts(plain(doc)) : plain;
      built.set(key, serialize);
    }
    return serialize;
  };
}

/**
 * The serializers built in this process, by what they were built from (options, schema and the
 * shared schemas it refers to, as JSON): a serializer is a pure function of those, and every
 * listener and app of a process (each test's app, say) would otherwise build the same ones again.
 */
const built = new Map<string, (doc: unknown) => string>();

/**
 * The shared schemas (by $id) that `schema` refers to by $ref, and those they refer to, in turn;
 * all of `shared` if a $ref names an id it does not hold (fast-json-stringify then says which).
 */
export function referencedSchemas(schema: unknown, shared: Record<string, unknown>): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  const pending = [schema];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) pending.push(...node);
    else if (typeof node === 'object' && node !== null) {
      const ref = (node as Schema).$ref;
      if (typeof ref === 'string') {
        const id = ref.split('#')[0]!;
        if (id !== '' && !(id in found)) {
          if (!(id in shared)) return { ...shared };
          found[id] = shared[id];
          pending.push(shared[id]);
        }
      }
      pending.push(...Object.values(node));
    }
  }
  return found;
}

/** Whether `schema`, or a shared schema it refers to ($ref by $id), has a field marked JSON_TEXT. */
export function holdsJsonText(schema: unknown, shared: Record<string, unknown>, seen = new Set<string>()): boolean {
  if (Array.isArray(schema)) return schema.some((s) => holdsJsonText(s, shared, seen));
  if (typeof schema !== 'object' || schema === null) return false;
  const node = schema as Schema;
  if (node[JSON_TEXT] === true) return true;
  if (typeof node.$ref === 'string') {
    const id = node.$ref.split('#')[0]!;
    if (!seen.has(id) && id in shared) {
      seen.add(id);
      if (holdsJsonText(shared[id], shared, seen)) return true;
    }
  }
  return Object.values(node).some((v) => typeof v === 'object' && holdsJsonText(v, shared, seen));
}

const NUL = '\u0000';

/**
 * `json` with each JsonText's `"` U+0000 … U+0000 `"` as the text between. A raw U+0000 is in
 * no other place, so the search is for it alone: every U+0000 found in turn opens a text (the
 * `"` before it) and the next closes it (the `"` after). Searching for the two characters
 * stopped at every `"` of the page (a 14 KB events page: 4.7 µs against 1.8).
 */
export function unquoteJsonTexts(json: string): string {
  let at = json.indexOf(NUL);
  if (at === -1) return json;
  let out = '';
  let from = 0;
  while (at !== -1) {
    const end = json.indexOf(NUL, at + 1);
    if (end === -1) throw new Error('A JSON text in a response is not closed');
    out += json.slice(from, at - 1) + json.slice(at + 1, end);
    from = end + 2;
    at = json.indexOf(NUL, from);
  }
  return out + json.slice(from);
}

/** The keyword that marks a field whose value is a JsonText. */
export const JSON_TEXT = 'x-json-text';

/**
 * A JSON text that goes into a response as it is (a field whose schema has `'x-json-text': true`).
 * Anything that serializes it by JSON.stringify gets the parsed value instead, the same JSON.
 */
export class JsonText {
  [member: string]: unknown;
  readonly #text: string;
  constructor(text: string) {
    // Its ends are marked by U+0000 (above); JSON and PostgreSQL's text never hold one raw.
    if (text.includes(NUL)) throw new Error('A JSON text cannot hold U+0000');
    this.#text = text;
  }
  toString(): string {
    return NUL + this.#text + NUL;
  }
  toJSON(): unknown {
    return JSON.parse(this.#text);
  }
}

const ONE_TYPE = new Set(['string', 'integer', 'number', 'boolean', 'object', 'array']);

/**
 * A copy of `value` with every `anyOf: [X, { type: 'null' }]` (X of one JSON type, not a $ref or a union) as X with `type: [X.type, 'null']`,
 * and every field marked JSON_TEXT as an unescaped string.
 */
export function nullableAsTypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullableAsTypes);
  if (typeof value !== 'object' || value === null) return value;
  const node = value as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(node)) out[k] = nullableAsTypes(v);
  if (out[JSON_TEXT] === true) return { type: 'string', format: 'unsafe' };
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nullAt = anyOf.findIndex((b) => isNullSchema(b));
    const other = anyOf[1 - nullAt] as Schema | undefined;
    if (
      nullAt >= 0 &&
      other &&
      typeof other.type === 'string' &&
      ONE_TYPE.has(other.type) &&
      !('$ref' in other) &&
      !('anyOf' in other)
    ) {
      const { anyOf: _, ...rest } = out;
      return { ...other, ...rest, type: [other.type, 'null'] };
    }
  }
  if (
    out.type === undefined &&
    Array.isArray(out.enum) &&
    out.enum.length > 0 &&
    out.enum.every((e) => typeof e === 'string')
  )
    out.type = 'string';
  return out;
}

function isNullSchema(s: unknown): boolean {
  if (typeof s !== 'object' || s === null) return false;
  const keys = Object.keys(s);
  return (s as Schema).type === 'null' && keys.every((k) => k === 'type' || k === 'description');
}
