// A PgBouncer in transaction mode in front of a PostgreSQL server, owned by one test: Coffer
// processes connect to it instead of the server (docs/scaling.md#behind-pgbouncer). Needs
// Debian's pgbouncer (.ci/run installs it). PgBouncer refuses to run as root, so as root it
// runs as the `postgres` user.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_DATABASE_TIMEOUTS } from '../config.ts';
import { freePort } from './process.ts';

const run = promisify(execFile);
const t = DEFAULT_DATABASE_TIMEOUTS;
/** What docs/scaling.md#behind-pgbouncer sets on each server connection. */
const SERVER_SETTINGS = `SET jit = off; SET statement_timeout = ${t.statementMs}; SET lock_timeout = ${t.lockMs}; SET idle_in_transaction_session_timeout = ${t.idleInTransactionMs}`;
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** Why PgBouncer tests cannot run here, or false when they can (REQUIRE_PGBOUNCER makes a missing binary a failure). */
export function pgbouncerSkip(requireIt: boolean): string | false {
  if (existsSync(PGBOUNCER) || requireIt) return false;
  return `no PgBouncer at ${PGBOUNCER} (.ci/run installs Debian's pgbouncer)`;
}

export interface Bouncer {
  port: number;
  /** Its log (removed by stop). */
  logFile: string;
  /** `url` with its host and port replaced by PgBouncer's. */
  through(url: string): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer (transaction pooling) forwarding every database name to `upstream`'s server.
 * `settings` adds or overrides lines of its [pgbouncer] section (the chaos campaign retries
 * server logins every second instead of every 15, so a PostgreSQL restart costs seconds).
 */
export async function startPgBouncer(
  upstream: string,
  settings: Record<string, string | number> = {},
): Promise<Bouncer> {
  const server = new URL(upstream);
  const dir = await mkdtemp(path.join(tmpdir(), 'coffer-pgbouncer-'));
  const port = await freePort();
  const user = decodeURIComponent(server.username || 'postgres');
  const base: Record<string, string | number> = {
    listen_addr: '127.0.0.1',
    listen_port: port,
    unix_socket_dir: dir,
    pool_mode: 'transaction',
    auth_type: 'trust',
    auth_file: path.join(dir, 'users.txt'),
    ignore_startup_parameters: 'options,extra_float_digits',
    max_client_conn: 500,
    default_pool_size: 20,
    server_lifetime: 3600,
    logfile: path.join(dir, 'pgbouncer.log'),
  };
  const ini = [
    '[databases]',
    // Every database name goes to the same server; jit off and the default timeouts as Coffer's
    // own pool asks for them (PgBouncer does not pass the `options` startup parameter on).
    `* = host=${server.hostname} port=${server.port || 5432} connect_query='${SERVER_SETTINGS}'`,
    '[pgbouncer]',
    ...Object.entries({ ...base, ...settings }).map(([k, v]) => `${k} = ${v}`),
  ].join('\n');
  await writeFile(path.join(dir, 'pgbouncer.ini'), `${ini}\n`);
  await writeFile(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  let ids: { uid: number; gid: number } | undefined;
  if (userInfo().uid === 0) {
    ids = {
      uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
      gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
    };
    for (const f of ['', 'pgbouncer.ini', 'users.txt']) await chown(path.join(dir, f), ids.uid, ids.gid);
  }
  // Spawned as the user itself (not through runuser) so that the stop signal reaches it.
  const proc: ChildProcess = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...ids });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await waitForPort(port, exited);
  return {
    port,
    logFile: path.join(dir, 'pgbouncer.log'),
    through(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async stop() {
      proc.kill('SIGINT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, exited: Promise<void>): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (gone) throw new Error('pgbouncer exited at start');
    const open = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`pgbouncer did not listen on ${port}`);
}
