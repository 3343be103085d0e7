// A throwaway PostgreSQL cluster that a test owns and may stop, start and restart (the shared
// server on 5432 must never be restarted under other tests). Needs Debian's PostgreSQL server
// binaries; as root, the cluster runs as the `postgres` user, as PostgreSQL requires.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './process.ts';

const run = promisify(execFile);

/** The newest `/usr/lib/postgresql/<v>/bin` holding initdb and pg_ctl, if any. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')) && existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  const newest = versions.at(-1);
  return newest ? path.join(root, newest, 'bin') : undefined;
}

export interface Cluster {
  url: string;
  port: number;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: open sessions are ended, in-flight transactions roll back. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startCluster(bin: string): Promise<Cluster> {
  const root = await mkdtemp(path.join(tmpdir(), 'coffer-pg-'));
  const data = path.join(root, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off`;
  const cluster: Cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start: async () => {
      await pg('pg_ctl', ['-D', data, '-l', path.join(root, 'log'), '-w', '-o', options, 'start']);
    },
    stop: async () => {
      await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    destroy: async () => {
      await cluster.stop().catch(() => {});
      await rm(root, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
