// The Coffer processes of a campaign: started with `npm start`'s flags, logging to a file, each
// on fixed ports so that a restart after a kill comes back where the clients expect it.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/test/process.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
export const ADMIN_TOKEN = 'cft_u087VDX-z6MoAdEeLZozSEwZ0WrEsZnyv--7SniaM15IJFXg';

export class CofferProcess {
  proc?: ChildProcess;
  up = false;
  stopped = false; // SIGSTOP'd
  starts = 0;
  private constructor(
    readonly name: string,
    readonly apiPort: number,
    readonly cardPort: number,
    readonly adminPort: number,
    private readonly env: Record<string, string>,
    private readonly logDir: string,
  ) {}

  static async create(name: string, env: Record<string, string>, logDir: string): Promise<CofferProcess> {
    return new CofferProcess(name, await freePort(), await freePort(), await freePort(), env, logDir);
  }

  get url() {
    return `http://127.0.0.1:${this.apiPort}`;
  }
  /** The secure card listener (virtual card reads). */
  get cardUrl() {
    return `http://127.0.0.1:${this.cardPort}`;
  }
  get adminUrl() {
    return `http://127.0.0.1:${this.adminPort}`;
  }

  async start(): Promise<void> {
    this.starts++;
    const logFile = path.join(this.logDir, `${this.name}-${this.starts}.log`);
    const fd = openSync(logFile, 'w');
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...this.env,
      PORT: String(this.apiPort),
      CARD_PORT: String(this.cardPort),
      ADMIN_PORT: String(this.adminPort),
      LISTENERS: 'api,card,admin',
      ...(process.env.CHAOS_LOG_LEVEL ? { LOG_LEVEL: process.env.CHAOS_LOG_LEVEL } : {}),
      ADMIN_TOKEN,
    };
    const proc = spawn(process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', MAIN], {
      env,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.proc = proc;
    proc.once('exit', () => {
      if (this.proc === proc) this.up = false;
    });
    for (const started = Date.now(); ; ) {
      if (/Stop with Ctrl-C/.test(readFileSync(logFile, 'utf8'))) break;
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`${this.name} exited (${proc.exitCode ?? proc.signalCode}) while starting; see ${logFile}`);
      if (Date.now() - started > 180_000) throw new Error(`${this.name} did not start within 180 s; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    this.up = true;
    this.stopped = false;
  }

  signal(sig: NodeJS.Signals): void {
    this.proc?.kill(sig);
  }

  async kill9(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    this.up = false;
    const exited = new Promise((r) => proc.once('exit', r));
    if (this.stopped) proc.kill('SIGCONT');
    proc.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM and wait: the graceful shutdown. `onSlow` runs if it has not exited after 10 s. */
  async stop(onSlow?: () => Promise<void>): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    if (this.stopped) proc.kill('SIGCONT');
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    const slow = setTimeout(() => void onSlow?.(), 10_000);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 40_000);
    await exited;
    clearTimeout(timer);
    clearTimeout(slow);
    this.up = false;
  }
}
