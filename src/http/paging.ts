// Paging, sorting, includes: the list conventions of the spec and docs/adr/0002-wire-conventions.md.
import { Type, type TProperties } from 'typebox';
import { apiError } from './errors.ts';
import { Timestamp } from './schemas.ts';

export const MAX_PAGE_LIMIT = 50;
const DEFAULT_PAGE_LIMIT = 10;
/** Offsets beyond this are refused (400) instead of asking the database to skip forever. */
export const MAX_PAGE_OFFSET = 1_000_000;

const pageParams = {
  'page[limit]': Type.Optional(
    Type.Integer({ minimum: 1, description: `1 or more; values above ${MAX_PAGE_LIMIT} are capped` }),
  ),
  'page[offset]': Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PAGE_OFFSET })),
};

/** A list route's query schema: paging plus the route's own parameters; nothing else. */
export function listQuery<P extends TProperties>(extra: P) {
  return Type.Object({ ...pageParams, ...extra }, { additionalProperties: false });
}

/** A list's creation-time range: `filter[createdAfter]` (inclusive), `filter[createdBefore]` (exclusive). */
export const createdRangeParams = {
  'filter[createdAfter]': Type.Optional(Timestamp({ description: 'Created at or after (inclusive)' })),
  'filter[createdBefore]': Type.Optional(Timestamp({ description: 'Created before (exclusive)' })),
};

/** A validated timestamp query parameter as a Date. */
export const dateOf = (v: string | undefined): Date | undefined => (v === undefined ? undefined : new Date(v));

/** A non-list query schema (include and the like); unknown parameters are 400. */
export function query<P extends TProperties>(props: P) {
  return Type.Object(props, { additionalProperties: false });
}

export type { Page } from '../db/paged.ts';
import type { Page } from '../db/paged.ts';

export function pageOf(q: { 'page[limit]'?: number; 'page[offset]'?: number }): Page {
  return { limit: Math.min(q['page[limit]'] ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT), offset: q['page[offset]'] ?? 0 };
}

/** `links` of a list: the request's own query with the page parameters replaced. */
export function pageLinks(baseUrl: string, rawUrl: string, page: Page, total: number) {
  const [path, search = ''] = rawUrl.split('?', 2) as [string, string?];
  const make = (offset: number) => {
    const params = new URLSearchParams(search);
    params.set('page[limit]', String(page.limit));
    params.set('page[offset]', String(offset));
    return `${baseUrl}${path}?${params.toString().replace(/%5B/g, '[').replace(/%5D/g, ']')}`;
  };
  return {
    self: make(page.offset),
    first: make(0),
    prev: page.offset > 0 ? make(Math.max(0, page.offset - page.limit)) : null,
    next: page.offset + page.limit < total ? make(page.offset + page.limit) : null,
  };
}

/** Parses `include`: comma-separated names, each one of `allowed`. */
export function parseInclude<T extends string>(value: string | undefined, allowed: readonly T[]): Set<T> {
  const out = new Set<T>();
  if (value === undefined || value === '') return out;
  for (const raw of value.split(',')) {
    const name = raw.trim();
    if (!(allowed as readonly string[]).includes(name)) {
      throw apiError('BadRequest', `include "${name}" is not supported; use ${allowed.join(', ') || 'nothing'}.`, {
        parameter: 'include',
      });
    }
    out.add(name as T);
  }
  return out;
}

export interface SortKey<T extends string> {
  field: T;
  descending: boolean;
}

/** Parses `sort`: comma-separated fields, `-` for descending, each one of `allowed`. */
export function parseSort<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  fallback: string,
): SortKey<T>[] {
  const keys: SortKey<T>[] = [];
  const seen = new Set<string>();
  for (const raw of (value === undefined || value === '' ? fallback : value).split(',')) {
    const term = raw.trim();
    const descending = term.startsWith('-');
    const field = descending ? term.slice(1) : term;
    if (!(allowed as readonly string[]).includes(field)) {
      throw apiError('BadRequest', `sort field "${field}" is not supported; use ${allowed.join(', ')}.`, {
        parameter: 'sort',
      });
    }
    if (seen.has(field)) throw apiError('BadRequest', `sort field "${field}" appears twice.`, { parameter: 'sort' });
    seen.add(field);
    keys.push({ field: field as T, descending });
  }
  return keys;
}
