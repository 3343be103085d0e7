import type { Module } from '../module.ts';
import { schemas as activitySchemas, walletActivityRoutes } from './activity.ts';
import { walletRoutes, walletSimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const wallets: Module = {
  name: 'wallets',
  schemas: [...schemas, ...activitySchemas],
  routes: async (api, ctx) => {
    await walletRoutes(api, ctx);
    await walletActivityRoutes(api, ctx);
  },
  simulationRoutes: walletSimulationRoutes,
};
