// Key rotation's second half: every sealed value not yet in the current format under the
// current key (a v1 value, or one sealed with a key now in CARD_ENCRYPTION_OLD_KEYS) is opened
// and sealed again with the current key. Once none is left, the old key can be dropped
// (docs/operations.md). Each row is rewritten only if it still holds what was read, so
// processes running this at once never overwrite each other.
import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { rowsOf, type Executor } from './open.ts';
import type { Sealer, SealPurpose } from '../crypto/sealer.ts';

interface SealedColumn {
  table: string;
  column: string;
  purpose: SealPurpose;
  /** Where the value is kept, as its seal() was told. */
  context: (id: string) => string;
}

/** Every sealed column, with the context its values are sealed under. */
const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'webhooks', column: 'secret_sealed', purpose: 'webhook-secret', context: (id) => `webhooks:${id}` },
  {
    table: 'counterparties',
    column: 'account_number_sealed',
    purpose: 'bank-account',
    context: (id) => `counterparties:${id}`,
  },
  { table: 'virtual_cards', column: 'number_sealed', purpose: 'card', context: (id) => `virtual_cards:${id}:number` },
  { table: 'virtual_cards', column: 'cvc_sealed', purpose: 'card', context: (id) => `virtual_cards:${id}:cvc` },
];

const BATCH = 200;

/**
 * One pass over every sealed column: re-seals what is not current. Values no configured key
 * opens are left as they are and counted.
 */
export async function resealOldValues(
  db: Executor,
  opts: { sealer: Sealer; log: FastifyBaseLogger },
): Promise<{ resealed: number; unreadable: number }> {
  let resealed = 0;
  let unreadable = 0;
  for (const c of SEALED_COLUMNS) {
    const table = sql.identifier(c.table);
    const column = sql.identifier(c.column);
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = rowsOf<{ id: string; value: string }>(
        await db.execute(sql`
          select id, ${column} as value from ${table}
          where id > ${after}::uuid and not starts_with(${column}, ${opts.sealer.currentPrefix})
          order by id limit ${BATCH}`),
      );
      for (const { id, value } of rows) {
        let fresh: string;
        try {
          fresh = opts.sealer.seal(opts.sealer.open(value, c.purpose, c.context(id)), c.purpose, c.context(id));
        } catch {
          unreadable++;
          continue;
        }
        await db.execute(sql`update ${table} set ${column} = ${fresh} where id = ${id}::uuid and ${column} = ${value}`);
        resealed++;
      }
      if (rows.length < BATCH) break;
      after = rows.at(-1)!.id;
    }
  }
  if (resealed > 0 || unreadable > 0) {
    opts.log[unreadable > 0 ? 'warn' : 'info'](
      { resealed, unreadable, keyId: opts.sealer.keyId },
      unreadable > 0
        ? 'sealed values that no configured key opens were left as they are'
        : 'sealed values moved to the current encryption key',
    );
  }
  return { resealed, unreadable };
}
