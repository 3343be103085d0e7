// What a module adds to the application, declared in its own module.ts: schemas and routes on
// the API listener, sandbox simulation routes, background jobs. src/modules/index.ts lists the
// modules; the API listener and app.ts loop over that list.
import type { TSchema } from 'typebox';
import type { AppContext } from '../context.ts';
import type { App } from '../http/server.ts';
import type { Job } from '../jobs/runner.ts';

export interface Module {
  name: string;
  /** Shared schemas its routes reference by $id. */
  schemas?: readonly TSchema[];
  /** Its routes under /api/v1, behind merchant authentication. */
  routes?: (api: App, ctx: AppContext) => Promise<void>;
  /** Routes that exist only in the sandbox (404 in live). */
  simulationRoutes?: (api: App, ctx: AppContext) => Promise<void>;
  /** Its background jobs, run by processes with WORKERS=true. */
  jobs?: (ctx: AppContext) => Job[];
}
