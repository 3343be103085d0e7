import type { Module } from '../module.ts';
import { walletRoutes, walletSimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const wallets: Module = {
  name: 'wallets',
  schemas,
  routes: walletRoutes,
  simulationRoutes: walletSimulationRoutes,
};
