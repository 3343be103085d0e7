// Builds and starts the enabled listeners; closes them in order on shutdown.
import type { ListenerName } from '../config.ts';
import type { AppContext } from '../context.ts';
import type { App } from '../http/server.ts';
import { buildAdminListener } from './admin.ts';
import { buildApiListener } from './api.ts';
import { buildCardListener } from './card.ts';
import { buildConsoleListener } from './console.ts';
import { buildPayListener } from './pay.ts';

export type Listeners = Partial<Record<ListenerName, App>>;

export async function buildListeners(ctx: AppContext): Promise<Listeners> {
  const out: Listeners = {};
  for (const name of ctx.config.enabledListeners) {
    if (name === 'api') out.api = (await buildApiListener(ctx)).app;
    if (name === 'card') out.card = await buildCardListener(ctx);
    if (name === 'pay') out.pay = await buildPayListener(ctx);
    if (name === 'admin') out.admin = await buildAdminListener(ctx);
    if (name === 'console') out.console = await buildConsoleListener(ctx);
  }
  return out;
}

/** Listens on every built listener; returns the bound addresses. */
export async function listen(ctx: AppContext, listeners: Listeners): Promise<Record<string, string>> {
  const bound: Record<string, string> = {};
  for (const [name, app] of Object.entries(listeners)) {
    // The admin listener binds to ADMIN_HOST (loopback by default), whatever HOST says.
    const host = name === 'admin' ? ctx.config.adminHost : ctx.config.host;
    const port = ctx.config.listeners[name as ListenerName].port;
    try {
      bound[name] = await app.listen({ host, port });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      throw new PortInUseError(name as ListenerName, host, port);
    }
  }
  return bound;
}

const PORT_VARIABLES: Record<ListenerName, string> = {
  api: 'PORT',
  card: 'CARD_PORT',
  pay: 'PAY_PORT',
  admin: 'ADMIN_PORT',
  console: 'CONSOLE_PORT',
};

/** A listener's port is taken: most often by a Coffer already running. */
export class PortInUseError extends Error {
  constructor(listener: ListenerName, host: string, port: number) {
    super(
      `${host}:${port} (${PORT_VARIABLES[listener]}, the ${listener} listener) is in use: is Coffer already running (npm start in another terminal)? Stop it, or give this process other ports (PORT, CARD_PORT, PAY_PORT, ADMIN_PORT, CONSOLE_PORT)`,
    );
    this.name = 'PortInUseError';
  }
}

/** Stops accepting connections and waits for in-flight requests on every listener. */
export async function closeListeners(listeners: Listeners): Promise<void> {
  await Promise.all(Object.values(listeners).map((app) => app.close()));
}
