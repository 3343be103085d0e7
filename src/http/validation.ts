// Request validation: one Ajv for bodies (no type coercion: "100" is not an amount) and one
// for path, query and headers (strings coerced to the declared types). Both report every
// error, never strip unknown properties (they are rejected), and map each Ajv error to a
// JSON:API error object with a source pointer or parameter.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { errorItem, type ErrorItem } from './errors.ts';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** Annotation read by the error mapper: a readable description of what a pattern wants. */
export const PATTERN_HINT = 'x-pattern-hint';

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    verbose: true,
    messages: false,
  });
  addFormats(ajv, ['uuid', 'email', 'date', 'date-time', 'uri']);
  ajv.addKeyword({ keyword: PATTERN_HINT, schemaType: 'string' });
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

/** An Ajv error of a list's query, carrying the `filter[...]` parameters the list takes. */
type QueryError = ErrorObject & { allowedFilters?: string[] };

/** The `filter[...]` parameters a list's query schema takes (a list: it pages), else undefined. */
function filterNames(schema: unknown): string[] | undefined {
  const props = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!props || !('page[limit]' in props)) return undefined;
  return Object.keys(props).filter((k) => k.startsWith('filter['));
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
  const validate = ajv.compile(schema as object) as ValidateFunction;
  const filters = httpPart === 'querystring' ? filterNames(schema) : undefined;
  if (filters === undefined) return validate;
  // A list's query errors carry its filters, which every filter error lists.
  const check = (data: unknown) => {
    const ok = validate(data);
    if (!ok) for (const e of validate.errors ?? []) (e as QueryError).allowedFilters = filters;
    return ok;
  };
  Object.defineProperty(check, 'errors', { get: () => validate.errors });
  return check;
};

export type ValidationContext = 'body' | 'querystring' | 'params' | 'headers';

/** Turns Ajv errors into error items; bodies point into the document, the rest name a parameter. */
export function validationErrorItems(errors: ErrorObject[], context: ValidationContext): ErrorItem[] {
  const items: ErrorItem[] = [];
  const seen = new Set<string>();
  const filters = (errors[0] as QueryError | undefined)?.allowedFilters;
  for (const { path, detail } of collapseUnions(errors)) {
    const key = `${path}\u0000${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (context === 'body') {
      items.push(
        errorItem('ValidationError', `${path === '' ? 'The body' : `\`${memberName(path)}\``} ${detail}`, {
          pointer: path,
        }),
      );
    } else {
      const parameter = path.replace(/^\//, '').split('/')[0] ?? '';
      if (filters !== undefined && parameter.startsWith('filter[')) {
        items.push(filterError(parameter, detail, filters));
        continue;
      }
      items.push(
        errorItem('BadRequest', `${parameter === '' ? `The ${context}` : `\`${parameter}\``} ${detail}`, { parameter }),
      );
    }
  }
  return items;
}

/** A list's filter error: names the filters the list takes (in the detail and `meta.allowedFilters`). */
function filterError(parameter: string, detail: string, filters: string[]): ErrorItem {
  const takes = filters.length === 0 ? 'this list takes no filters' : `this list's filters are ${filters.join(', ')}`;
  const what = detail === 'is not allowed' ? 'is not a filter of this list' : detail;
  return errorItem('BadRequest', `\`${parameter}\` ${what}; ${takes}.`, {
    parameter,
    meta: { allowedFilters: filters },
  });
}

/**
 * A union (anyOf/oneOf) reports one error per failed branch plus its own. When some branch
 * got further (an error deeper in the value), those deeper errors are the useful ones. When
 * every branch failed on the value itself, they become one error: the one specific branch
 * complaint if there is one (a bad UUID in a nullable UUID), else the allowed values.
 */
function collapseUnions(errors: ErrorObject[]): { path: string; detail: string }[] {
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const consumed = new Set<ErrorObject>();
  const out: { path: string; detail: string }[] = [];
  for (const u of unions) {
    if (consumed.has(u)) continue;
    consumed.add(u);
    const branches = errors.filter((e) => e !== u && e.schemaPath.startsWith(`${u.schemaPath}/`));
    // Resource objects of different `type`s (a body in one of two shapes): the branch whose
    // `type` matched is the one meant; with none, the complaint is the `type`.
    const byBranch = new Map<string, ErrorObject[]>();
    for (const e of branches) {
      const branch = e.schemaPath.slice(u.schemaPath.length + 1).split('/')[0]!;
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), e]);
    }
    const wrongType = (errs: ErrorObject[]) =>
      errs.find((e) => (e.keyword === 'const' || e.keyword === 'enum') && e.instancePath.endsWith('/type'));
    const untyped = [...byBranch.values()].filter((errs) => wrongType(errs));
    if (byBranch.size > 1 && untyped.length > 0) {
      for (const errs of untyped) for (const e of errs) consumed.add(e);
      if (untyped.length === byBranch.size) {
        const allowed = untyped.flatMap((errs) => {
          const p = wrongType(errs)!.params as { allowedValue?: unknown; allowedValues?: unknown[] };
          return (p.allowedValues ?? [p.allowedValue]).map(quote);
        });
        out.push({
          path: wrongType(untyped[0]!)!.instancePath,
          detail: `must be one of ${[...new Set(allowed)].join(', ')}`,
        });
      }
      continue;
    }
    const deeper = branches.filter((e) => e.instancePath !== u.instancePath);
    if (deeper.length > 0) {
      // The branch that matched the value's type is the one meant; its own complaints stand.
      for (const b of branches) if (b.instancePath === u.instancePath && b.keyword === 'type') consumed.add(b);
      continue;
    }
    for (const b of branches) consumed.add(b);
    const specific = branches.filter((b) => b.keyword !== 'type' && b.keyword !== 'const' && b.keyword !== 'enum');
    if (specific.length === 1) {
      out.push(describe(specific[0]!));
      continue;
    }
    const allowed = branches.flatMap((b) =>
      b.keyword === 'const'
        ? [quote((b.params as { allowedValue: unknown }).allowedValue)]
        : b.keyword === 'enum'
          ? (b.params as { allowedValues: unknown[] }).allowedValues.map(quote)
          : b.keyword === 'type'
            ? [String((b.params as { type: string }).type)]
            : [],
    );
    out.push({
      path: u.instancePath,
      detail:
        allowed.length > 0 ? `must be one of ${[...new Set(allowed)].join(', ')}` : 'does not match any allowed shape',
    });
  }
  for (const e of errors) if (!consumed.has(e)) out.push(describe(e));
  return out;
}

