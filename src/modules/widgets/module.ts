import type { Module } from '../module.ts';
import { schemas, widgetRoutes } from './routes.ts';

export const widgets: Module = {
  name: 'widgets',
  schemas,
  routes: widgetRoutes,
};
