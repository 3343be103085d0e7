// Where webhooks may be sent. Only http(s) URLs without credentials. Unless the operator opts in
// for local development (WEBHOOK_ALLOW_PRIVATE, sandbox only), receivers on loopback, private,
// link-local and other non-public addresses are refused twice: at registration (IP literals and
// localhost names) and at connect time, where every address a name resolves to is checked (DNS
// answers cannot route around the rule, and the checked address is the one connected to, so a
// second lookup cannot swap it).
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const cidrs = (list: string[]) => list.map((c) => ipaddr.parseCIDR(c));

/** IPv4 ranges no public receiver has (the IANA special-purpose registry, and multicast). */
const IPV4_BLOCKED = cidrs([
  '0.0.0.0/8', // "this" network
  '10.0.0.0/8',
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8',
  '169.254.0.0/16', // link-local, cloud metadata
  '172.16.0.0/12',
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation (TEST-NET-1): never routed on the internet, sometimes used inside networks
  '192.88.99.0/24', // the deprecated 6to4 relay anycast
  '192.168.0.0/16',
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation (TEST-NET-2)
  '203.0.113.0/24', // documentation (TEST-NET-3)
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
]);

/**
 * IPv6 forms that carry an IPv4 address, and where it sits (byte offset). They reach, or are
 * translated to, that IPv4 address, so it decides: a NAT64 or 6to4 address of a public host is
 * public, one wrapping 127.0.0.1 or 10.0.0.1 is not.
 */
const IPV6_EMBEDDING: [ReturnType<typeof ipaddr.parseCIDR>, number][] = [
  [ipaddr.parseCIDR('::ffff:0:0/96'), 12], // IPv4-mapped
  [ipaddr.parseCIDR('::ffff:0:0:0/96'), 12], // IPv4-translated (SIIT)
  [ipaddr.parseCIDR('::/96'), 12], // IPv4-compatible (deprecated); also covers :: and ::1 (0.0.0.0/8)
  [ipaddr.parseCIDR('64:ff9b::/96'), 12], // NAT64, the well-known prefix
  [ipaddr.parseCIDR('2002::/16'), 2], // 6to4: the IPv4 address follows the prefix
];

/**
 * Public receivers are in global unicast, 2000::/3: everything outside it is refused, which
 * covers loopback, unique-local fc00::/7, link-local fe80::/10, the deprecated site-local
 * fec0::/10, multicast ff00::/8, discard-only 100::/64 (a black hole: an attempt would only
 * hang), segment-routing 5f00::/16, and the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215:
 * each network picks where the IPv4 address sits inside it, so it cannot be checked; it is for
 * local use and never a route to the internet). Inside 2000::/3, these are refused too:
 */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const IPV6_BLOCKED = cidrs([
  // IETF protocol assignments: Teredo 2001::/32 (a NAT-traversal address of an end host, never a
  // server's; its client IPv4 is stored XOR-ed, and the tunnel reaches whatever sits behind
  // that NAT, so it is refused outright rather than decoded), benchmarking 2001:2::/48, ORCHID,
  // AMT and AS112 anycast. None of them is a webhook receiver.
  '2001::/23',
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
]);

function isPublicIPv4(a: ipaddr.IPv4): boolean {
  return !IPV4_BLOCKED.some((range) => a.match(range));
}

/** False for loopback, private and other addresses a public receiver never has. */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  const a = ipaddr.parse(address);
  if (a.kind() === 'ipv4') return isPublicIPv4(a as ipaddr.IPv4);
  const v6 = a as ipaddr.IPv6;
  for (const [range, at] of IPV6_EMBEDDING) {
    if (v6.match(range)) return isPublicIPv4(ipaddr.fromByteArray(v6.toByteArray().slice(at, at + 4)) as ipaddr.IPv4);
  }
  return v6.match(IPV6_GLOBAL_UNICAST) && !IPV6_BLOCKED.some((range) => v6.match(range));
}

export interface UrlProblem {
  detail: string;
}

/** The URL's host as an address or a name: brackets, a trailing dot and case removed. */
export function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/** The way past the refusal of a non-public receiver, for a developer's own machine. */
const LOCAL_HINT = '; for local development, start the sandbox with WEBHOOK_ALLOW_PRIVATE=true';

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
  const host = hostOf(url);
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) {
    return { detail: `must be a public address (no localhost or internal names)${LOCAL_HINT}` };
  }
  if (isIP(host) && !isPublicAddress(host))
    return { detail: `must be a public address (no loopback, private or reserved networks)${LOCAL_HINT}` };
  return undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type LookupFn = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

export const systemLookup = dnsLookup as unknown as LookupFn;

/**
 * The error of a connection refused by the address policy. Its words are the same whether the
 * name resolves only to non-public addresses, does not resolve at all, or connected to a
 * non-public address, so that attempts cannot tell which internal names exist.
 */
export function notPublic(host: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(
    `${host} has no public address: register a receiver on a public address${LOCAL_HINT}`,
  );
  e.code = 'EADDRNOTALLOWED';
  return e;
}

/** A dns.lookup that refuses non-public answers: the connect-time guard. */
export function publicOnlyLookup(
  base: LookupFn = systemLookup,
  isPublic: (address: string) => boolean = isPublicAddress,
): LookupFn {
  return (hostname, options, callback) => {
    base(hostname, { ...options, all: true }, (err, addresses) => {
      const list = err ? [] : (addresses as LookupAddress[]).filter((a) => isPublic(a.address));
      if (list.length === 0) return callback(notPublic(hostname), []);
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
