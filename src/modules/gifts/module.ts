import type { Module } from '../module.ts';
import { giftRoutes, giftSimulationRoutes, schemas } from './routes.ts';

export const gifts: Module = {
  name: 'gifts',
  schemas,
  routes: giftRoutes,
  simulationRoutes: giftSimulationRoutes,
};
