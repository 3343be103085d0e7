// What one connection may hold of the process (docs/operations.md#security-notes). Node's http
// server starts every pipelined request at once and keeps each response in memory until the
// client reads it, so a client that pipelines large responses and never reads would grow the
// process without limit. Here a connection's requests are answered one at a time (the next starts once
// the response before it is handed to the network), at most `maxPipelined` may wait behind the
// one being answered, and a connection whose client stops reading a response for
// `writeTimeoutMs` is reset.
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

type CutReason = 'write_timeout' | 'pipelining';

export interface ConnectionLimits {
  writeTimeoutMs: number;
  maxPipelined: number;
  onCut: (reason: CutReason) => void;
}

class Connection {
  /** One of its requests is being answered. */
  busy = false;
  /** Pipelined requests waiting for their turn: each continues its hooks. */
  waiting: (() => void)[] = [];
  /** Bytes the kernel had taken when the sweep saw them change, and when. */
  flushed = 0;
  stalledSince = 0;

  constructor(readonly socket: Socket) {}

  /** Answers a request now: the next waits until its response closes (sent, or the connection gone). */
  answer(res: ServerResponse, proceed: () => void): void {
    this.busy = true;
    res.on('close', this.release);
    proceed();
  }

  // One function per connection, not a closure per request.
  readonly release = (): void => {
    this.busy = false;
    if (this.socket.destroyed) this.waiting.length = 0;
    else this.waiting.shift()?.();
  };
}

/** Installs the limits on `app`'s requests: call before any other onRequest hook. */
export function limitConnections(app: FastifyInstance, limits: ConnectionLimits): void {
  const connections = new Map<Socket, Connection>();

  const cut = (conn: Connection, reason: CutReason) => {
    conn.waiting.length = 0;
    if (conn.socket.destroyed) return;
    // A reset, not a close: a close would leave what the kernel still holds for the client
    // queued (megabytes on a fast network) until the client reads it, which it may never do.
    conn.socket.resetAndDestroy();
    limits.onCut(reason);
  };

  app.addHook('onRequest', (req, reply, done) => {
    const socket = req.raw.socket;
    // inject() has no connection of its own.
    if (!(socket instanceof Socket)) return done();
    // Requests parsed from the same read as one that closed the connection are dropped.
    if (socket.destroyed) return;
    let conn = connections.get(socket);
    if (conn === undefined) {
      const created = new Connection(socket);
      connections.set(socket, (conn = created));
      socket.once('close', () => {
        connections.delete(socket);
        created.waiting.length = 0;
      });
    }
    if (!conn.busy) return conn.answer(reply.raw, done);
    if (conn.waiting.length >= limits.maxPipelined) return cut(conn, 'pipelining');
    const waiting = conn;
    conn.waiting.push(() => waiting.answer(reply.raw, done));
  });

  // The write timeout: a connection with bytes waiting to be sent whose count of bytes taken by
  // the kernel has not moved for writeTimeoutMs. One sweep over the connections per interval.
  const every = Math.max(100, Math.min(1_000, limits.writeTimeoutMs / 4));
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const conn of connections.values()) {
      const pending = conn.socket.writableLength;
      if (pending === 0) {
        conn.stalledSince = 0;
        continue;
      }
      const flushed = conn.socket.bytesWritten - pending;
      if (conn.stalledSince === 0 || flushed !== conn.flushed) {
        conn.flushed = flushed;
        conn.stalledSince = now;
      } else if (now - conn.stalledSince >= limits.writeTimeoutMs) cut(conn, 'write_timeout');
    }
  }, every);
  sweep.unref();
  app.addHook('onClose', (_app, done) => {
    clearInterval(sweep);
    done();
  });
}
