import type { Module } from '../module.ts';
import { maintainRequestLog, REQUEST_LOG_PURGE_BATCH } from './retention.ts';

export const requestLog: Module = {
  name: 'request-log',
  jobs: (ctx) => [
    // Written every 50 ms, so a request's row leaves memory before most young-generation
    // collections find it (every row still buffered is copied by each one).
    { name: 'request-log-flush', intervalMs: 50, run: () => ctx.requestLog.flush(ctx.db) },
    // Its weeks, as the events' (retention.ts): by the real clock, as its ids.
    {
      name: 'request-log-retention',
      intervalMs: 600_000,
      firstRunMs: 0,
      batch: REQUEST_LOG_PURGE_BATCH,
      run: async () =>
        (
          await maintainRequestLog(ctx.db, {
            now: new Date(),
            retentionDays: ctx.config.console.requestLogRetentionDays,
          })
        ).deleted,
    },
  ],
};
