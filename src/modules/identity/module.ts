import type { Module } from '../module.ts';
import { identityRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const identity: Module = {
  name: 'identity',
  schemas,
  routes: identityRoutes,
};
