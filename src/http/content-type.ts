// Media-type rules (JSON:API and docs/adr/0002-wire-conventions.md): a request body must be
// application/vnd.api+json (only the ext and profile parameters allowed) or application/json
// (only charset=utf-8). Anything else is 415. Responses are always application/vnd.api+json.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiError } from './errors.ts';
import { refuseUnstorableInBody } from './nul.ts';

interface MediaType {
  essence: string;
  params: Map<string, string>;
}

function parseMediaType(header: string): MediaType | undefined {
  const [rawEssence, ...rawParams] = header.split(';');
  const essence = rawEssence?.trim().toLowerCase() ?? '';
  if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(essence)) return undefined;
  const params = new Map<string, string>();
  for (const p of rawParams) {
    const eq = p.indexOf('=');
    if (eq < 0) {
      if (p.trim() === '') continue;
      return undefined;
    }
    const name = p.slice(0, eq).trim().toLowerCase();
    const value = p
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (name === '') return undefined;
    params.set(name, value);
  }
  return { essence, params };
}

function hasBody(req: FastifyRequest): boolean {
  const len = req.headers['content-length'];
  if (len !== undefined) return len !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}

/** onRequest check, before the body is read, so a wrong type never reaches a parser. */
export function checkRequestMediaType(req: FastifyRequest): void {
  if (!hasBody(req)) return;
  const header = req.headers['content-type'];
  if (header === undefined) {
    throw apiError('UnsupportedMediaType', 'A request body needs Content-Type: application/vnd.api+json.', {
      header: 'Content-Type',
    });
  }
  const mt = parseMediaType(header);
  if (mt === undefined)
    throw apiError('UnsupportedMediaType', `Content-Type "${header}" is malformed.`, { header: 'Content-Type' });
  if (mt.essence === 'application/vnd.api+json') {
    const bad = [...mt.params.keys()].filter((k) => k !== 'ext' && k !== 'profile');
    if (bad.length > 0) {
      throw apiError(
        'UnsupportedMediaType',
        `The JSON:API media type allows only the ext and profile parameters, not ${bad.join(', ')}.`,
        {
          header: 'Content-Type',
        },
      );
    }
    return;
  }
  if (mt.essence === 'application/json') {
    for (const [k, v] of mt.params) {
      if (k !== 'charset' || v.toLowerCase() !== 'utf-8') {
        throw apiError('UnsupportedMediaType', 'application/json accepts only charset=utf-8.', {
          header: 'Content-Type',
        });
      }
    }
    return;
  }
  throw apiError('UnsupportedMediaType', `Content-Type ${mt.essence} is not accepted; send application/vnd.api+json.`, {
    header: 'Content-Type',
  });
}

/**
 * How deep a request body may nest (objects and arrays). A JSON:API document needs a handful
 * of levels; free-form members (an authorize's meta.processor) get the rest. Deeper bodies are
 * refused before parsing: past a few thousand levels, recursive code further on (validation,
 * fingerprints, jsonb, serialization) overflowed its stack.
 */
export const MAX_JSON_DEPTH = 32;

/** Whether the JSON text nests deeper than `max` (brackets inside strings do not count). */
function jsonNestsDeeperThan(text: string, max: number): boolean {
  if (text.length <= max * 2) return false; // too short to open more than `max` brackets
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * JSON parsing for both accepted types, with Fastify's prototype-poisoning protection, the
 * depth limit and the strings PostgreSQL cannot store refused (nul.ts). An empty body (some
 * clients send a content type on body-less POSTs) parses as no body.
 */
export function registerJsonParsers(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const parser = (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    if (body === '' || (Buffer.isBuffer(body) && body.length === 0)) return done(null, undefined);
    if (jsonNestsDeeperThan(body as string, MAX_JSON_DEPTH)) {
      return done(
        apiError('ValidationError', `The body is nested more than ${MAX_JSON_DEPTH} levels deep.`, { pointer: '' }),
      );
    }
    parseJson(req, body as string, (err, parsed) => {
      if (err) return done(err);
      try {
        refuseUnstorableInBody(body as string, parsed);
      } catch (unstorable) {
        return done(unstorable as Error);
      }
      done(null, parsed);
    });
  };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
  app.addContentTypeParser('application/vnd.api+json', { parseAs: 'string' }, parser);
}
