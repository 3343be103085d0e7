// Circuit breakers for webhook receivers, one per merchant and host (the URL's origin), kept in
// the process. After `failures` consecutive attempts without an answer (connect failures and
// timeouts; an HTTP error status is an answer) the breaker opens: the host's deliveries are held
// for `cooldownMs` (rescheduled, not failed, and taking no slot), then one probe goes through.
// An answer closes the breaker; another failure opens it for a new cool-down. Keyed by merchant
// as well as host, so one merchant's attempts never hold another merchant's deliveries.

export type Admission = { send: true } | { send: false; holdUntil?: Date };

interface HostState {
  failures: number;
  lastFailure: number;
  /** Set while open: when the probe may go. */
  openUntil?: number;
  /** The delivery whose attempt is the probe, while it is in flight. */
  probe?: string;
  /** The merchant's webhooks seen on this host (their deliveries are held while it is open). */
  webhooks: Set<string>;
}

export class ReceiverBreakers {
  readonly #failures: number;
  readonly #cooldownMs: number;
  /** Only hosts with recent failures: an answer forgets the host. */
  readonly #hosts = new Map<string, HostState>();

  constructor(opts: { failures: number; cooldownMs: number }) {
    this.#failures = opts.failures;
    this.#cooldownMs = opts.cooldownMs;
  }

  /**
   * Whether an attempt to `host` may be made now. While the breaker is open the delivery is
   * held until the cool-down ends; once it has, the first attempt is the probe and the others
   * wait (without a new time) until it has answered.
   */
  admit(host: string, d: { id: string; webhookId: string }, now: Date): Admission {
    const s = this.#hosts.get(host);
    if (!s || s.openUntil === undefined) return { send: true };
    s.webhooks.add(d.webhookId);
    if (now.getTime() < s.openUntil) return { send: false, holdUntil: new Date(s.openUntil) };
    if (s.probe !== undefined) return { send: false };
    s.probe = d.id;
    return { send: true };
  }

  /**
   * Records an attempt's outcome. Returns the hold when this attempt opened the breaker (or a
   * failed probe opened it again): the webhooks whose deliveries to hold, and until when.
   */
  record(
    host: string,
    d: { id: string; webhookId: string },
    answered: boolean,
    now: Date,
  ): { webhookIds: string[]; until: Date } | undefined {
    if (answered) {
      this.#hosts.delete(host);
      return undefined;
    }
    let s = this.#hosts.get(host);
    if (!s) this.#hosts.set(host, (s = { failures: 0, lastFailure: 0, webhooks: new Set() }));
    s.webhooks.add(d.webhookId);
    s.failures++;
    s.lastFailure = now.getTime();
    // Attempts that were in flight when the breaker opened end without changing it.
    if (s.probe !== d.id && (s.failures < this.#failures || s.openUntil !== undefined)) return undefined;
    s.probe = undefined;
    s.openUntil = now.getTime() + this.#cooldownMs;
    return { webhookIds: [...s.webhooks], until: new Date(s.openUntil) };
  }

  /** When the host's breaker is open, the end of its cool-down. */
  openUntil(host: string): Date | undefined {
    const until = this.#hosts.get(host)?.openUntil;
    return until === undefined ? undefined : new Date(until);
  }

  /**
   * Webhooks whose deliveries must not be claimed now: their host's probe is out. (While a
   * breaker is open, its deliveries are claimed and given back with a new time instead, so
   * none stays due.)
   */
  probing(now: Date): string[] {
    const ids: string[] = [];
    for (const [host, s] of this.#hosts) {
      if (s.probe !== undefined) ids.push(...s.webhooks);
      // Forget hosts no longer tried: a cool-down after their last failure and their hold.
      else if (Math.max(s.lastFailure, s.openUntil ?? 0) + this.#cooldownMs < now.getTime()) this.#hosts.delete(host);
    }
    return ids;
  }
}
