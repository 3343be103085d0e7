// Starting real Coffer processes for tests that need them (start-up, shutdown, crashes).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

/**
 * A port for a test server to bind, below the kernel's ephemeral range: a port taken from that
 * range and released for a child process to bind could meanwhile become the source port of an
 * outgoing connection (a database client, a fetch) and the child would fail with EADDRINUSE.
 * Ports handed out once are not handed out again in this process.
 */
export async function freePort(): Promise<number> {
  const ephemeralStart =
    Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  const low = Math.max(1024, ephemeralStart - 12_000);
  for (;;) {
    const port = low + randomInt(ephemeralStart - low);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
}

const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export interface ServerProcess {
  proc: ChildProcess;
  ports: { api: number; card: number; pay: number; admin: number; console: number };
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout (or stderr) matches; rejects on exit or timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/** The environment of a sandbox server process for tests: its data folder or database, fixed secrets. */
export function serverEnv(
  dir: string,
  databaseUrl: string | undefined,
  adminToken: string,
  extra: Record<string, string> = {},
): Record<string, string | undefined> {
  return {
    DATA_DIR: dir,
    DATABASE_URL: databaseUrl,
    COFFER_ENV: 'sandbox',
    ADMIN_TOKEN: adminToken,
    CARD_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
    WIDGET_SIGNING_KEY: Buffer.alloc(32, 6).toString('base64'),
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** Spawns `node --import tsx src/main.ts` with free ports and the given environment. */
export async function startServer(env: Record<string, string | undefined>): Promise<ServerProcess> {
  const ports = {
    api: await freePort(),
    card: await freePort(),
    pay: await freePort(),
    admin: await freePort(),
    console: await freePort(),
  };
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...env })) {
    if (v !== undefined) childEnv[k] = v;
  }
  Object.assign(childEnv, {
    PORT: String(ports.api),
    CARD_PORT: String(ports.card),
    PAY_PORT: String(ports.pay),
    ADMIN_PORT: String(ports.admin),
    CONSOLE_PORT: String(ports.console),
    ...Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)),
  });
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const proc = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    waiters.forEach((w) => w());
  });
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    waiters.forEach((w) => w());
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      resolve({ code, signal });
      waiters.forEach((w) => w());
    }),
  );
  return {
    proc,
    ports,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal = 'SIGTERM') => proc.kill(signal),
    // Generous: a start runs migrations and, on PGlite, loads PostgreSQL's WebAssembly; on a busy
    // two-core machine that took over 30 s. A wait that succeeds returns as soon as it matches.
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${pattern}\nstdout:\n${out}\nstderr:\n${err}`)),
          timeoutMs,
        );
        const check = () => {
          const m = out.match(pattern) ?? err.match(pattern);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            clearTimeout(timer);
            reject(
              new Error(
                `process exited (${proc.exitCode ?? proc.signalCode}) before ${pattern}\nstdout:\n${out}\nstderr:\n${err}`,
              ),
            );
          }
        };
        waiters.push(check);
        check();
      });
    },
  };
}
