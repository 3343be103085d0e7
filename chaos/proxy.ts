// A TCP fault proxy between Coffer and PostgreSQL, run in the campaign's process. Modes:
// pass (forward), latency (every chunk waits `latencyMs` each way, order kept), stall (nothing
// moves on open or new connections until the mode changes; the bytes wait in the sockets) and
// reset (every open connection is reset at once; a one-off action, the mode stays as it was).
import net from 'node:net';

export type ProxyMode = { kind: 'pass' } | { kind: 'latency'; ms: number } | { kind: 'stall' };

interface Pipe {
  client: net.Socket;
  server: net.Socket;
}

export class FaultProxy {
  private server!: net.Server;
  private pipes = new Set<Pipe>();
  private mode: ProxyMode = { kind: 'pass' };
  port = 0;
  connections = 0;

  constructor(private readonly target: { host: string; port: number }) {}

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
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    this.forward(client, server);
    this.forward(server, client);
    if (this.mode.kind === 'stall') {
      client.pause();
      server.pause();
    }
  }

  /** Copies `from` to `to`, delayed while the mode is latency (chunks keep their order). */
  private forward(from: net.Socket, to: net.Socket): void {
    let lastDue = 0;
    from.on('data', (chunk: Buffer) => {
      const mode = this.mode;
      if (mode.kind !== 'latency') {
        if (lastDue <= Date.now()) {
          to.write(chunk);
          return;
        }
      }
      const ms = mode.kind === 'latency' ? mode.ms : 0;
      const due = Math.max(Date.now() + ms, lastDue);
      lastDue = due;
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, due - Date.now());
    });
  }
}
