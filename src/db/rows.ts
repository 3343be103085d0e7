// Rows of Drizzle tables as parts of a write batch, and raw rows read back into Drizzle's shape.
//
// The hot paths read everything they need in one hand-written statement and write everything
// in one batch (db/batch.ts); these helpers let them do so with the same tables, column
// names, encodings and TypeScript types as the Drizzle queries elsewhere, instead of
// hand-written column lists that drift from the schema.
import { createHash } from 'node:crypto';
import { getTableColumns, getTableName, type InferInsertModel, type InferSelectModel } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { WritePart } from './batch.ts';

interface Column {
  key: string;
  name: string;
  sqlType: string;
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
    const columns = Object.entries(getTableColumns(table)).map(([key, column]) => ({ key, name: column.name, sqlType: column.getSQLType(), column: column as PgColumn }));
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
 * A row as a JSON document for json_populate_recordset (column names as keys; json columns as
 * their value, not as a string). Undefined when a column cannot travel as JSON (bytea).
 */
function jsonRow(cols: Column[], values: Record<string, unknown>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const c of cols) {
    const v = values[c.key];
    if (c.sqlType === 'bytea') return undefined;
    out[c.name] = v === null || c.sqlType === 'jsonb' || c.sqlType === 'json' ? v : toDriver(c, v);
  }
  return out;
}

// Many rows of one shape go as one JSON document read by json_populate_recordset with the
// table's own row type: one statement and one prepared plan whatever the number of rows.
const populate = (table: string) => `json_populate_recordset(null::${table}, $1::json)`;

/** `insert into <table>` of one row; the columns are the row's defined keys. */
export function insertPart<T extends PgTable>(table: T, row: InferInsertModel<T>): WritePart {
  const m = meta(table);
  const values = row as Record<string, unknown>;
  const cols = m.columns.filter((c) => values[c.key] !== undefined);
  const names = cols.map((c) => c.name).join(', ');
  const text = `insert into ${m.table} (${names}) values (${cols.map((c, i) => `$${i + 1}::${c.sqlType}`).join(', ')})`;
  const name = shapeName(`ins_${m.table}`, text);
  const item = jsonRow(cols, values);
  return {
    name,
    text,
    params: cols.map((c) => toDriver(c, values[c.key])),
    rows: [`${m.table}:${String(values.id)}`],
    ...(item && {
      merge: {
        key: name,
        item,
        combine: (items) => ({
          name: `${name}_many`,
          text: `insert into ${m.table} (${names}) select ${names} from ${populate(m.table)}`,
          params: [JSON.stringify(items)],
          rows: items.map((r) => `${m.table}:${String((r as Record<string, unknown>).id)}`),
        }),
      },
    }),
  };
}

/** `update <table> set ... where id = $1` of one row by id. */
export function updatePart<T extends PgTable>(table: T, id: string, patch: Partial<InferSelectModel<T>>): WritePart {
  const m = meta(table);
  const values = patch as Record<string, unknown>;
  const cols = m.columns.filter((c) => values[c.key] !== undefined);
  if (cols.length === 0) throw new Error(`empty update of ${m.table}`);
  const idCol = m.byKey.get('id')!;
  const text = `update ${m.table} set ${cols.map((c, i) => `${c.name} = $${i + 2}::${c.sqlType}`).join(', ')} where ${idCol.name} = $1::${idCol.sqlType}`;
  const name = shapeName(`upd_${m.table}`, text);
  const item = jsonRow(cols, values);
  return {
    name,
    text,
    params: [id, ...cols.map((c) => toDriver(c, values[c.key]))],
    rows: [`${m.table}:${id}`],
    ...(item && {
      merge: {
        key: name,
        item: { ...item, [idCol.name]: id },
        combine: (items) => ({
          name: `${name}_many`,
          // The ids again as an array: the rows are found through the primary key. Joined to
          // the document alone, the generic plan scanned the whole table (auto_explain).
          text: `update ${m.table} t set ${cols.map((c) => `${c.name} = r.${c.name}`).join(', ')} from ${populate(m.table)} r
            where t.${idCol.name} = any($2::${idCol.sqlType}[]) and t.${idCol.name} = r.${idCol.name}`,
          params: [JSON.stringify(items), items.map((r) => (r as Record<string, unknown>)[idCol.name])],
          rows: items.map((r) => `${m.table}:${String((r as Record<string, unknown>)[idCol.name])}`),
        }),
      },
    }),
  };
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

/** The table's columns as `alias.col` for a select list, in schema order. */
export function columnsOf(table: PgTable, alias: string): string {
  return meta(table)
    .columns.map((c) => `${alias}.${c.name}`)
    .join(', ');
}
