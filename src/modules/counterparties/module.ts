import type { Module } from '../module.ts';
import { counterpartyRoutes, counterpartySimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { PAYOUT_BATCH, sendPendingPayouts } from './payouts.ts';

export const counterparties: Module = {
  name: 'counterparties',
  schemas,
  routes: counterpartyRoutes,
  simulationRoutes: counterpartySimulationRoutes,
  jobs: (ctx) => [
    {
      name: 'counterparty-payouts',
      intervalMs: 250,
      batch: PAYOUT_BATCH,
      run: () =>
        sendPendingPayouts(ctx.db, {
          provider: ctx.providers.bankTransfers,
          sealer: ctx.sealer,
          now: () => ctx.clock.now(),
          log: ctx.log,
        }),
    },
  ],
};
