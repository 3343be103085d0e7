import type { Module } from '../module.ts';
import { schemas, withdrawalRoutes } from './routes.ts';
import { PUSH_BATCH, sendPendingPushes } from './domain.ts';

export const withdrawals: Module = {
  name: 'withdrawals',
  schemas,
  routes: withdrawalRoutes,
  jobs: (ctx) => [
    {
      name: 'bank-pushes',
      intervalMs: 250,
      batch: PUSH_BATCH,
      run: () =>
        sendPendingPushes(ctx.db, { provider: ctx.providers.bankTransfers, now: () => ctx.clock.now(), log: ctx.log }),
    },
  ],
};
