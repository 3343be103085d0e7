// `npm run example` as a user runs it: spawned through npm in a process group of its own (as a
// terminal does), stopped with Ctrl-C (SIGINT to the group). One real sandbox start; the other
// cases run beside it. Each run gets its own TMPDIR, and after it ends neither a process of that
// run nor its temporary folder may be left.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/test/process.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tmps: string[] = [];
after(() => {
  for (const t of tmps) rmSync(t, { recursive: true, force: true });
});

interface Run {
  tmp: string;
  out: () => string;
  err: () => string;
  waitFor: (pattern: RegExp) => Promise<void>;
  exited: Promise<number | null>;
  interrupt: () => void;
}

function example(env: Record<string, string>): Run {
  const tmp = mkdtempSync(path.join(tmpdir(), 'coffer-example-test-'));
  tmps.push(tmp);
  const proc = spawn('npm', ['run', 'example'], {
    cwd: root,
    env: { ...process.env, TMPDIR: tmp, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  proc.stdout.on('data', (d: Buffer) => {
    out += d;
    for (const w of waiters) w();
  });
  proc.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      resolve(code);
      for (const w of waiters) w();
    }),
  );
  return {
    tmp,
    out: () => out,
    err: () => err,
    exited,
    interrupt: () => process.kill(-proc.pid!, 'SIGINT'),
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(out)) {
            waiters.delete(check);
            resolve();
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            waiters.delete(check);
            reject(new Error(`npm run example exited before ${pattern}\nstdout:\n${out}\nstderr:\n${err}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

/** What a run left: processes still carrying its TMPDIR, and files in it (tsx's own cache aside). */
function leftovers(tmp: string): { processes: string[]; files: string[] } {
  const processes: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`TMPDIR=${tmp}`)) processes.push(pid);
    } catch {
      /* gone meanwhile */
    }
  }
  return { processes, files: readdirSync(tmp).filter((f) => !f.startsWith('tsx-')) };
}

async function sandboxPorts(): Promise<Record<string, string>> {
  const names = ['PORT', 'CARD_PORT', 'PAY_PORT', 'ADMIN_PORT', 'CONSOLE_PORT'];
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, String(await freePort())])));
}

describe('npm run example', () => {
  it('runs the shop on the demo merchant, refuses taken ports with the way out, and leaves nothing behind', async () => {
    const ports = await sandboxPorts();
    const shopPort = String(await freePort());
    const first = example({ ...ports, SHOP_PORT: shopPort });
    try {
      await first.waitFor(/Stop with Ctrl-C/);
    } catch (err) {
      first.interrupt();
      throw err;
    }
    try {
      // The shop pays through the sandbox with the demo merchant's credentials: its page
      // fetches a widget payload from Coffer.
      const page = await fetch(`http://localhost:${shopPort}/`);
      assert.equal(page.status, 200, await page.clone().text());
      assert.match(await page.text(), /Single-origin coffee/);
      assert.match(first.out(), /Client-ID [0-9a-f-]{36}/);

      // The same sandbox ports while the first runs: named as a running Coffer, with npm start.
      const again = example({ ...ports, SHOP_PORT: String(await freePort()) });
      assert.equal(await again.exited, 1);
      assert.match(again.err(), /a Coffer server is already running on port \d+ \(PORT\), most likely `npm start`/);
      assert.deepEqual(leftovers(again.tmp), { processes: [], files: [] });

      // The shop's port taken: SHOP_PORT named, no stack.
      const shopTaken = example({ ...(await sandboxPorts()), SHOP_PORT: shopPort });
      assert.equal(await shopTaken.exited, 1);
      assert.match(shopTaken.err(), new RegExp(`port ${shopPort} \\(the example shop\\) is in use.*SHOP_PORT=`));
      assert.doesNotMatch(shopTaken.err(), /\n\s+at /);
      assert.deepEqual(leftovers(shopTaken.tmp), { processes: [], files: [] });

      // The first one had made its sandbox's folder in its TMPDIR.
      assert.equal(leftovers(first.tmp).files.length, 1);
    } finally {
      first.interrupt();
    }
    await first.exited;
    assert.deepEqual(leftovers(first.tmp), { processes: [], files: [] });
  });
});
