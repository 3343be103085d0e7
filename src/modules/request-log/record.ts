// The API request log the console shows: each authenticated API request (method, route, path,
// status, duration, idempotency key, its body with secrets and card data redacted), kept in
// memory on the request path, one JSON text each, and written in batches by a job (flush) every
// 50 ms, so a request costs a string and an array push, never a database round trip.
// Weeks past the retention are dropped by a job (retention.ts).
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/open.ts';
import type { Clock } from '../../clock.ts';
import { isRetryableDatabaseError, sqlState } from '../../db/errors.ts';
import { uuidv7 } from '../../ids.ts';
import { redactUrl } from '../../log.ts';
import { requestLogDropped } from '../../observability/metrics.ts';
import { insertRequestJson, requestRowJson, storable } from './sql.ts';

/** The most requests held between two flushes; more are dropped (and counted) rather than grow without bound. */
const REQUEST_LOG_BUFFER = 20_000;
/** Rows per insert statement. */
const INSERT_BATCH = 1_000;
/** A stored body is cut to this many characters. */
export const BODY_LIMIT = 4_096;

const REDACTED = '[redacted]';
/**
 * Keys whose values are never stored: secrets, credentials, card and bank account data, identity
 * numbers and dates of birth. Matched against the key in lower case without separators
 * (keyName), so `api_key`, `API-Key` and `apiKey` are one; short names only whole or at an end,
 * so that `author`, `expected` or `protein` are kept.
 */
const SECRET_KEY =
  /secret|passw(or)?d|passphrase|passcode|token|authorization|auth$|signature|credential|apikey|privatekey|accesskey|cookie|jwt|cardnumber|^pan$|cvv|cvc|^csc|securitycode|^exp(month|year|date)?$|expir|accountnumber|routingnumber|iban|^ssn|ssn$|socialsecurity|taxid|^ein$|nationalid|passport|^pin(code)?$|^otp|otp$|^dob|dob$|birth/;
const keyName = (key: string) =>
  key
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s_.-]/g, '');

/** A UUID, matched first by the two patterns below: ids are kept whole, though their digits may look like a card's. */
const UUID = '([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})';
/** Card numbers and other long digit runs (12 to 19 digits, single spaces or dashes between) inside any string. */
const LONG_DIGITS = new RegExp(`${UUID}|\\d(?:[ -]?\\d){11,18}`, 'g');
/** Groups of digits joined by separators (anything but letters and digits): where a card number may hide. */
const DIGIT_GROUPS = new RegExp(`${UUID}|\\d+(?:[^\\p{L}\\p{N}]{1,3}\\d+)+`, 'gu');
const NON_ASCII = /[\u0080-\uffff]/;
/** What separates the digits of a card number written as a member of an array ("4111 1111"). */
const SEPARATORS = /[^\p{L}\p{N}]/gu;

/** The Luhn check every card number passes. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let d = digits.charCodeAt(i) - 48;
    if (double && (d *= 2) > 9) d -= 9;
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * The runs [first, last] of consecutive digit groups that together are a card number: 13 to 19
 * digits passing the Luhn check, the longest such run from each group on.
 */
function cardRuns(groups: string[]): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < groups.length; ) {
    let digits = '';
    let last = -1;
    for (let j = i; j < groups.length && (digits += groups[j]).length <= 19; j++)
      if (digits.length >= 13 && luhn(digits)) last = j;
    if (last < 0) i++;
    else {
      runs.push([i, last]);
      i = last + 1;
    }
  }
  return runs;
}

/** Card numbers in a run of digit groups ("4111.1111.1111.1111", "4111 / 1111 ...") redacted. */
function redactGroups(run: string): string {
  const groups = [...run.matchAll(/\d+/g)];
  const cards = cardRuns(groups.map((g) => g[0]));
  if (cards.length === 0) return run;
  let out = '';
  let at = 0;
  for (const [first, last] of cards) {
    const end = groups[last]!.index + groups[last]![0].length;
    out += `${run.slice(at, groups[first]!.index)}${REDACTED}`;
    at = end;
  }
  return out + run.slice(at);
}

/**
 * A string fit to store (storable), with card numbers redacted: compatibility forms (full-width
 * digits, non-breaking spaces) normalised first (NFKC), then any 12 to 19 digit run, and any card
 * number whose digits are apart.
 */
function redactString(value: string): string {
  let s = storable(value);
  if (NON_ASCII.test(s)) s = s.normalize('NFKC');
  return s
    .replace(LONG_DIGITS, (_run, uuid?: string) => uuid ?? REDACTED)
    .replace(DIGIT_GROUPS, (run, uuid?: string) => uuid ?? redactGroups(run));
}

/** The members of an array that are a card number split into digit strings (["4111", "1111", …]) redacted. */
function redactSplitCards(members: unknown[]): unknown {
  // Each member's digits, or undefined for a member that is not a digit string.
  const digits = members.map((m) => {
    if (typeof m !== 'string') return undefined;
    const d = m.replace(SEPARATORS, '');
    return /^\d+$/.test(d) ? d : undefined;
  });
  if (digits.filter((d) => d !== undefined).length < 2) return members;
  let redacted = 0;
  for (let i = 0; i < members.length; ) {
    let end = i;
    while (digits[end] !== undefined) end++;
    for (const [first, last] of cardRuns(digits.slice(i, end) as string[])) {
      for (let k = i + first; k <= i + last; k++) members[k] = REDACTED;
      redacted += last - first + 1;
    }
    i = end + 1;
  }
  return redacted === members.length ? REDACTED : members;
}

