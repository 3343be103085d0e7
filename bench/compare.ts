// npm run bench -- compare <ref> [<ref>] [--rounds N] [--duration S] [--rows a,b,…|all]
// Two versions of Coffer side by side on this host: each ref checked out in a git worktree of its
// own (under a temp folder; node_modules linked from this checkout when its package-lock.json is
// the same, else `npm ci`), each served by its own process on a fresh database of the same
// PostgreSQL server (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres). With one
// ref, the other side is this working tree, uncommitted changes included (`compare <ref> HEAD`
// for the last commit). The rows run in interleaved rounds (A B A B …), each right after a run
// of its yardstick (rounds.ts); a row's figure is the median of its rounds' ratios to the
// yardstick. Five rounds at least before deciding anything. The worktrees, servers and
// databases go on every way out, Ctrl-C included.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { lstatSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { mkdtemp, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { type CofferServer, dropDatabases, freshDatabase, PG_SERVER, startCoffer, writeResults } from './lib.ts';
import {
  besideYardstick,
  machineFacts,
  quiet,
  type RowSummary,
  type Sample,
  stamp,
  summarize,
  Yardsticks,
} from './rounds.ts';
import { pct } from './report-format.ts';
import { closedLoop, type Fixture, fixture, ROWS, rowsOf } from './rows.ts';

const here = fileURLToPath(new URL('..', import.meta.url));
const git = async (...args: string[]) => (await promisify(execFile)('git', args, { cwd: here })).stdout.trim();

interface Side {
  label: string;
  ref?: string;
  commit?: string;
  /** The checkout it runs from; this one when absent. */
  root?: string;
  coffer?: CofferServer;
  fixture?: Fixture;
}

// What the run leaves behind until cleanUp: worktrees, their folder, servers.
const worktrees: string[] = [];
let tmp: string | undefined;
const sides: Side[] = [];
let yardsticks: Yardsticks | undefined;

let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const s of sides) await s.coffer?.stop().catch(() => {});
    await yardsticks?.stop().catch(() => {});
    await dropDatabases().catch((e) => process.stderr.write(`dropping the databases: ${e}\n`));
    removeWorktrees();
  })();
  return cleaning;
}

