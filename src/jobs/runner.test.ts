// The job runner's schedule: a run that handled a full batch is followed at once by the next
// (a backlog is worked off at full speed); otherwise the job waits its interval.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { JobRunner } from './runner.ts';

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
  await new Promise((r) => setTimeout(r, 1250));
  await runner.stop();
  // Runs 1 to 3 follow each other (the first after one interval); run 3 handled 1, so run 4
  // waits another interval.
  assert.equal(at.length, 4, `runs at ${at.map((t) => t.toFixed(0)).join(', ')} ms`);
  assert.ok(at[2]! - at[0]! < 300, `full batches were followed at once: ${at.map((t) => t.toFixed(0)).join(', ')} ms`);
  assert.ok(at[3]! - at[2]! >= 490, `a partial batch waited the interval: ${at.map((t) => t.toFixed(0)).join(', ')} ms`);
});

test('a job without a batch size always waits its interval', async () => {
  const runner = new JobRunner(pino({ level: 'silent' }));
  let runs = 0;
  runner.register({ name: 'plain', intervalMs: 300, run: async () => ++runs * 1000 });
  runner.start();
  await new Promise((r) => setTimeout(r, 750));
  await runner.stop();
  assert.equal(runs, 2);
});
