// Which environment a database belongs to. The first process to start on a database writes
// its COFFER_ENV into the one-row `deployment` table; every later start compares. A live
// process pointed at a sandbox database (whose merchants hold sandbox secrets and whose money
// is play money), or the reverse, refuses to start.
import { sql } from 'drizzle-orm';
import type { Environment } from '../config.ts';
import { deployment } from './schema.ts';
import type { Executor } from './open.ts';

export class EnvironmentMismatchError extends Error {
  constructor(
    readonly database: string,
    readonly process: Environment,
  ) {
    super(
      `this database belongs to the ${database} environment; a ${process} process (COFFER_ENV=${process}) refuses to start on it`,
    );
    this.name = 'EnvironmentMismatchError';
  }
}

/** Records the environment on first start; throws EnvironmentMismatchError when it differs. */
export async function claimDatabaseEnvironment(
  db: Executor,
  opts: { environment: Environment; now: Date },
): Promise<void> {
  await db
    .insert(deployment)
    .values({ id: true, environment: opts.environment, createdAt: opts.now })
    .onConflictDoNothing();
  const [row] = await db.select({ environment: deployment.environment }).from(deployment).where(sql`${deployment.id}`);
  if (row && row.environment !== opts.environment)
    throw new EnvironmentMismatchError(row.environment, opts.environment);
}