/** Removes the worktrees (synchronously, so that it also runs in an exit handler). */
function removeWorktrees(): void {
  for (const wt of worktrees.splice(0)) {
    // A node_modules link goes first: the worktree's removal must not reach through it.
    const modules = path.join(wt, 'node_modules');
    if (lstatSync(modules, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(modules);
    try {
      execFileSync('git', ['worktree', 'remove', '--force', wt], { cwd: here, stdio: 'ignore' });
    } catch {
      rmSync(wt, { recursive: true, force: true });
    }
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
}

/** Cleans up on Ctrl-C and the other signals that end a run, and on any exit. */
function cleanUpOnExit(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the servers, dropping the databases, removing the worktrees…\n`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  process.once('exit', () => {
    for (const s of sides) s.coffer?.proc.kill('SIGTERM');
    removeWorktrees();
  });
}

/** node_modules folders by the package-lock.json they were installed from: this checkout's first. */
const installed = new Map<string, string>([[readFileSync(path.join(here, 'package-lock.json'), 'utf8'), here]]);

/** A worktree of `ref` under the temp folder, with its dependencies. */
async function checkout(ref: string, i: number): Promise<Side> {
  const commit = await git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`).catch(() => {
    throw new Error(`${ref} is not a commit of this repository`);
  });
  tmp ??= await mkdtemp(path.join(os.tmpdir(), 'coffer-compare-'));
  const root = path.join(tmp, `${i}-${ref.replace(/[^A-Za-z0-9._-]/g, '_')}`);
  worktrees.push(root);
  await git('worktree', 'add', '--detach', root, commit);
  const lock = readFileSync(path.join(root, 'package-lock.json'), 'utf8');
  const same = installed.get(lock);
  if (same) await symlink(path.join(same, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  else {
    process.stderr.write(`${ref}: package-lock.json differs; npm ci in ${root}\n`);
    await new Promise<void>((resolve, reject) =>
      spawn('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 2, 2] }).once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`npm ci for ${ref} exited with ${code}`)),
      ),
    );
    installed.set(lock, root);
  }
  return { label: ref, ref, commit, root };
}

export async function main(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '5' },
      rows: { type: 'string', default: 'deposits,withdrawals,payments,checkout,balance' },
    },
  });
  if (positionals.length < 1 || positionals.length > 2)
    throw new Error(
      'usage: npm run bench -- compare <git-ref> [<git-ref>] [--rounds N] [--duration S] [--rows a,b|all]',
    );
  const rounds = Number(values.rounds);
  const durationS = Number(values.duration);
  const rows = values.rows === 'all' ? ROWS : rowsOf(values.rows!);
  cleanUpOnExit();
  const decisive = 5;
  const results: Record<string, { name: string; yardstick: string; samples: Sample[][] }> = {};
  try {
    for (const [i, ref] of positionals.entries()) sides.push(await checkout(ref, i));
    if (sides.length === 1) sides.push({ label: 'working tree' });
    const names = ['A', 'B'];
    for (const [i, side] of sides.entries()) {
      process.stderr.write(
        `${names[i]} = ${side.label}${side.commit ? ` (${side.commit.slice(0, 10)})` : ''}: starting\n`,
      );
      const databaseUrl = await freshDatabase(PG_SERVER, `coffer_compare_${i}`);
      side.coffer = await startCoffer({ databaseUrl, root: side.root });
      side.fixture = await fixture(side.coffer);
    }
    yardsticks = await Yardsticks.start(await freshDatabase(PG_SERVER, 'coffer_compare_raw'), 3);
    for (const row of rows)
      results[row.key] = { name: row.name, yardstick: row.yardstick, samples: sides.map(() => []) };
    for (let round = 1; round <= rounds; round++) {
      for (const row of rows) {
        // What each side's row acts on is made first, so that each run follows its yardstick at once.
        const ready = [];
        for (const side of sides) ready.push(await closedLoop(row, side.fixture!, durationS));
        if (row.consumes) for (const side of sides) await quiet(side.fixture!);
        for (const [i, side] of sides.entries()) {
          const s = await besideYardstick(yardsticks, row.yardstick, round, ready[i]!, side.fixture!);
          results[row.key]!.samples[i]!.push(s);
          process.stderr.write(
            `round ${round}/${rounds} ${row.key} ${names[i]}: ${s.result.rps.toLocaleString('en-US')}/s, ${pct(s.ratio)} of ${s.yardstick.toLocaleString('en-US')}/s\n`,
          );
        }
      }
    }
    const yardstickName = { bare: 'bare route', raw: 'raw transfer' };
    const lines = [
      `### compare: ${sides.map((s, i) => `${names[i]} = ${s.label}${s.commit ? ` (${s.commit.slice(0, 10)})` : ''}`).join(', ')}`,
      '',
      `${rounds} round${rounds === 1 ? '' : 's'}, ${durationS} s a row, 50 connections; each row right after its yardstick (${yardsticks.runS} s), on ${PG_SERVER.replace(/\/\/[^@]*@/, '//')}.`,
      '',
      '| row | side | req/s | yardstick | yardstick req/s | of yardstick (median) | min–max | interquartile | p99 ms | failed |',
      '|---|---|---:|---|---:|---:|---:|---:|---:|---:|',
    ];
    const summaries: Record<string, { sides: RowSummary[]; bOverA: number }> = {};
    for (const row of rows) {
      const r = results[row.key]!;
      const sums = r.samples.map(summarize);
      const bOverA = sums[1]!.ratio.median / sums[0]!.ratio.median;
      summaries[row.key] = { sides: sums, bOverA };
      for (const [i, s] of sums.entries())
        lines.push(
          `| ${i === 0 ? r.name : ''} | ${names[i]} | ${s.rps.toLocaleString('en-US')} | ${yardstickName[row.yardstick]} | ${s.yardstick.toLocaleString('en-US')} | ${pct(s.ratio.median)} | ${pct(s.ratio.min)}–${pct(s.ratio.max)} | ${pct(s.ratio.q1)}–${pct(s.ratio.q3)} | ${s.p99} | ${s.failed} |`,
        );
      lines.push(`|  | B / A | | | | ×${bOverA.toFixed(3)} (${bOverA >= 1 ? '+' : ''}${pct(bOverA - 1)}) | | | | |`);
    }
    if (rounds < decisive) lines.push('', `Fewer than ${decisive} rounds: too few to decide anything.`);
    process.stdout.write(`\n${lines.join('\n')}\n\n`);
    await writeResults(stamp('compare'), {
      kind: 'compare',
      machine: await machineFacts(PG_SERVER),
      settings: { rounds, durationS, yardstickS: yardsticks.runS, connections: 50 },
      sides: sides.map((s, i) => ({ name: names[i], label: s.label, ref: s.ref, commit: s.commit })),
      rows: Object.fromEntries(rows.map((row) => [row.key, { ...results[row.key], ...summaries[row.key] }])),
    });
  } finally {
    await cleanUp();
  }
}
