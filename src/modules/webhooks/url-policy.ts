// Where webhooks may be sent. Only http(s) URLs without credentials. In live, receivers on
// loopback, private, link-local and other non-public addresses are refused twice: at
// registration (IP literals and localhost names) and at connect time, where every address a
// name resolves to is checked (DNS answers cannot route around the rule, and the checked
// address is the one connected to, so a second lookup cannot swap it).
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** False for loopback, private and other addresses a public receiver never has. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return isPublicAddress(mapped[1]!);
    return !blocked.check(address, 'ipv6');
  }
  return !blocked.check(address, 'ipv4');
}

export interface UrlProblem {
  detail: string;
}

/** Checks a receiver URL at registration; returns the problem or undefined. */
export function checkWebhookUrl(raw: string, opts: { allowPrivate: boolean }): UrlProblem | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { detail: 'must be an absolute http or https URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { detail: 'must use http or https' };
  if (url.username || url.password) return { detail: 'must not contain credentials' };
  if (url.hash) return { detail: 'must not contain a fragment' };
  if (opts.allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) {
    return { detail: 'must be a public address (no localhost or internal names in live)' };
  }
  if (isIP(host) && !isPublicAddress(host)) return { detail: 'must be a public address (no loopback or private networks in live)' };
  return undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type LookupFn = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** A dns.lookup that refuses non-public answers; used as the connect-time guard in live. */
export function publicOnlyLookup(base: LookupFn = dnsLookup as unknown as LookupFn): LookupFn {
  return (hostname, options, callback) => {
    base(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = (addresses as LookupAddress[]).filter((a) => isPublicAddress(a.address));
      if (list.length === 0) {
        const e: NodeJS.ErrnoException = new Error(`${hostname} resolves only to non-public addresses`);
        e.code = 'EADDRNOTALLOWED';
        return callback(e, []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
