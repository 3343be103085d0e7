// Coalesced list pages. The API's list pages of one shape (the same filters and sort) that are
// asked for during one turn of the event loop go to the database as one statement, each page a
// LATERAL subquery over its own values, instead of one round trip each: PostgreSQL binds, locks
// (every weekly partition of the events, for a generic plan) and returns once for the lot, and
// the driver and the kernel handle one exchange. Each caller gets only its own page,
// read by its own merchant, filters, limit and offset, so scoping and results are those of a
// page read alone; the statement starts after every page in it was asked for, so a page still
// sees every write answered before it was asked. Like the point reads of coalesce.ts.
import * as drizzle from 'drizzle-orm';
import { Column, fillPlaceholders, is, SQL, sql } from 'drizzle-orm';
import { builtOnce } from './built-once.ts';
import { TurnBatch } from './coalesce.ts';
import { rowsOf, type Executor } from './open.ts';

interface Executable<R> {
  execute(values: Record<string, unknown>): Promise<R>;
}

/**
 * What a shape's builder returns: Drizzle's select with placeholders (`ph`), not yet prepared.
 * Its SQL text, parameters and selected fields are read once to build the coalesced statement.
 */
export interface PageQuery<R> {
  toSQL(): { sql: string; params: unknown[] };
  prepare(name: string): Executable<R[]>;
}

// Drizzle's own flattening of a select's fields into the columns it maps rows by (exported at
// run time, left out of its type declarations).
const orderSelectedFields = (
  drizzle as unknown as { orderSelectedFields(fields: Record<string, unknown>): { path: string[]; field: unknown }[] }
).orderSelectedFields;

/** Pages in one statement at most; more that arrive together go in the next. */
const MAX_PAGES = 50;

/** How pages went to the database (the tests read it): batches of several, the pages in them, and batches that ran page by page after failing. */
export const pageStats = { batches: 0, batched: 0, fallbacks: 0 };

/**
 * A page statement per shape whose concurrent executions coalesce: `build(db, shape)` returns the
 * select for one page; the result runs it for `values` and resolves to that page's rows. Kept
 * per shape and database handle as builtOnce keeps its statements (the pool, or PGlite; a
 * transaction's handle gets its own).
 */
export function coalescedPages<S extends string, R>(build: (db: Executor, shape: S) => PageQuery<R>) {
  return builtOnce((db: Executor, shape: S) => new Shape(db, build(db, shape)));
}

type Pending<R> = { values: Record<string, unknown>; resolve: (rows: R[]) => void; reject: (err: unknown) => void };

class Shape<R> {
  readonly #db: Executor;
  /** Drizzle's internals of the page's select; undefined when it cannot run as another text. */
  readonly #internals: Internals | undefined;
  readonly #text: string;
  /** The page's parameters: Drizzle's placeholders, filled per page. */
  readonly #params: unknown[];
  readonly #single: Executable<R[]>;
  #batched: Promise<Executable<Array<{ page: number; row: R }>> | undefined> | undefined;
  readonly #turn = new TurnBatch<Pending<R>>((batch) => this.#flush(batch), MAX_PAGES);

  constructor(db: Executor, query: PageQuery<R>) {
    this.#db = db;
    const q = (this.#internals = internalsOf(query));
    const { sql: text, params } = query.toSQL();
    this.#text = text;
    this.#params = params;
    const mapper = q && rowMapper(q.fields, 0);
    this.#single =
      q && mapper ? q.session.prepareQuery({ sql: text, params }, q.fields, '', true, mapper) : query.prepare('');
  }

  execute(values: Record<string, unknown>): Promise<R[]> {
    return new Promise((resolve, reject) => this.#turn.add({ values, resolve, reject }));
  }

  #flush(batch: Pending<R>[]): void {
    if (batch.length === 1) this.#alone(batch[0]!);
    else void this.#together(batch);
  }

  #alone(p: Pending<R>): void {
    this.#single.execute(p.values).then(p.resolve, p.reject);
  }

