import type { Module } from '../module.ts';
import { linkedAccountRoutes, linkedAccountSimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { retryDeactivations } from './domain.ts';

export const linkedAccounts: Module = {
  name: 'linked-accounts',
  schemas,
  routes: linkedAccountRoutes,
  simulationRoutes: linkedAccountSimulationRoutes,
  jobs: (ctx) => [
    {
      name: 'linked-account-deactivations',
      intervalMs: 30_000,
      run: () => retryDeactivations(ctx.db, { provider: ctx.providers.bankLinking, now: () => ctx.clock.now() }),
    },
  ],
};
