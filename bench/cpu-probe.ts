// How fast the machine's cores are running right now, for runs long enough that the host can
// change under them. A child process does a fixed piece of work (a loop of integer arithmetic,
// about 10 ms) on request and answers with the CPU time it took. The same work takes longer in
// CPU time only if the core itself ran slower: a lower clock, caches shared with more work, or,
// on a virtual machine, time the host gave to another guest while the kernel here counted it
// to the running process (this project's Firecracker hosts report no steal time). How busy this
// machine is does not enter: waiting for a core is not CPU time.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const CHILD = `
const rl = require('node:readline').createInterface({ input: process.stdin });
let sink = 0;
rl.on('line', () => {
  const before = process.cpuUsage();
  let x = 0x9e3779b9;
  for (let i = 0; i < 5_000_000; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; }
  sink ^= x;
  const used = process.cpuUsage(before);
  // The result goes out too, so the loop cannot be left out.
  process.stdout.write((used.user + used.system) + ' ' + (sink & 1) + '\\n');
});`;

export interface CpuProbe {
  /** CPU time (µs) the fixed work took, now. */
  sample(): Promise<number>;
  stop(): void;
}

export function startCpuProbe(): CpuProbe {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((us: number) => void)[] = [];
  lines.on('line', (l) => waiting.shift()?.(Number.parseInt(l, 10)));
  return {
    sample: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin!.write('\n');
      }),
    stop: () => child.kill(),
  };
}

/** The median of `n` samples taken `everyMs` apart (the first after `everyMs`). */
export async function probeMedian(probe: CpuProbe, n: number, everyMs: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, everyMs));
    samples.push(await probe.sample());
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}