  async #together(batch: Pending<R>[]): Promise<void> {
    let rows: Array<{ page: number; row: R }>;
    try {
      const q = await (this.#batched ??= this.#buildBatched().catch((err: unknown) => {
        this.#batched = undefined; // a failed PREPARE (a lost connection, say) is tried again with the next batch
        throw err;
      }));
      if (!q) throw new Error('this shape does not coalesce');
      const params = this.#params;
      const perPage = batch.map((p) => fillPlaceholders(params, p.values));
      const values: Record<string, unknown[]> = {};
      params.forEach((_, k) => (values[`__p${k + 1}`] = perPage.map((v) => v[k])));
      rows = await q.execute(values);
    } catch {
      // Each page alone, for its own rows or its own error (one page's bad value must not fail
      // the others'); a failed batch costs the time it took.
      pageStats.fallbacks++;
      for (const p of batch) this.#alone(p);
      return;
    }
    pageStats.batches++;
    pageStats.batched += batch.length;
    const pages: R[][] = batch.map(() => []);
    for (const { page, row } of rows) pages[page - 1]!.push(row);
    batch.forEach((p, k) => p.resolve(pages[k]!));
  }

  /**
   * The statement for several pages: the page's select as a LATERAL subquery over the rows of
   * `unnest` of one array per parameter (typed as PostgreSQL types the page's own parameters),
   * numbered by `with ordinality`. A LATERAL subquery with a LIMIT runs as a nested loop over
   * those rows, so each page's rows come out together, in its own order.
   */
  async #buildBatched(): Promise<Executable<Array<{ page: number; row: R }>> | undefined> {
    const q = this.#internals;
    const text = this.#text;
    if (!q || this.#params.length === 0) return undefined;
    const types = await parameterTypes(this.#db, text);
    if (types.length !== this.#params.length) return undefined;
    const columns = types.map((_, k) => `__p${k + 1}`);
    const arrays = types.map((t, k) => `$${k + 1}::${t}[]`);
    const inner = text.replace(/\$(\d+)/g, (_, n: string) => `b.__p${n}`);
    const wrapped = `select b.__i, p.* from unnest(${arrays.join(', ')}) with ordinality as b(${columns.join(', ')}, __i) cross join lateral (${inner}) p`;
    const mapper = rowMapper(q.fields, 1);
    if (!mapper) return undefined;
    const paged: Mapper = (rows) => {
      const mapped = mapper(rows);
      return mapped.map((row, k) => ({ page: Number(rows[k]![0]), row }));
    };
    return q.session.prepareQuery(
      { sql: wrapped, params: columns.map((c) => sql.placeholder(c)) },
      q.fields,
      '',
      true,
      paged,
    );
  }
}

type Field = { path: string[]; field: unknown };
type Mapper = (rows: unknown[][]) => unknown[];

interface Internals {
  fields: Field[];
  session: {
    prepareQuery(
      query: { sql: string; params: unknown[] },
      fields: Field[],
      name: string,
      arrayMode: boolean,
      mapper?: Mapper,
    ): Executable<never>;
  };
}

/** Drizzle's select internals that running its SQL with another text needs (drizzle-orm 0.45's PgSelect). */
function internalsOf(query: PageQuery<unknown>): Internals | undefined {
  const q = query as unknown as {
    config?: { fields?: Record<string, unknown> };
    session?: Internals['session'];
    joinsNotNullableMap?: Record<string, boolean>;
  };
  if (!q.config?.fields || !q.session) return undefined;
  const fields = orderSelectedFields(q.config.fields);
  // A left join's table comes out null when all its columns are: Drizzle's own mapping does that.
  if (q.joinsNotNullableMap && Object.values(q.joinsNotNullableMap).some((notNull) => !notNull)) return undefined;
  return { fields, session: q.session };
}

/**
 * Rows (arrays: the fields' columns from index `from` on) into Drizzle's result objects, each
 * field's decoder found once. Drizzle's own mapping finds it per row and column through `is()`
 * (a walk of the prototype chain): a sixth of the server's CPU on a page of ten users (CPU
 * profile). The mapper is generated code (as fast-json-stringify's serializers are): one object
 * literal per row, so every row is built in one step with the same shape. A column whose
 * decoder is the identity (text, uuid, boolean, integer) is copied as it is.
 */
function rowMapper(fields: Field[], from: number): Mapper | undefined {
  const identity = Column.prototype.mapFromDriverValue;
  const decoders: ((v: unknown) => unknown)[] = [];
  const groups = new Map<string, string[]>();
  const top: string[] = [];
  for (let k = 0; k < fields.length; k++) {
    const { path, field } = fields[k]!;
    const decoder = (
      is(field, Column)
        ? field
        : is(field, SQL)
          ? (field as unknown as { decoder: unknown }).decoder
          : is(field, SQL.Aliased)
            ? (field.sql as unknown as { decoder: unknown }).decoder
            : undefined
    ) as { mapFromDriverValue(v: unknown): unknown } | undefined;
    if (!decoder || path.length > 2) return undefined;
    const raw = `r[${k + from}]`;
    let value = raw;
    if (decoder.mapFromDriverValue !== identity) {
      decoders.push(decoder.mapFromDriverValue.bind(decoder));
      value = `(${raw} === null || ${raw} === undefined ? ${raw} : d[${decoders.length - 1}](${raw}))`;
    }
    const member = `${JSON.stringify(path[path.length - 1])}: ${value}`;
    if (path.length === 1) top.push(member);
    else {
      const key = JSON.stringify(path[0]);
      if (!groups.has(key)) {
        groups.set(key, []);
        top.push(key); // the nested object's place among the top-level members
      }
      groups.get(key)!.push(member);
    }
  }
  const literal = top.map((m) => (groups.has(m) ? `${m}: { ${groups.get(m)!.join(', ')} }` : m)).join(', ');
  // The keys are Drizzle's field names, quoted by JSON.stringify.
  return new Function(
    'd',
    `return (rows) => { const out = new Array(rows.length); for (let i = 0; i < rows.length; i++) { const r = rows[i]; out[i] = { ${literal} }; } return out; };`,
  )(decoders) as Mapper;
}

let described = 0;

/** The types PostgreSQL gives a statement's parameters (a PREPARE, read back and dropped in one transaction). */
async function parameterTypes(db: Executor, text: string): Promise<string[]> {
  const name = `coffer_describe_${process.pid}_${++described}`;
  return db.transaction(async (tx) => {
    await tx.execute(sql.raw(`prepare ${name} as ${text}`));
    const [row] = rowsOf<{ t: string[] }>(
      await tx.execute(
        sql.raw(`select parameter_types::text[] as t from pg_prepared_statements where name = '${name}'`),
      ),
    );
    await tx.execute(sql.raw(`deallocate ${name}`));
    return row?.t ?? [];
  });
}