/**
 * A copy of a parsed JSON body fit to store: secrets and card data replaced by "[redacted]",
 * U+0000 removed and lone surrogates replaced (storable), in keys and values alike.
 */
export function redactBody(value: unknown, depth = 0): unknown {
  if (depth > 20) return REDACTED;
  if (typeof value === 'string') return redactString(value);
  if (typeof value === 'number') return /^\d{12,19}$/.test(String(value)) ? REDACTED : value;
  if (Array.isArray(value)) return redactSplitCards(value.map((v) => redactBody(v, depth + 1)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[storable(k)] = SECRET_KEY.test(keyName(k)) ? REDACTED : redactBody(v, depth + 1);
    return out;
  }
  return value;
}

function idempotencyKeyOf(req: FastifyRequest): string | null {
  const header = req.headers['idempotency-key'];
  if (typeof header === 'string' && header.length > 0) return header.slice(0, 255);
  const key = (req.body as { data?: { attributes?: { idempotencyKey?: unknown } } } | undefined)?.data?.attributes
    ?.idempotencyKey;
  return typeof key === 'string' ? key.slice(0, 255) : null;
}

/**
 * The failures of a batch that lie in its rows rather than in the database: data exceptions
 * (class 22: a value PostgreSQL cannot take) and integrity violations (class 23: an id written
 * twice). The batch is then halved down to the rows at fault.
 */
const ROW_FAULT = /^2[23]/;

const droppedFull = requestLogDropped.labels('full');
const droppedRefused = requestLogDropped.labels('refused');

export class RequestLogBuffer {
  /** requestRowJson of each request recorded since the last flush. */
  #rows: string[] = [];
  #dropped = 0;
  readonly #clock: Clock;
  readonly #enabled: boolean;
  readonly #log: FastifyBaseLogger | undefined;

  constructor(opts: { clock: Clock; enabled: boolean; log?: FastifyBaseLogger }) {
    this.#clock = opts.clock;
    this.#enabled = opts.enabled;
    this.#log = opts.log;
  }

  /** Requests dropped: the buffer was full (the database fell behind), or PostgreSQL refused the row. */
  get dropped(): number {
    return this.#dropped;
  }

  /** An onResponse hook: records the request of an authenticated merchant. */
  readonly hook = (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const client = (req as { client?: { id: string } | null }).client;
    if (this.#enabled && client) {
      if (this.#rows.length >= REQUEST_LOG_BUFFER) {
        this.#dropped++;
        droppedFull.inc();
      } else {
        const body =
          req.body === undefined || req.body === null
            ? null
            : JSON.stringify(redactBody(req.body)).slice(0, BODY_LIMIT);
        // A gift's or a barcode's lookUpId in the path is a bearer secret: never stored.
        const path = redactUrl(req.url.split('?')[0]!);
        this.#rows.push(
          requestRowJson({
            id: uuidv7(),
            clientId: client.id,
            requestId: String(req.id),
            method: req.method,
            route: req.routeOptions.url ?? path,
            path: path.slice(0, 2048),
            status: reply.statusCode,
            durationMs: Math.round(reply.elapsedTime),
            idempotencyKey: idempotencyKeyOf(req),
            body,
            createdAt: this.#clock.now(),
          }),
        );
      }
    }
    done();
  };

  /**
   * Writes what was recorded since the last flush; returns how many rows. A row PostgreSQL
   * refuses is dropped alone (counted, and logged without its values); when a batch fails
   * otherwise (the database is away), the rows not written go back to the buffer for the next
   * flush, and the error is thrown.
   */
  async flush(db: Db): Promise<number> {
    if (this.#rows.length === 0) return 0;
    const rows = this.#rows;
    this.#rows = [];
    const done: Written = { settled: 0, refused: 0, err: undefined };
    try {
      for (let i = 0; i < rows.length; i += INSERT_BATCH)
        await this.#write(db, rows, i, Math.min(i + INSERT_BATCH, rows.length), done);
    } catch (err) {
      this.#putBack(rows.slice(done.settled));
      throw err;
    } finally {
      if (done.refused > 0) {
        this.#dropped += done.refused;
        droppedRefused.inc(done.refused);
        this.#log?.warn(
          { err: done.err, refused: done.refused },
          'PostgreSQL refused request-log rows: they are dropped, the other rows of their batch are written',
        );
      }
    }
    return done.settled - done.refused;
  }

  /** Writes rows[from, to) in one statement, or, when a row is at fault, each half on its own. */
  async #write(db: Db, rows: string[], from: number, to: number, done: Written): Promise<void> {
    try {
      await insertRequestJson(db, rows.slice(from, to));
    } catch (err) {
      if (isRetryableDatabaseError(err) || !ROW_FAULT.test(sqlState(err) ?? '')) throw err;
      if (to - from > 1) {
        const half = (from + to) >>> 1;
        await this.#write(db, rows, from, half, done);
        await this.#write(db, rows, half, to, done);
        return;
      }
      done.refused++;
      done.err ??= err;
    }
    done.settled = to;
  }

  /** Rows not written go back ahead of those recorded since, within the buffer's limit. */
  #putBack(rows: string[]): void {
    const back = rows.concat(this.#rows);
    const over = back.length - REQUEST_LOG_BUFFER;
    if (over > 0) {
      back.length = REQUEST_LOG_BUFFER;
      this.#dropped += over;
      droppedFull.inc(over);
    }
    this.#rows = back;
  }
}

/** How far a flush got: rows settled (written or refused) in order, and those refused. */
interface Written {
  settled: number;
  refused: number;
  err: unknown;
}
