// The ledger invariant check on a schedule (the ledger-check job, LEDGER_CHECK_INTERVAL_S), its
// result and time in the metrics: an alert fires on violations, or when no check has finished
// for too long.
//
// The check reads the whole ledger, so a deployment runs it once per interval, not once in each
// of its processes: every check is recorded in ledger_checks, a process runs one only when the
// latest is an interval old (under a transaction's advisory lock, which a transaction-mode
// pooler keeps, so two processes that find it due at once do not both run it), and every
// process's gauges show the latest, whoever ran it.
import type { FastifyBaseLogger } from 'fastify';
import { desc, lt, sql } from 'drizzle-orm';
import { rowsOf, type Db, type Tx } from '../db/open.ts';
import { ledgerChecks } from '../db/schema.ts';
import { verifyLedger, type Violation } from './invariants.ts';
import {
  ledgerCheckDuration,
  ledgerCheckFailures,
  ledgerCheckTimestamp,
  ledgerCheckViolations,
} from '../observability/metrics.ts';

/** How many violations a check's row keeps, and the log line shows: a broken ledger could report thousands. */
const SAMPLE = 20;
/** How long checks' rows are kept. */
const KEPT_DAYS = 30;
const LOCK = sql`select pg_try_advisory_xact_lock(hashtext('coffer:ledger-check')) as locked`;

interface CheckRow {
  finishedAt: Date;
  durationMs: number;
  violations: number;
}

export interface LedgerCheckOptions {
  log: FastifyBaseLogger;
  now: () => Date;
}

/** Runs the check now and records it (the admin API's verify); returns the violations. */
export async function checkLedger(db: Db, opts: LedgerCheckOptions): Promise<Violation[]> {
  return counted(() => db.transaction((tx) => checkAndRecord(tx, opts), { isolationLevel: 'repeatable read' }));
}

/**
 * The job: runs the check when none has finished in the last `intervalMs` (by any process), and
 * shows the latest in the metrics. Returns 1 when it ran the check, 0 when it was not due or
 * another process was running it.
 */
export async function runDueLedgerCheck(db: Db, opts: LedgerCheckOptions & { intervalMs: number }): Promise<number> {
  const latest = await latestCheck(db);
  // A row more than an interval ahead of this process's clock is not trusted to mean "recent":
  // it would otherwise hold every check off until then.
  const age = latest ? opts.now().getTime() - latest.finishedAt.getTime() : Infinity;
  if (latest && Math.abs(age) < opts.intervalMs) {
    showInMetrics(latest);
    return 0;
  }
  const ran = await counted(() =>
    db.transaction(
      async (tx) => {
        const [lock] = rowsOf<{ locked: boolean }>(await tx.execute(LOCK));
        return lock?.locked ? checkAndRecord(tx, opts) : undefined;
      },
      { isolationLevel: 'repeatable read' },
    ),
  );
  return ran ? 1 : 0;
}

async function counted<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    ledgerCheckFailures.inc();
    throw err;
  }
}

/** In one repeatable-read transaction: the check reads one snapshot, and its row commits with it. */
async function checkAndRecord(tx: Tx, opts: LedgerCheckOptions): Promise<Violation[]> {
  const startedAt = opts.now();
  const started = performance.now();
  const violations = await verifyLedger(tx);
  const durationMs = Math.round(performance.now() - started);
  const finishedAt = new Date(startedAt.getTime() + durationMs);
  await tx
    .insert(ledgerChecks)
    .values({ startedAt, finishedAt, durationMs, violations: violations.length, sample: violations.slice(0, SAMPLE) });
  await tx
    .delete(ledgerChecks)
    .where(lt(ledgerChecks.finishedAt, new Date(finishedAt.getTime() - KEPT_DAYS * 86_400_000)));
  showInMetrics({ finishedAt, durationMs, violations: violations.length });
  if (violations.length > 0)
    opts.log.error(
      { violations: violations.slice(0, SAMPLE), count: violations.length },
      'the ledger invariant check found violations',
    );
  return violations;
}

async function latestCheck(db: Db): Promise<CheckRow | undefined> {
  const [row] = await db
    .select({
      finishedAt: ledgerChecks.finishedAt,
      durationMs: ledgerChecks.durationMs,
      violations: ledgerChecks.violations,
    })
    .from(ledgerChecks)
    .orderBy(desc(ledgerChecks.finishedAt))
    .limit(1);
  return row;
}

export type RecordedCheck = typeof ledgerChecks.$inferSelect;

/** The checks recorded last, newest first (the admin API's list). */
export async function recentLedgerChecks(db: Db, limit: number): Promise<RecordedCheck[]> {
  return db.select().from(ledgerChecks).orderBy(desc(ledgerChecks.id)).limit(limit);
}

function showInMetrics(check: CheckRow): void {
  ledgerCheckDuration.set(check.durationMs / 1000);
  ledgerCheckViolations.set(check.violations);
  ledgerCheckTimestamp.set(check.finishedAt.getTime() / 1000);
}
