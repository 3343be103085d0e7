import type { Module } from '../module.ts';
import { webhookRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const webhooks: Module = {
  name: 'webhooks',
  schemas,
  routes: webhookRoutes,
};
