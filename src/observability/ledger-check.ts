// The ledger invariant check on a schedule (a job of the jobs runner, LEDGER_CHECK_INTERVAL_S),
// its result and time in the metrics: an alert fires on violations, or when no check has
// finished for too long.
import type { FastifyBaseLogger } from 'fastify';
import type { Executor } from '../db/open.ts';
import { verifyLedger, type Violation } from '../ledger/invariants.ts';
import { ledgerCheckDuration, ledgerCheckFailures, ledgerCheckTimestamp, ledgerCheckViolations } from './metrics.ts';

/** Checks the ledger and records the outcome in the metrics; returns the violations. */
export async function checkLedger(db: Executor, log: FastifyBaseLogger): Promise<Violation[]> {
  const started = performance.now();
  let violations: Violation[];
  try {
    violations = await verifyLedger(db);
  } catch (err) {
    ledgerCheckFailures.inc();
    throw err;
  }
  ledgerCheckDuration.set((performance.now() - started) / 1000);
  ledgerCheckViolations.set(violations.length);
  ledgerCheckTimestamp.set(Date.now() / 1000);
  // The first few only: a broken ledger could report thousands.
  if (violations.length > 0) log.error({ violations: violations.slice(0, 20), count: violations.length }, 'the ledger invariant check found violations');
  return violations;
}
