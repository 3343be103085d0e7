// How fast the machine ran right now, for runs long enough that the host can change under them.
// A child process does two fixed pieces of work on request and answers with the CPU time each
// took: a loop of integer arithmetic that stays in the core's registers (about 10 ms), and a walk
// of 60,000 random steps through 16 MB (a cycle through an array, each step a read that depends
// on the last; about 12 ms), which runs at the speed of the shared caches and memory. The same work
// takes longer in CPU time only if the machine ran slower: a lower clock, caches shared with more
// work, or, on a virtual machine, time the host gave to another guest while the kernel here
// counted it to the running process (this project's Firecracker hosts report no steal time).
// How busy this machine is does not enter: waiting for a core is not CPU time.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const CHILD = `
const rl = require('node:readline').createInterface({ input: process.stdin });
// One cycle through every slot (Sattolo's shuffle), so the walk never settles in a short loop.
const N = 4 * 1024 * 1024;
const next = new Int32Array(N);
for (let i = 0; i < N; i++) next[i] = i;
for (let i = N - 1; i > 0; i--) { const j = Math.floor(Math.random() * i); const t = next[i]; next[i] = next[j]; next[j] = t; }
let sink = 0;
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
rl.on('line', () => {
  const t0 = cpu();
  let x = 0x9e3779b9;
  for (let i = 0; i < 5_000_000; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; }
  const t1 = cpu();
  let p = x & (N - 1);
  for (let i = 0; i < 60_000; i++) p = next[p];
  const t2 = cpu();
  sink ^= x ^ p;
  // The results go out too, so neither loop can be left out.
  process.stdout.write((t1 - t0) + ' ' + (t2 - t1) + ' ' + (sink & 1) + '\\n');
});`;

/** CPU time (µs) of the two pieces of work. */
export interface ProbeSample {
  arithmetic: number;
  memory: number;
}

export interface CpuProbe {
  sample(): Promise<ProbeSample>;
  stop(): void;
}

export function startCpuProbe(): CpuProbe {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((s: ProbeSample) => void)[] = [];
  lines.on('line', (l) => {
    const [arithmetic, memory] = l.split(' ').map(Number);
    waiting.shift()?.({ arithmetic: arithmetic!, memory: memory! });
  });
  return {
    sample: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin!.write('\n');
      }),
    stop: () => child.kill(),
  };
}

/** The medians (ms) of `n` samples taken `everyMs` apart (the first after `everyMs`). */
export async function probeMedians(
  probe: CpuProbe,
  n: number,
  everyMs: number,
): Promise<{ arithmeticMs: number; memoryMs: number }> {
  const samples: ProbeSample[] = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, everyMs));
    samples.push(await probe.sample());
  }
  const median = (f: (s: ProbeSample) => number) => {
    const v = samples.map(f).sort((a, b) => a - b);
    return Math.round(v[Math.floor(v.length / 2)]! / 10) / 100;
  };
  return { arithmeticMs: median((s) => s.arithmetic), memoryMs: median((s) => s.memory) };
}
