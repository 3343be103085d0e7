import type { Module } from '../module.ts';
import { userRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const users: Module = {
  name: 'users',
  schemas,
  routes: userRoutes,
};
