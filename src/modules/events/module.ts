import type { Module } from '../module.ts';
import { eventRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { deliveryQueueVacuum } from '../../db/maintenance.ts';
import { maintainEventPartitions, RETENTION_BATCH } from './partitions.ts';

export const events: Module = {
  name: 'events',
  schemas,
  routes: eventRoutes,
  jobs: (ctx) => [
    { name: 'webhook-delivery', intervalMs: ctx.config.webhooks.pollMs, run: () => ctx.webhooks.runOnce() },
    { name: 'webhook-queue-vacuum', intervalMs: 5_000, run: deliveryQueueVacuum(ctx.db) },
    // Weeks of events, deliveries and attempts are created ahead and dropped past the retention
    // (partitions.ts). By the real clock, as the ids the weeks are made of.
    {
      name: 'event-retention',
      intervalMs: 600_000,
      firstRunMs: 0,
      batch: RETENTION_BATCH,
      run: async () =>
        (
          await maintainEventPartitions(ctx.db, {
            now: new Date(),
            retentionDays: ctx.config.webhooks.eventRetentionDays,
          })
        ).deleted,
    },
  ],
};
