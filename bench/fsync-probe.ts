// The disk's fsync latency while a benchmark runs, in a process of its own (started by
// disk-stalls.ts): every 10 ms it writes 8 KB to a file in the directory given and fdatasyncs
// it, as PostgreSQL makes a commit durable (wal_sync_method fdatasync), and prints each fsync
// that took the given milliseconds or more as `<epoch ms it started> <ms it took>`. The fsync is
// timed synchronously, so the probe's own event loop adds nothing to it. Its 100 fsyncs a second
// load the disk too (PostgreSQL's own are about 150 a second during a direct-payment row), so
// only diagnostic runs start it.
//   node --import tsx bench/fsync-probe.ts <directory> <stall ms>
import { closeSync, fdatasyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

const stallMs = Number(process.argv[3]);
const EVERY_MS = 10;
/** The probe rewrites the same 1 MB: its file never grows, so its fsyncs flush data, not metadata. */
const PAGES = 128;

const file = path.join(process.argv[2]!, `coffer-fsync-probe-${process.pid}`);
const fd = openSync(file, 'w', 0o600);
const page = Buffer.alloc(8192, 1);
for (let i = 0; i < PAGES; i++) writeSync(fd, page, 0, page.length, i * page.length);
fdatasyncSync(fd);

let stopped = false;
const stop = () => {
  if (stopped) return;
  stopped = true;
  closeSync(fd);
  unlinkSync(file);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop); // the benchmark's process went away (or ^D in a terminal)
process.stdin.resume();

let n = 0;
const probe = () => {
  if (stopped) return;
  writeSync(fd, page, 0, page.length, (n++ % PAGES) * page.length);
  const startedAt = Date.now();
  const t = performance.now();
  fdatasyncSync(fd);
  const ms = performance.now() - t;
  if (ms >= stallMs) process.stdout.write(`${startedAt} ${ms.toFixed(1)}\n`);
  setTimeout(probe, EVERY_MS);
};
process.stdout.write('ready\n');
probe();
