// Stalls of this process's own event loop: synchronous work blocking it, or the process stopped
// and continued (SIGSTOP, a paused container or VM). A timer that fires late shows one. A
// webhook attempt's timeout that fires during or after a stall says nothing about the receiver:
// its answer may be waiting, unread, in the socket, and timers run before sockets are read.

/** How often the loop is sampled. */
const TICK_MS = 50;
/** How long a stall is remembered: longer than any attempt (WEBHOOK_TIMEOUT_MS is at most 120 s). */
const KEEP_MS = 130_000;

export class LoopStalls {
  #users = 0;
  #timer: NodeJS.Timeout | undefined;
  /** When the sampling timer last ran (performance.now()). */
  #last = 0;
  /** Recent gaps between two runs of the sampling timer longer than two ticks. */
  #gaps: { from: number; to: number }[] = [];

  /** Samples the loop until the matching stop() (calls nest). */
  start(): void {
    if (this.#users++ > 0) return;
    this.#last = performance.now();
    this.#timer = setInterval(() => {
      const now = performance.now();
      if (now - this.#last > 2 * TICK_MS) this.#gaps.push({ from: this.#last, to: now });
      this.#last = now;
      while (this.#gaps.length > 0 && this.#gaps[0]!.to < now - KEEP_MS) this.#gaps.shift();
    }, TICK_MS).unref();
  }

  stop(): void {
    if (--this.#users > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#gaps = [];
  }

  /**
   * The longest the loop stood still since `since` (performance.now()), a stall still under way
   * included (the sampling timer may not have run yet since the loop turned again).
   */
  longestSince(since: number): number {
    if (this.#timer === undefined) return 0;
    let longest = performance.now() - Math.max(this.#last, since);
    for (const g of this.#gaps) if (g.to > since) longest = Math.max(longest, g.to - Math.max(g.from, since));
    return Math.max(0, Math.round(longest - TICK_MS));
  }
}
