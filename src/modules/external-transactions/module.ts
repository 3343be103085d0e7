import type { Module } from '../module.ts';
import { externalTransactionRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const externalTransactions: Module = {
  name: 'external-transactions',
  schemas,
  routes: externalTransactionRoutes,
};
