// `npm run chaos -- --minutes N --seed S [--processes 3] [--clients 8] [--postgres own|shared] [--pooler pgbouncer|none]`:
// a randomized fault campaign against Coffer with a history checker (docs/operations.md, "Chaos
// campaign"). Exits 1 when the checker finds an anomaly; the seed replays the schedule.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { postgresBin } from '../src/test/cluster.ts';
import { PGBOUNCER } from '../src/test/pgbouncer.ts';
import { runCampaign } from './campaign.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3' },
    seed: { type: 'string' },
    processes: { type: 'string', default: '3' },
    clients: { type: 'string', default: '8' },
    postgres: { type: 'string' },
    pooler: { type: 'string' },
    out: { type: 'string', default: fileURLToPath(new URL('./results/', import.meta.url)) },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const postgres = values.postgres ?? (postgresBin() ? 'own' : 'shared');
const pooler = values.pooler ?? (existsSync(PGBOUNCER) ? 'pgbouncer' : 'none');
if (pooler !== 'pgbouncer' && pooler !== 'none') throw new Error(`--pooler is pgbouncer or none, not ${pooler}`);
if (postgres !== 'own' && postgres !== 'shared') throw new Error(`--postgres is own or shared, not ${postgres}`);
const log = (line: string) => process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
log(
  `seed ${seed}, ${values.minutes} min, ${values.processes} processes, ${values.clients} clients, postgres ${postgres}, pooler ${pooler}`,
);
const result = await runCampaign({
  minutes: Number(values.minutes),
  seed,
  processes: Number(values.processes),
  clients: Number(values.clients),
  ownPostgres: postgres === 'own',
  pooler,
  serverUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  outDir: values.out!,
  log,
});
const summary = { ...result, anomalies: result.anomalies.length, firstAnomalies: result.anomalies.slice(0, 50) };
await writeFile(path.join(path.dirname(result.historyFile), 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
log(`operations: ${JSON.stringify(result.operations)}`);
log(
  `faults: ${JSON.stringify(result.faults)}; COMMITs cut ${JSON.stringify(result.commitsCut)}; webhook requests ${result.hooks} for ${result.events} events`,
);
log(`history: ${path.relative(process.cwd(), result.historyFile)}`);
if (result.anomalies.length) {
  log(`FAILED: ${result.anomalies.length} anomalies; replay with --seed ${seed}`);
  process.exit(1);
}
log(`passed (seed ${seed})`);
process.exit(0);
