// Faults at seeded random moments, in independent lanes (Coffer processes, PostgreSQL, the
// network to PostgreSQL: latency, stalls, resets, lost COMMITs; webhook receivers), each lane one fault at a time. Every fault is
// undone before its lane picks the next; `stop()` waits for the running faults to end, so
// everything is whole again when the faults stop.
import type { CofferProcess } from './coffer.ts';
import type { History } from './history.ts';
import type { FaultProxy } from './proxy.ts';
import type { ChaosReceiver } from './receivers.ts';
import type { Rng } from './rng.ts';

export interface FaultTargets {
  processes: CofferProcess[];
  proxy: FaultProxy;
  receivers: ChaosReceiver[];
  /** Stop and start PostgreSQL (absent when the campaign does not own the server). */
  postgres?: { stop(): Promise<void>; start(): Promise<void> };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a process again, as a supervisor would: a start while PostgreSQL is unreachable exits
 * (Coffer fails fast on a database it cannot open), so it is tried again until it stays up.
 */
export async function restart(p: CofferProcess, history: History, deadlineMs = 120_000): Promise<void> {
  for (const end = Date.now() + deadlineMs; ; ) {
    try {
      await p.start();
      return;
    } catch (err) {
      history.write({
        kind: 'note',
        at: Date.now(),
        text: `${p.name} failed to start; starting it again`,
        data: (err as Error).message.slice(0, 200),
      });
      if (Date.now() > end) throw err;
      await sleep(1_000);
    }
  }
}

export class FaultInjector {
  private running = true;
  private lanes: Promise<void>[] = [];
  readonly counts: Record<string, number> = {};

  constructor(
    private readonly rng: Rng,
    private readonly t: FaultTargets,
    private readonly history: History,
    /** Mean pause between two faults of a lane, in ms. */
    private readonly meanGapMs = 8_000,
  ) {}

  start(): void {
    const lane = (name: string, pick: (rng: Rng) => Promise<void>) => {
      const rng = this.rng.fork();
      this.lanes.push(
        (async () => {
          while (this.running) {
            await this.pause(rng.int(this.meanGapMs / 2, (this.meanGapMs * 3) / 2));
            if (!this.running) break;
            await pick(rng).catch((err) =>
              this.history.write({
                kind: 'note',
                at: Date.now(),
                text: `fault lane ${name} failed: ${(err as Error).message}`,
              }),
            );
          }
        })(),
      );
    };
    lane('process', (rng) => (rng.chance(0.5) ? this.kill9(rng) : this.sigstop(rng)));
    if (this.t.postgres) lane('postgres', (rng) => this.pgRestart(rng));
    lane('network', (rng) =>
      rng.pick([() => this.latency(rng), () => this.stall(rng), () => this.reset(), () => this.commitLoss(rng)])(),
    );
    lane('receiver', (rng) => this.receiver(rng));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }

  /** Sleeps up to `ms`, waking early when the faults stop. */
  private async pause(ms: number): Promise<void> {
    for (const end = Date.now() + ms; this.running && Date.now() < end; ) await sleep(Math.min(250, end - Date.now()));
  }

  private async fault(
    fault: string,
    target: string | undefined,
    detail: string | undefined,
    body: () => Promise<void>,
  ): Promise<void> {
    this.counts[fault] = (this.counts[fault] ?? 0) + 1;
    this.history.write({ kind: 'fault', fault, target, phase: 'start', at: Date.now(), detail });
    try {
      await body();
    } finally {
      this.history.write({ kind: 'fault', fault, target, phase: 'end', at: Date.now() });
    }
  }

  private upProcess(rng: Rng): CofferProcess | undefined {
    const up = this.t.processes.filter((p) => p.up && !p.stopped);
    return up.length ? rng.pick(up) : undefined;
  }

  private async kill9(rng: Rng): Promise<void> {
    const p = this.upProcess(rng);
    if (!p) return;
    const down = rng.int(500, 4_000);
    await this.fault('kill9', p.name, `down ${down} ms`, async () => {
      await p.kill9();
      await sleep(down);
      await restart(p, this.history);
    });
  }

  private async sigstop(rng: Rng): Promise<void> {
    const p = this.upProcess(rng);
    if (!p) return;
    const ms = rng.int(500, 6_000);
    await this.fault('sigstop', p.name, `${ms} ms`, async () => {
      p.stopped = true;
      p.signal('SIGSTOP');
      await sleep(ms);
      p.signal('SIGCONT');
      p.stopped = false;
    });
  }

  private async pgRestart(rng: Rng): Promise<void> {
    const pg = this.t.postgres!;
    const down = rng.int(200, 4_000);
    await this.fault('postgres-restart', 'postgres', `down ${down} ms`, async () => {
      await pg.stop();
      await sleep(down);
      await pg.start();
    });
  }

  private async latency(rng: Rng): Promise<void> {
    const ms = rng.int(20, 300);
    const forMs = rng.int(2_000, 10_000);
    await this.fault('db-latency', 'proxy', `${ms} ms for ${forMs} ms`, async () => {
      this.t.proxy.setMode({ kind: 'latency', ms });
      await sleep(forMs);
      this.t.proxy.setMode({ kind: 'pass' });
    });
  }

  private async stall(rng: Rng): Promise<void> {
    const forMs = rng.int(500, 6_000);
    await this.fault('db-stall', 'proxy', `${forMs} ms`, async () => {
      this.t.proxy.setMode({ kind: 'stall' });
      await sleep(forMs);
      this.t.proxy.setMode({ kind: 'pass' });
    });
  }

  private async reset(): Promise<void> {
    await this.fault('db-reset', 'proxy', undefined, async () => {
      const n = this.t.proxy.resetAll();
      this.history.write({ kind: 'note', at: Date.now(), text: `reset ${n} connections` });
    });
  }

  /** For a few seconds, COMMITs lose their answer: some reach PostgreSQL (and commit), some never do. */
  private async commitLoss(rng: Rng): Promise<void> {
    const forMs = rng.int(2_000, 8_000);
    const probability = rng.pick([0.25, 0.5, 1]);
    await this.fault('db-commit-loss', 'proxy', `${probability} of COMMITs for ${forMs} ms`, async () => {
      const before = { ...this.t.proxy.commitsCut };
      this.t.proxy.loseCommits({ probability, delivered: 'either' });
      await sleep(forMs);
      this.t.proxy.loseCommits(undefined);
      const after = this.t.proxy.commitsCut;
      const cut = {
        delivered: after.delivered - before.delivered,
        undelivered: after.undelivered - before.undelivered,
      };
      this.history.write({
        kind: 'note',
        at: Date.now(),
        text: `cut ${cut.delivered} COMMITs after PostgreSQL got them, ${cut.undelivered} before`,
        data: cut,
      });
    });
  }

  private async receiver(rng: Rng): Promise<void> {
    const r = rng.pick(this.t.receivers);
    const kind = rng.pick(['hang', 'slow', 'error', 'close'] as const);
    const forMs = rng.int(2_000, 12_000);
    await this.fault(`receiver-${kind}`, r.name, `${forMs} ms`, async () => {
      r.mode = kind === 'slow' ? { kind, ms: rng.int(200, 2_500) } : { kind };
      await sleep(forMs);
      r.mode = { kind: 'ok' };
    });
  }
}
