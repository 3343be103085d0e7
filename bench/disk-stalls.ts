// Disk stalls beside the benchmark's rows. A commit waits for its fsync; when the filesystem
// holds every fsync for tens of milliseconds (the slower benchmark host's does, every few
// seconds while files grow: docs/benchmarks.md#the-disks-stalls), every commit in flight waits
// together, and the requests behind them too. In a diagnostic run (BENCH_TAIL, and the
// profilers) an fsync probe (fsync-probe.ts) runs on the filesystem of PostgreSQL's data
// directory, and each row counts the probe's stalls during its timed part: a row's slowest
// responses are then seen beside the disk's.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** An fsync this slow or slower is a stall: on an idle disk here one takes about 0.1 ms (p99 0.15 ms). */
export const STALL_MS = 20;

export interface DiskStall {
  /** Epoch ms the fsync started. */
  at: number;
  ms: number;
}

let probe: { proc: ChildProcess; stalls: DiskStall[] } | undefined;

/**
 * A directory on the filesystem of PostgreSQL's `dataDirectory` that this process may write in:
 * its parent, else the system's temporary directory if it is on the same filesystem. Undefined
 * when there is none (a database on another machine, say) or the directory is unknown.
 */
function probeDirectory(dataDirectory: string | undefined): string | undefined {
  if (dataDirectory === undefined) return undefined;
  let device: number;
  try {
    device = statSync(dataDirectory).dev;
  } catch {
    return undefined;
  }
  return [path.dirname(dataDirectory), os.tmpdir()].find((d) => {
    try {
      accessSync(d, constants.W_OK);
      return statSync(d).dev === device;
    } catch {
      return false;
    }
  });
}

/**
 * Starts the probe beside the data directory of the PostgreSQL server at `serverUrl` (the
 * setting needs a superuser or pg_read_all_settings), or without a server in the system's
 * temporary directory, where PGlite's data lives (once per benchmark process); false when it
 * cannot.
 */
export async function startDiskProbe(serverUrl?: string): Promise<boolean> {
  if (probe) return true;
  const dir = serverUrl === undefined ? os.tmpdir() : probeDirectory(await dataDirectoryOf(serverUrl));
  if (!dir) return false;
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fsync-probe.ts');
  const proc = spawn(process.execPath, ['--import', 'tsx', script, dir, String(STALL_MS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const stalls: DiskStall[] = [];
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`the fsync probe exited (${code})`)));
    proc.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line === 'ready') resolve();
        else {
          const [at, ms] = line.split(' ').map(Number);
          stalls.push({ at: at!, ms: ms! });
        }
      }
    });
  });
  proc.removeAllListeners('exit');
  proc.unref();
  (proc.stdout as unknown as { unref(): void }).unref();
  (proc.stdin as unknown as { unref(): void }).unref();
  probe = { proc, stalls };
  return true;
}

async function dataDirectoryOf(serverUrl: string): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: serverUrl });
  try {
    await c.connect();
    return (await c.query<{ data_directory: string }>('show data_directory')).rows[0]?.data_directory;
  } catch {
    return undefined;
  } finally {
    await c.end().catch(() => {});
  }
}

/** The probe's stalls that overlap the span from `from` to `to` (epoch ms); undefined without a probe. */
export function stallsBetween(from: number, to: number): DiskStall[] | undefined {
  return probe?.stalls.filter((s) => s.at <= to && s.at + s.ms >= from);
}

/** Stops the probe (it removes its file). */
export function stopDiskProbe(): void {
  probe?.proc.kill('SIGTERM');
  probe = undefined;
}
