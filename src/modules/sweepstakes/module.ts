import type { Module } from '../module.ts';
import { sweepstakesRoutes } from './routes.ts';

export const sweepstakes: Module = {
  name: 'sweepstakes',
  routes: sweepstakesRoutes,
};
