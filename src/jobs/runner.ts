// Periodic background jobs (KYC decisions, expiry sweeps, webhook delivery). Each job runs on
// its own interval, never overlaps itself, and logs instead of crashing the process. Tests
// disable the timers and call runOnce() after moving the test clock.
import type { FastifyBaseLogger } from 'fastify';
import { jobFailures, jobItems, jobRunDuration } from '../observability/metrics.ts';

export interface Job {
  name: string;
  intervalMs: number;
  /**
   * The most one run handles. A run that handled this many found a full batch, so more is
   * probably waiting: the next run starts at once instead of after intervalMs, and a backlog is
   * worked off at full speed (bank pulls keep up with a busy server's deposits only this way).
   */
  batch?: number;
  /** When the first run starts after start() (intervalMs by default). */
  firstRunMs?: number;
  /** Does one batch of due work; returns how many items it handled. */
  run(): Promise<number>;
}

export class JobRunner {
  readonly #jobs = new Map<string, Job>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #running = new Map<string, Promise<number>>();
  readonly #log: FastifyBaseLogger;
  #started = false;

  constructor(log: FastifyBaseLogger) {
    this.#log = log;
  }

  register(job: Job): void {
    if (this.#jobs.has(job.name)) throw new Error(`job ${job.name} registered twice`);
    this.#jobs.set(job.name, job);
    if (this.#started) this.#schedule(job);
  }

  start(): void {
    this.#started = true;
    for (const job of this.#jobs.values()) this.#schedule(job);
  }

  /** Runs one job now (or all of them), waiting for a run already under way. */
  async runOnce(name?: string): Promise<number> {
    const jobs = name ? [this.#jobs.get(name)] : [...this.#jobs.values()];
    let total = 0;
    for (const job of jobs) {
      if (!job) throw new Error(`no job ${name}`);
      total += await this.#run(job);
    }
    return total;
  }

  async stop(): Promise<void> {
    this.#started = false;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    await Promise.allSettled(this.#running.values());
  }

  #schedule(job: Job): void {
    const tick = async () => {
      const handled = await this.#run(job);
      const full = job.batch !== undefined && handled >= job.batch;
      if (this.#started) this.#timers.set(job.name, setTimeout(tick, full ? 0 : job.intervalMs).unref());
    };
    this.#timers.set(job.name, setTimeout(tick, job.firstRunMs ?? job.intervalMs).unref());
  }

  #run(job: Job): Promise<number> {
    const running = this.#running.get(job.name);
    if (running) return running;
    const started = performance.now();
    const p = job
      .run()
      .then((handled) => {
        if (handled > 0) jobItems.labels(job.name).inc(handled);
        return handled;
      })
      .catch((err: unknown) => {
        this.#log.error({ err, job: job.name }, 'job failed');
        jobFailures.labels(job.name).inc();
        return 0;
      })
      .finally(() => {
        jobRunDuration.labels(job.name).observe((performance.now() - started) / 1000);
        this.#running.delete(job.name);
      });
    this.#running.set(job.name, p);
    return p;
  }
}
