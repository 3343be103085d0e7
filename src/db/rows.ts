// Rows of Drizzle tables as parts of a write batch, and raw rows read back into Drizzle's shape.
//
// The hot paths read everything they need in one hand-written statement and write everything
// in one batch (db/batch.ts); these helpers let them do so with the same tables, column
// names, encodings and TypeScript types as the Drizzle queries elsewhere, instead of
// hand-written column lists that drift from the schema.
import { createHash } from 'node:crypto';
import { getTableColumns, getTableName, type InferInsertModel, type InferSelectModel } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Merge, WritePart } from './batch.ts';

interface Column {
  key: string;
  name: string;
  sqlType: string;
  /** json or jsonb: travels in a JSON document as its value. */
  json: boolean;
  column: PgColumn;
}

interface TableMeta {
  table: string;
  columns: Column[];
  byKey: Map<string, Column>;
}

const metas = new WeakMap<PgTable, TableMeta>();

function meta(table: PgTable): TableMeta {
  let m = metas.get(table);
  if (!m) {
    const columns = Object.entries(getTableColumns(table)).map(([key, column]) => {
      const sqlType = column.getSQLType();
      return {
        key,
        name: column.name,
        sqlType,
        json: sqlType === 'json' || sqlType === 'jsonb',
        column: column as PgColumn,
      };
    });
    m = { table: getTableName(table), columns, byKey: new Map(columns.map((c) => [c.key, c])) };
    metas.set(table, m);
  }
  return m;
}

/** Statement names are at most 63 bytes: long shapes are named by a hash. */
function shapeName(prefix: string, shape: string): string {
  return `${prefix}_${createHash('sha1').update(shape).digest('hex').slice(0, 16)}`;
}

function toDriver(c: Column, value: unknown): unknown {
  return value === null ? null : c.column.mapToDriverValue(value);
}

/**
 * Makes a shape's row objects for json_populate_recordset (column names as keys; json columns as
 * their value, not as a string; Dates as JSON writes them, which PostgreSQL reads back exactly),
 * with `extra` (an update's id) last. The object is an object literal compiled once per shape, so
 * every row of the shape shares one map and JSON.stringify takes its fast path: an object built
 * key by key with more than a dozen columns became a dictionary in V8 (`--log-maps`:
 * TooManyFastProperties) for every row, and writing each field out as a string was no faster.
 * The keys are the schema's own column names, quoted by JSON.stringify.
 */
function rowObjectMaker(
  cols: Column[],
  extra?: string,
): (values: unknown[], extraValue?: unknown) => Record<string, unknown> {
  const members = cols.map((c, i) => `${JSON.stringify(c.name)}: v[${i}]`);
  if (extra !== undefined) members.push(`${JSON.stringify(extra)}: x`);
  const make = new Function('v', 'x', `return { ${members.join(', ')} };`) as (
    v: unknown[],
    x: unknown,
  ) => Record<string, unknown>;
  return (values, extraValue) => make(jsonValues(cols, values), extraValue);
}

/** The values as JSON carries them: drivers' values, except nulls, Dates and json columns' values. */
function jsonValues(cols: Column[], values: unknown[]): unknown[] {
  const out = new Array<unknown>(cols.length);
  for (let i = 0; i < cols.length; i++) {
    const v = values[i];
    out[i] = v === null || v instanceof Date || cols[i]!.json ? v : toDriver(cols[i]!, v);
  }
  return out;
}

/** The row's values in the order of `cols`: a copy that keeps no map of its own, whatever the table. */
function valuesOf(cols: Column[], row: Record<string, unknown>): unknown[] {
  const out = new Array<unknown>(cols.length);
  for (let i = 0; i < cols.length; i++) out[i] = row[cols[i]!.key];
  return out;
}

// Many rows of one shape go as one JSON document read by json_populate_recordset with the
// table's own row type: one statement and one prepared plan whatever the number of rows.
const populate = (table: string) => `json_populate_recordset(null::${table}, $1::json)`;

/** A statement shape (which columns a write names), built once per table and set of columns. */
interface Shape {
  /** The table's name. */
  table: string;
  cols: Column[];
  name: string;
  text: string;
  /** Makes the write of many rows from the items of parts of this shape; undefined when a column cannot travel as JSON (bytea). */
  combine?: Merge['combine'];
}

const shapes = new Map<string, Shape>();

function shapeOf(
  kind: 'ins' | 'upd',
  table: PgTable,
  row: Record<string, unknown>,
  build: Builder,
  combineOf: CombineOf,
): Shape {
  const m = meta(table);
  let key = `${kind} ${m.table}`;
  for (const c of m.columns) if (row[c.key] !== undefined) key += ` ${c.name}`;
  let shape = shapes.get(key);
  if (!shape) {
    const cols = m.columns.filter((c) => row[c.key] !== undefined);
    const built = build(m, cols);
    const name = shapeName(`${kind}_${m.table}`, built.text);
    shape = { table: m.table, cols, name, text: built.text };
    if (!cols.some((c) => c.sqlType === 'bytea'))
      shape.combine = combineOf(m, shape, { name: `${name}_many`, text: built.many });
    shapes.set(key, shape);
  }
  return shape;
}

/**
 * A one-row write of a shape, its values copied in the shape's column order. A class, not an
 * object literal with a getter and the merge spread in after it: V8 made each such literal a
 * dictionary with a map of its own (`--log-maps`), and a closure for `params` and `combine` per
 * row; here `params` is on the prototype and `combine` is the shape's. The copy is an array
 * rather than an object: an object copied key by key from a row of more than a dozen columns
 * became a dictionary too (rowObjectMaker).
 */