/** `/data/attributes/address/city` reads as `address.city` in a message. */
function memberName(pointer: string): string {
  return pointer
    .replace(/^\/data\/attributes\//, '')
    .replace(/^\//, '')
    .replace(/\//g, '.');
}

function quote(v: unknown): string {
  return JSON.stringify(v);
}

function describe(e: ErrorObject): { path: string; detail: string } {
  const p = e.params as Record<string, unknown>;
  const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { path: `${e.instancePath}/${String(p.missingProperty)}`, detail: 'is required' };
    case 'additionalProperties':
      return { path: `${e.instancePath}/${String(p.additionalProperty)}`, detail: 'is not allowed' };
    case 'type':
      return { path: e.instancePath, detail: `must be ${article(String(p.type))}` };
    case 'format':
      return { path: e.instancePath, detail: `must be a valid ${formatName(String(p.format))}` };
    case 'pattern':
      return {
        path: e.instancePath,
        detail: `must be ${typeof parent[PATTERN_HINT] === 'string' ? parent[PATTERN_HINT] : `a string matching ${String(p.pattern)}`}`,
      };
    case 'minLength':
      return {
        path: e.instancePath,
        detail: Number(p.limit) === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`,
      };
    case 'maxLength':
      return { path: e.instancePath, detail: `must be at most ${String(p.limit)} characters` };
    case 'minimum':
      return { path: e.instancePath, detail: `must be at least ${String(p.limit)}` };
    case 'maximum':
      return { path: e.instancePath, detail: `must be at most ${String(p.limit)}` };
    case 'exclusiveMinimum':
      return { path: e.instancePath, detail: `must be greater than ${String(p.limit)}` };
    case 'minItems':
      return { path: e.instancePath, detail: `must have at least ${String(p.limit)} item(s)` };
    case 'maxItems':
      return { path: e.instancePath, detail: `must have at most ${String(p.limit)} item(s)` };
    case 'minProperties':
      return { path: e.instancePath, detail: `must have at least ${String(p.limit)} member(s)` };
    case 'maxProperties':
      return { path: e.instancePath, detail: `must have at most ${String(p.limit)} member(s)` };
    case 'uniqueItems':
      return { path: e.instancePath, detail: 'must not contain duplicates' };
    case 'enum':
      return { path: e.instancePath, detail: `must be one of ${(p.allowedValues as unknown[]).map(quote).join(', ')}` };
    case 'const':
      return { path: e.instancePath, detail: `must be ${quote(p.allowedValue)}` };
    case 'anyOf':
    case 'oneOf':
      return { path: e.instancePath, detail: 'does not match any allowed shape' };
    case 'not':
      return { path: e.instancePath, detail: 'is not allowed here' };
    default:
      return { path: e.instancePath, detail: 'is invalid' };
  }
}

function article(type: string): string {
  const t = type.replace(/,/g, ' or ');
  return /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`;
}

function formatName(format: string): string {
  return (
    (
      {
        uuid: 'UUID',
        email: 'e-mail address',
        date: 'date (YYYY-MM-DD)',
        'date-time': 'ISO 8601 timestamp',
        uri: 'URL',
      } as Record<string, string>
    )[format] ?? format
  );
}
