import type { Module } from '../module.ts';
import { counterpartyTransferRoutes } from './routes.ts';
import { schemas } from './schemas.ts';

export const counterpartyTransfers: Module = {
  name: 'counterparty-transfers',
  schemas,
  routes: counterpartyTransferRoutes,
};