class RowPart implements WritePart {
  readonly rows: string[];
  readonly merge: Merge | undefined;

  constructor(
    readonly name: string,
    readonly text: string,
    private readonly cols: Column[],
    private readonly values: unknown[],
    /** An update's id, its first parameter; undefined for an insert. */
    private readonly id: string | undefined,
    row: string,
    merge: Merge | undefined,
  ) {
    this.rows = [row];
    this.merge = merge;
  }

  /** Computed when sent alone: in a group the row travels in the merged document instead. */
  get params(): unknown[] {
    const params: unknown[] = this.id === undefined ? [] : [this.id];
    for (let i = 0; i < this.cols.length; i++) params.push(toDriver(this.cols[i]!, this.values[i]));
    return params;
  }
}

// How each kind of write builds its statements and its merge, once per shape (shapeOf): module
// functions rather than closures made by every insertPart and updatePart call.
type Builder = (m: TableMeta, cols: Column[]) => { text: string; many: string };
type CombineOf = (m: TableMeta, shape: Shape, many: { name: string; text: string }) => Merge['combine'];

const insertStatements: Builder = (m, cols) => {
  const names = cols.map((c) => c.name).join(', ');
  return {
    text: `insert into ${m.table} (${names}) values (${cols.map((c, i) => `$${i + 1}::${c.sqlType}`).join(', ')})`,
    many: `insert into ${m.table} (${names}) select ${names} from ${populate(m.table)}`,
  };
};

const insertCombine: CombineOf = (m, { cols }, many) => {
  const idAt = cols.findIndex((c) => c.key === 'id');
  const rowObject = rowObjectMaker(cols);
  return (items) => {
    const rows = items as unknown[][];
    return {
      name: many.name,
      text: many.text,
      params: [JSON.stringify(rows.map((v) => rowObject(v)))],
      rows: rows.map((v) => `${m.table}:${String(v[idAt])}`),
    };
  };
};

const updateStatements: Builder = (m, cols) => {
  if (cols.length === 0) throw new Error(`empty update of ${m.table}`);
  const idCol = m.byKey.get('id')!;
  return {
    text: `update ${m.table} set ${cols.map((c, i) => `${c.name} = $${i + 2}::${c.sqlType}`).join(', ')} where ${idCol.name} = $1::${idCol.sqlType}`,
    // The ids again as an array: the rows are found through the primary key. Joined to the
    // document alone, the generic plan scanned the whole table (auto_explain).
    many: `update ${m.table} t set ${cols.map((c) => `${c.name} = r.${c.name}`).join(', ')} from ${populate(m.table)} r
        where t.${idCol.name} = any($2::${idCol.sqlType}[]) and t.${idCol.name} = r.${idCol.name}`,
  };
};

const updateCombine: CombineOf = (m, { cols }, many) => {
  // Each row's object with its id as the last member.
  const rowObject = rowObjectMaker(cols, m.byKey.get('id')!.name);
  return (items) => {
    const rows = items as { id: string; values: unknown[] }[];
    return {
      name: many.name,
      text: many.text,
      params: [JSON.stringify(rows.map((r) => rowObject(r.values, r.id))), rows.map((r) => r.id)],
      rows: rows.map((r) => `${m.table}:${r.id}`),
    };
  };
};

/** `insert into <table>` of one row; the columns are the row's defined keys. */
export function insertPart<T extends PgTable>(table: T, row: InferInsertModel<T>): WritePart {
  const r = row as Record<string, unknown>;
  const shape = shapeOf('ins', table, r, insertStatements, insertCombine);
  // A copy: the part is written later (alone or merged) with the row as it is now.
  const values = valuesOf(shape.cols, r);
  const merge = shape.combine && { key: shape.name, item: values, combine: shape.combine };
  return new RowPart(shape.name, shape.text, shape.cols, values, undefined, `${shape.table}:${String(r.id)}`, merge);
}

/** `insert into <table>` of many rows of one shape as one part: the merged form of insertPart. */
export function insertManyPart<T extends PgTable>(table: T, rows: InferInsertModel<T>[]): WritePart {
  const merges = rows.map((r) => insertPart(table, r).merge);
  const first = merges[0];
  if (!first || merges.some((m) => m?.key !== first.key))
    throw new Error(`insertManyPart needs rows of one shape that can travel as JSON (${getTableName(table)})`);
  return first.combine(merges.map((m) => m!.item));
}

/** `update <table> set ... where id = $1` of one row by id. */
export function updatePart<T extends PgTable>(table: T, id: string, patch: Partial<InferSelectModel<T>>): WritePart {
  const p = patch as Record<string, unknown>;
  const shape = shapeOf('upd', table, p, updateStatements, updateCombine);
  const values = valuesOf(shape.cols, p);
  const merge = shape.combine && { key: shape.name, item: { id, values }, combine: shape.combine };
  return new RowPart(shape.name, shape.text, shape.cols, values, id, `${shape.table}:${id}`, merge);
}

/**
 * A row read by hand-written SQL (column names as in the table, e.g. from `row_to_json`) in
 * Drizzle's shape: camelCase keys, Dates, parsed JSON.
 */
export function rowFrom<T extends PgTable>(table: T, raw: Record<string, unknown>): InferSelectModel<T> {
  const out: Record<string, unknown> = {};
  for (const c of meta(table).columns) {
    const v = raw[c.name];
    out[c.key] = v === null || v === undefined ? null : c.column.mapFromDriverValue(v);
  }
  return out as InferSelectModel<T>;
}
