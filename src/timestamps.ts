// Timestamps between PostgreSQL's text, Date and the API's ISO 8601 strings, by integer
// arithmetic. Every resource carries two to four timestamps, so a page of ten is twenty to forty
// of each: V8's Date parser for PostgreSQL's 'YYYY-MM-DD HH:MM:SS.ffffff+00' (the legacy,
// non-ISO path) took about 170 ns a value here, and Date.prototype.toISOString with its
// serialization about 480 ns (a call into the runtime); these take about 110 and 200 ns.
// Anything outside the common shape (another session time zone, a year outside 1000 to 9999, an
// invalid date) goes to the built-in.

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;
const pad3 = (n: number) => (n < 10 ? '00' : n < 100 ? '0' : '') + n;

/** The earliest and latest instants formatted here (years 1000 and 9999): four-digit years. */
const MIN_MS = -30610224000000;
const MAX_MS = 253402300800000;
const DAY_MS = 86_400_000;

/** `d.toISOString()`, the same string: 'YYYY-MM-DDTHH:MM:SS.sssZ'. */
export function isoTime(d: Date): string {
  const ms = d.getTime();
  if (!(ms >= MIN_MS && ms < MAX_MS)) return d.toISOString(); // throws RangeError for an invalid date, as the built-in does
  const days = Math.floor(ms / DAY_MS);
  let rem = ms - days * DAY_MS;
  const h = Math.floor(rem / 3_600_000);
  rem -= h * 3_600_000;
  const m = Math.floor(rem / 60_000);
  rem -= m * 60_000;
  const s = Math.floor(rem / 1000);
  return `${datePart(days)}T${pad2(h)}:${pad2(m)}:${pad2(s)}.${pad3(rem - s * 1000)}Z`;
}

// The rows of a page are mostly of one day: the last day's 'YYYY-MM-DD' is kept.
let lastDays = NaN;
let lastDate = '';

/** 'YYYY-MM-DD' of a day number (days since 1970-01-01), proleptic Gregorian: H. Hinnant's civil_from_days. */
function datePart(days: number): string {
  if (days === lastDays) return lastDate;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  lastDays = days;
  return (lastDate = `${year}-${pad2(month)}-${pad2(day)}`);
}

/** isoTime of a date that may be absent: null then. */
export function isoTimeOrNull(d: Date | null | undefined): string | null {
  return d ? isoTime(d) : null;
}

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const two = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);

/**
 * A timestamptz as PostgreSQL writes it in a UTC session, 'YYYY-MM-DD HH:MM:SS[.f…]+00', as a
 * Date (milliseconds; further digits dropped, as new Date() drops them). Any other text (an
 * offset other than +00, a BC or five-digit year, 'infinity') goes to new Date(), which is what
 * Drizzle's own decoder calls.
 */
export function parseTimestamptz(v: string): Date {
  const n = v.length;
  if (
    n < 22 ||
    n > 29 ||
    v.charCodeAt(4) !== 45 || // -
    v.charCodeAt(7) !== 45 ||
    v.charCodeAt(10) !== 32 || // space
    v.charCodeAt(13) !== 58 || // :
    v.charCodeAt(16) !== 58 ||
    v.charCodeAt(n - 3) !== 43 || // +
    v.charCodeAt(n - 2) !== 48 || // 0
    v.charCodeAt(n - 1) !== 48
  ) {
    return new Date(v);
  }
  let ms = 0;
  if (n > 22) {
    if (v.charCodeAt(19) !== 46) return new Date(v); // .
    const end = n - 3;
    for (let i = 20, scale = 100; i < end; i++, scale /= 10) {
      const c = digit(v, i);
      if (c < 0 || c > 9) return new Date(v);
      if (scale >= 1) ms += c * scale;
    }
  }
  const year = digit(v, 0) * 1000 + digit(v, 1) * 100 + two(v, 2);
  const month = two(v, 5);
  const day = two(v, 8);
  const h = two(v, 11);
  const m = two(v, 14);
  const s = two(v, 17);
  // Date.UTC reads years 0 to 99 as 1900 to 1999 and rolls a month 13 over; new Date() does neither.
  if (
    !(
      year >= 1000 &&
      year <= 9999 &&
      month >= 1 &&
      month <= 12 &&
      day >= 1 &&
      day <= 31 &&
      h <= 23 &&
      m <= 59 &&
      s <= 59 &&
      h >= 0 &&
      m >= 0 &&
      s >= 0
    )
  ) {
    return new Date(v);
  }
  return new Date(Date.UTC(year, month - 1, day, h, m, s, ms));
}
