// The job runner's schedule: a run that handled a full batch is followed at once by the next
// (a backlog is worked off at full speed); otherwise the job waits its interval. Every run is
// metered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { registry } from '../observability/metrics.ts';
import { JobRunner } from './runner.ts';

/** Waits until `done()` holds, or `ms` have passed (a loaded machine's timers run late). */
async function until(done: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

test('a full batch runs the job again at once; a partial one waits the interval', async () => {
  const runner = new JobRunner(pino({ level: 'silent' }));
  const handled = [3, 3, 1, 2];
  const at: number[] = [];
  const start = performance.now();
  runner.register({
    name: 'backlog',
    intervalMs: 500,
    batch: 3,
    run: async () => {
      at.push(performance.now() - start);
      return handled.shift() ?? 0;
    },
  });
  runner.start();
  await until(() => at.length >= 4, 5_000);
  await runner.stop();
  // Runs 1 to 3 follow each other (the first after one interval); run 3 handled 1, so run 4
  // waits another interval.
  const runs = `runs at ${at.map((t) => t.toFixed(0)).join(', ')} ms`;
  assert.equal(at.length, 4, runs);
  assert.ok(at[0]! >= 490, `the first run waited the interval: ${runs}`);
  assert.ok(at[2]! - at[0]! < 300, `full batches were followed at once: ${runs}`);
  assert.ok(at[3]! - at[2]! >= 490, `a partial batch waited the interval: ${runs}`);
});

test('a job without a batch size always waits its interval', async () => {
  const runner = new JobRunner(pino({ level: 'silent' }));
  const at: number[] = [];
  const start = performance.now();
  runner.register({ name: 'plain', intervalMs: 300, run: async () => at.push(performance.now() - start) * 1000 });
  runner.start();
  await until(() => at.length >= 3, 5_000);
  await runner.stop();
  // Each run handled more than any batch, yet each waited the interval.
  const runs = `runs at ${at.map((t) => t.toFixed(0)).join(', ')} ms`;
  assert.equal(at.length, 3, runs);
  for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 290, runs);
});

test('each run is timed and its items counted by job; a run that throws counts as a failure', async () => {
  const runner = new JobRunner(pino({ level: 'silent' }));
  const outcomes: (number | Error)[] = [4, new Error('database away'), 2];
  runner.register({
    name: 'metered',
    intervalMs: 60_000,
    run: async () => {
      const next = outcomes.shift()!;
      if (next instanceof Error) throw next;
      await new Promise((r) => setTimeout(r, 20));
      return next;
    },
  });
  assert.equal(await runner.runOnce('metered'), 4);
  assert.equal(await runner.runOnce('metered'), 0);
  assert.equal(await runner.runOnce('metered'), 2);
  const text = await registry.metrics();
  const series = (name: string) => Number(text.match(new RegExp(`^${name}\\{job="metered"\\} (\\S+)$`, 'm'))?.[1]);
  assert.equal(series('coffer_job_items_total'), 6);
  assert.equal(series('coffer_job_failures_total'), 1);
  assert.equal(series('coffer_job_run_duration_seconds_count'), 3);
  // Two runs waited 20 ms each.
  assert.ok(
    series('coffer_job_run_duration_seconds_sum') >= 0.038,
    String(series('coffer_job_run_duration_seconds_sum')),
  );
});
