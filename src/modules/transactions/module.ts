import type { Module } from '../module.ts';
import { transactionRoutes, transactionSimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { PULL_BATCH, sendPendingPulls } from './domain.ts';

export const transactions: Module = {
  name: 'transactions',
  schemas,
  routes: transactionRoutes,
  simulationRoutes: transactionSimulationRoutes,
  jobs: (ctx) => [
    {
      name: 'bank-pulls',
      intervalMs: 250,
      batch: PULL_BATCH,
      run: () =>
        sendPendingPulls(ctx.db, { provider: ctx.providers.bankTransfers, now: () => ctx.clock.now(), log: ctx.log }),
    },
  ],
};
