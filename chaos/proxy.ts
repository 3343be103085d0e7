// A TCP fault proxy between Coffer and PostgreSQL (or PgBouncer), run in the campaign's process
// and by tests. Modes: pass (forward), latency (every chunk waits `latencyMs` each way, order
// kept), stall (nothing moves on open or new connections until the mode changes; the bytes wait
// in the sockets); reset (every open connection is reset at once; a one-off action, the mode
// stays as it was); and lost COMMITs: a COMMIT the client sends is cut, with its connection,
// either after it reached the server (which commits; the client never hears so) or before
// (the server sees the connection drop mid-transaction and rolls back).
import net from 'node:net';

export type ProxyMode = { kind: 'pass' } | { kind: 'latency'; ms: number } | { kind: 'stall' };

/** Which COMMITs are cut: each with `probability`; `delivered` says whether the server gets it first (true, false, or 'either' at random). */
export interface CommitLoss {
  probability: number;
  delivered: boolean | 'either';
  /** Called for each COMMIT cut, with whether the server got it. */
  onCut?: (delivered: boolean) => void;
}

interface Pipe {
  client: net.Socket;
  server: net.Socket;
  /** The COMMIT this pipe carried reached the server and the client side is gone: the server side stays until it answers. */
  draining?: boolean;
}

/**
 * A COMMIT as node-postgres sends it: a simple-protocol Query message whose whole text is
 * `commit` (Drizzle's), or an extended-protocol Parse of the unnamed statement `commit`, which
 * ends the exchange that carries a transaction's last write (src/db/pipelined-begin.ts).
 */
const COMMIT_MESSAGES = [
  ...['commit', 'COMMIT'].map((text) => message('Q', Buffer.from(`${text}\0`))),
  message('P', Buffer.concat([Buffer.from('\0commit\0'), Buffer.alloc(2)])),
];

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

export class FaultProxy {
  private server!: net.Server;
  private pipes = new Set<Pipe>();
  private mode: ProxyMode = { kind: 'pass' };
  private commitLoss: CommitLoss | undefined;
  port = 0;
  connections = 0;
  /** COMMITs cut so far: delivered to the server first, or not. */
  readonly commitsCut = { delivered: 0, undelivered: 0 };
  /** Pipes whose client was cut after a COMMIT went to the server, until the server answers (they have left `pipes`). */
  private readonly draining = new Set<Pipe>();

  constructor(
    private readonly target: { host: string; port: number },
    /** The source of randomness for lost COMMITs (the campaign passes its seeded one). */
    private readonly random: () => number = Math.random,
  ) {}

  async start(port = 0): Promise<void> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    for (const p of this.pipes) {
      if (mode.kind === 'stall') {
        p.client.pause();
        p.server.pause();
      } else {
        p.client.resume();
        p.server.resume();
      }
    }
  }

  /** Cuts COMMITs as `loss` says until called again with undefined. */
  loseCommits(loss: CommitLoss | undefined): void {
    this.commitLoss = loss;
  }

  /**
   * Resolves once the server has answered every COMMIT cut after delivery (or 5 s passed): from
   * then on, what those transactions wrote is visible to every other connection. Until then a
   * reader may see the rows as they were (the client was answered before the server was).
   */
  async settled(): Promise<void> {
    for (let i = 0; i < 500 && this.draining.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
  }

  /** Resets every open connection (TCP RST both ways). */
  resetAll(): number {
    const n = this.pipes.size;
    for (const p of this.pipes) {
      p.client.resetAndDestroy();
      p.server.resetAndDestroy();
    }
    this.pipes.clear();
    return n;
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.connections++;
    const server = net.connect(this.target.port, this.target.host);
    const pipe: Pipe = { client, server };
    this.pipes.add(pipe);
    const end = () => {
      if (!this.pipes.delete(pipe)) return;
      client.destroy();
      if (!pipe.draining) server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    this.forward(client, server, pipe);
    this.forward(server, client);
    if (this.mode.kind === 'stall') {
      client.pause();
      server.pause();
    }
  }

  /** Whether to cut this chunk's COMMIT, and how: undefined to let it through. */
  private cut(chunk: Buffer): { delivered: boolean } | undefined {
    const loss = this.commitLoss;
    if (!loss || loss.probability <= 0) return undefined;
    if (!COMMIT_MESSAGES.some((m) => chunk.indexOf(m) >= 0)) return undefined;
    if (this.random() >= loss.probability) return undefined;
    const delivered = loss.delivered === 'either' ? this.random() < 0.5 : loss.delivered;
    if (delivered) this.commitsCut.delivered++;
    else this.commitsCut.undelivered++;
    loss.onCut?.(delivered);
    return { delivered };
  }

  /** The COMMIT in `chunk` is lost: the client's connection is reset; the server gets the COMMIT first or not at all. */
  private loseCommit(pipe: Pipe, chunk: Buffer, delivered: boolean): void {
    if (delivered) {
      // The server side stays open until the server has answered (it committed), then closes.
      pipe.draining = true;
      this.draining.add(pipe);
      pipe.server.write(chunk);
      const close = () => {
        this.draining.delete(pipe);
        pipe.server.destroy();
      };
      pipe.server.once('data', close);
      setTimeout(close, 5_000).unref();
    } else {
      pipe.server.resetAndDestroy();
    }
    pipe.client.resetAndDestroy();
  }

  /** Copies `from` to `to`, delayed while the mode is latency (chunks keep their order); `upstream` is the client-to-server direction. */
  private forward(from: net.Socket, to: net.Socket, upstream?: Pipe): void {
    let lastDue = 0;
    const deliver = (chunk: Buffer) => {
      if (to.destroyed || upstream?.draining) return;
      const lost = upstream ? this.cut(chunk) : undefined;
      if (lost && upstream) return this.loseCommit(upstream, chunk, lost.delivered);
      to.write(chunk);
    };
    from.on('data', (chunk: Buffer) => {
      const mode = this.mode;
      if (mode.kind !== 'latency') {
        if (lastDue <= Date.now()) {
          deliver(chunk);
          return;
        }
      }
      const ms = mode.kind === 'latency' ? mode.ms : 0;
      const due = Math.max(Date.now() + ms, lastDue);
      lastDue = due;
      setTimeout(() => deliver(chunk), due - Date.now());
    });
  }
}
