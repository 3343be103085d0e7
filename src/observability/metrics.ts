// Prometheus metrics of this process (docs/operations.md#metrics). One registry per process:
// every listener, job and database handle of the process counts into it, and GET /metrics on
// the admin listener shows it. Several processes each show their own; Prometheus adds them up.
//
// Hot paths only increment: labels are small closed sets (a route template, a method, a status,
// a kind of movement), never an id, a secret or an amount, and the children of the per-request
// metrics are looked up in nested maps instead of from a label object each time.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();

// Node's own: CPU, memory, heap, GC, handles and the event loop's lag (nodejs_eventloop_lag_*).
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// ----- HTTP -------------------------------------------------------------------------------

const httpRequests = new Counter({
  name: 'coffer_http_requests_total',
  help: 'HTTP requests answered, by listener, route template, method and status.',
  labelNames: ['listener', 'route', 'method', 'status'] as const,
  registers: [registry],
});
const httpDuration = new Histogram({
  name: 'coffer_http_request_duration_seconds',
  help: 'Time from receiving a request to the end of its response, by listener, route template and method.',
  labelNames: ['listener', 'route', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

type CounterChild = ReturnType<typeof httpRequests.labels>;
type HistogramChild = ReturnType<typeof httpDuration.labels>;
interface RouteMetrics {
  duration: HistogramChild;
  byStatus: Map<number, CounterChild>;
}

/** A listener's request metrics; `route` is the matched route's template ('unmatched' for 404s without a route). */
export function httpMetrics(
  listener: string,
): (route: string, method: string, status: number, seconds: number) => void {
  const routes = new Map<string, Map<string, RouteMetrics>>();
  return (route, method, status, seconds) => {
    let byMethod = routes.get(route);
    if (!byMethod) routes.set(route, (byMethod = new Map()));
    let m = byMethod.get(method);
    if (!m) byMethod.set(method, (m = { duration: httpDuration.labels(listener, route, method), byStatus: new Map() }));
    let c = m.byStatus.get(status);
    if (!c) m.byStatus.set(status, (c = httpRequests.labels(listener, route, method, String(status))));
    c.inc();
    m.duration.observe(seconds);
  };
}

export const connectionsCut = new Counter({
  name: 'coffer_http_connections_cut_total',
  help: 'Connections reset because the client stopped reading a response for WRITE_TIMEOUT_MS (write_timeout) or pipelined past MAX_PIPELINED_REQUESTS (pipelining), by listener.',
  labelNames: ['listener', 'reason'] as const,
  registers: [registry],
});

export const rateLimitRefusals = new Counter({
  name: 'coffer_rate_limit_refusals_total',
  help: 'Requests refused with 429 by a rate limit, by listener.',
  labelNames: ['listener'] as const,
  registers: [registry],
});

export const idempotentReplays = new Counter({
  name: 'coffer_idempotent_replays_total',
  help: 'Requests answered with the stored outcome of an earlier request with the same idempotency key.',
  registers: [registry],
});

export const idempotencyConflicts = new Counter({
  name: 'coffer_idempotency_conflicts_total',
  help: 'Requests refused with 409 over their idempotency key: IdempotencyKeyInUse (still running) or IdempotencyKeyReused (other attributes).',
  labelNames: ['code'] as const,
  registers: [registry],
});

// ----- money ------------------------------------------------------------------------------

const moneyMovements = new Counter({
  name: 'coffer_money_movements_total',
  help: 'Ledger movements by kind (deposit.initiate, payment.capture, withdraw, ...) and outcome: committed, or refused for insufficient funds.',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

const movementChildren = new Map<string, { inc(): void }>();
/** Counts one movement (a ledger entry's kind is one of a fixed set in the code, never input). */
export function countMovement(kind: string, outcome: 'committed' | 'insufficient_funds'): void {
  const key = outcome === 'committed' ? kind : `${kind}\u0000${outcome}`;
  let c = movementChildren.get(key);
  if (!c) movementChildren.set(key, (c = moneyMovements.labels(kind, outcome)));
  c.inc();
}

export const authorizations = new Counter({
  name: 'coffer_authorizations_total',
  help: 'Payment intent authorizations decided, by outcome: approved, declined, requires_action (replays not counted).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const groupCommitSize = new Histogram({
  name: 'coffer_group_commit_size',
  help: 'Requests served by one group-commit transaction (src/db/groups.ts), by kind of write.',
  labelNames: ['kind'] as const,
  buckets: [1, 2, 4, 8, 16, 32, 64, 100],
  registers: [registry],
});

// ----- database ---------------------------------------------------------------------------

export const dbQueryDuration = new Histogram({
  name: 'coffer_db_query_duration_seconds',
  help: 'Time of each database statement, from sending it to its result (waiting for a connection not included).',
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});
export const dbPoolInUse = new Gauge({
  name: 'coffer_db_pool_in_use',
  help: 'Database connections running a statement or transaction (PGlite: 1 while busy).',
  registers: [registry],
});
export const dbPoolWaiting = new Gauge({
  name: 'coffer_db_pool_waiting',
  help: 'Requests for a database connection waiting for one to be free.',
  registers: [registry],
});

// ----- webhooks ---------------------------------------------------------------------------

export const webhookDueDeliveries = new Gauge({
  name: 'coffer_webhook_due_deliveries',
  help: 'Webhook deliveries due now and not yet attempted (the backlog), read from the database at scrape time.',
  registers: [registry],
});
export const webhookOldestUndeliveredAge = new Gauge({
  name: 'coffer_webhook_oldest_undelivered_age_seconds',
  help: 'Age of the oldest webhook delivery still pending (0 when none is), read from the database at scrape time.',
  registers: [registry],
});
export const webhookAttempts = new Counter({
  name: 'coffer_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, retried later), failed (no retries left), canceled (webhook disabled or deleted), inconclusive (timed out while the process stood still; sent again).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

// ----- background jobs --------------------------------------------------------------------

export const jobRunDuration = new Histogram({
  name: 'coffer_job_run_duration_seconds',
  help: 'Time of each run of a background job (src/jobs/runner.ts), by job, failed runs included.',
  labelNames: ['job'] as const,
  buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120],
  registers: [registry],
});
export const jobItems = new Counter({
  name: 'coffer_job_items_total',
  help: 'Items a background job handled (deliveries attempted, payments settled, tables vacuumed, rows purged), by job.',
  labelNames: ['job'] as const,
  registers: [registry],
});
export const jobFailures = new Counter({
  name: 'coffer_job_failures_total',
  help: 'Runs of a background job that ended in an error (logged as "job failed"), by job.',
  labelNames: ['job'] as const,
  registers: [registry],
});

// ----- the request log --------------------------------------------------------------------

export const requestLogDropped = new Counter({
  name: 'coffer_request_log_dropped_total',
  help: "Requests the console's request log did not keep, by reason: full (the buffer was full while the database fell behind) or refused (PostgreSQL refused the row; the rest of its batch is written).",
  labelNames: ['reason'] as const,
  registers: [registry],
});

// ----- KYC and the ledger check -------------------------------------------------------------

export const kycDecisions = new Counter({
  name: 'coffer_kyc_decisions_total',
  help: 'KYC application status changes applied from the provider, by the new status.',
  labelNames: ['status'] as const,
  registers: [registry],
});

export const ledgerCheckTimestamp = new Gauge({
  name: 'coffer_ledger_invariant_check_timestamp_seconds',
  help: 'When the latest ledger invariant check of the deployment finished, whichever process ran it (Unix time; 0: none seen yet).',
  registers: [registry],
});
export const ledgerCheckViolations = new Gauge({
  name: 'coffer_ledger_invariant_check_violations',
  help: 'Violations the latest ledger invariant check found (0: the ledger is sound).',
  registers: [registry],
});
export const ledgerCheckDuration = new Gauge({
  name: 'coffer_ledger_invariant_check_duration_seconds',
  help: 'How long the latest ledger invariant check took.',
  registers: [registry],
});
export const ledgerCheckFailures = new Counter({
  name: 'coffer_ledger_invariant_check_errors_total',
  help: 'Ledger invariant checks this process started that could not run to the end (a database error).',
  registers: [registry],
});

/** Every metric name the registry shows (the rules and dashboard test compares against these). */
export function metricNames(): string[] {
  return registry.getMetricsAsArray().map((m) => m.name);
}
