// Profiling one list page (a developer's tool, not a benchmark):
//   PROFILE_DB=<url of a database kept by `LISTS_KEEP=1 npm run bench -- lists`> \
//     node --import tsx bench/profile-list.ts '/api/v1/users?page[limit]=10' [seconds]
// Starts a server on that database with --cpu-prof (PROFILE_NODE_ARGS replaces it), gives the
// seeded merchant a new secret through the admin API, loads the page at 50 connections
// (PROFILE_CONNECTIONS) and prints the figures; the CPU profile lands in /tmp/prof. PROFILE_ENV
// (JSON) adds to the server's environment, e.g. '{"LOG_LEVEL":"info"}'.
import pg from 'pg';
import { json, load, profileEnv, startCoffer } from './lib.ts';

const pathAndQuery = process.argv[2] ?? '/api/v1/users';
const seconds = Number(process.argv[3] ?? 10);
const databaseUrl = process.env.PROFILE_DB;
if (!databaseUrl) throw new Error('PROFILE_DB: the URL of a database kept by LISTS_KEEP=1 npm run bench -- lists');
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
const { rows } = await db.query<{ id: string }>(
  `select c.id from clients c join users u on u.client_id = c.id limit 1`,
);
await db.end();
const clientId = rows[0]!.id;
const coffer = await startCoffer({
  databaseUrl,
  env: { LOG_LEVEL: 'warn', EVENT_RETENTION_DAYS: '60', ...profileEnv() },
  nodeArgs: process.env.PROFILE_NODE_ARGS?.split(' ').filter(Boolean) ?? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'],
});
try {
  const secret = await json(`${coffer.adminUrl}/admin/v1/clients/${clientId}/secrets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${coffer.adminToken}` },
    body: '{}',
  });
  const auth = { 'client-id': clientId, authorization: `Bearer ${secret.data.attributes.secret as string}` };
  console.log(
    await load(`GET ${pathAndQuery}`, {
      url: `${coffer.url}${pathAndQuery}`,
      headers: auth,
      serverPid: coffer.proc.pid,
      connections: Number(process.env.PROFILE_CONNECTIONS ?? 50),
      durationS: seconds,
    }),
  );
} finally {
  await coffer.stop();
}
