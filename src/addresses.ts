// Addresses in the configuration: the proxies TRUST_PROXY lists, and loopback hosts (where
// plain http never leaves the machine). Read by config.ts.
import ipaddr from 'ipaddr.js';

/** The proxies TRUST_PROXY lists, parsed once: Fastify asks `trusts` of each hop of each request. */
export interface TrustedProxies {
  /** Each range in CIDR notation (an address alone is a /32 or /128). */
  ranges: string[];
  /** Whether an address (the TCP peer, then each X-Forwarded-For hop from the right) is a proxy's. */
  trusts: (address: string) => boolean;
}

/**
 * Live's shortest prefixes in TRUST_PROXY. A wider range holds addresses that are not the
 * operator's proxies (0.0.0.0/1 and 128.0.0.0/1 together are everyone), and any client there
 * could pick the address the rate limits count with X-Forwarded-For. /8 is the widest private
 * IPv4 network (10.0.0.0/8); /32 an IPv6 allocation to one organisation.
 */
const MIN_PROXY_PREFIX = { ipv4: 8, ipv6: 32 } as const;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An IP address in its usual notation (IPv4 only as four decimal parts), IPv4-mapped IPv6 as IPv4. */
function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const v6 = ipaddr.IPv6.parse(text);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/** `10.0.0.0/8`, `2001:db8::/32` or an address alone; undefined when it is neither. */
function parseRange(text: string): [Address, number] | undefined {
  const [addressText = '', bitsText, ...rest] = text.split('/');
  if (rest.length > 0) return undefined;
  let address: Address;
  if (ipaddr.IPv4.isValidFourPartDecimal(addressText)) address = ipaddr.IPv4.parse(addressText);
  else if (ipaddr.IPv6.isValid(addressText)) address = ipaddr.IPv6.parse(addressText);
  else return undefined;
  const max = address.kind() === 'ipv4' ? 32 : 128;
  const bits = bitsText === undefined ? max : /^[0-9]{1,3}$/.test(bitsText) ? Number(bitsText) : -1;
  if (bits < 0 || bits > max) return undefined;
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps: addresses are compared as IPv4.
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && bits >= 96)
    return [address.toIPv4Address(), bits - 96];
  return [address, bits];
}

export function parseTrustProxy(
  raw: string | undefined,
  environment: 'sandbox' | 'live',
  problems: string[],
): boolean | TrustedProxies {
  if (raw === undefined || /^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  const ranges: [Address, number][] = [];
  for (const item of raw.split(',').map((s) => s.trim())) {
    const range = parseRange(item);
    if (!range) {
      problems.push(
        `TRUST_PROXY must be true, false or a comma-separated list of proxy addresses or CIDR ranges (TRUST_PROXY=10.0.0.0/8,10.1.2.3); "${item}" is neither`,
      );
      continue;
    }
    const min = MIN_PROXY_PREFIX[range[0].kind()];
    if (environment === 'live' && range[1] < min) {
      problems.push(
        `live refuses TRUST_PROXY range ${item}: ${range[0].kind() === 'ipv4' ? 'IPv4' : 'IPv6'} ranges wider than /${min} trust more than your proxies, so any client could pick the address the rate limits count; list your proxies' own addresses or subnets`,
      );
    }
    ranges.push(range);
  }
  if (ranges.length === 0) return false;
  return {
    ranges: ranges.map(([a, bits]) => `${a.toString()}/${bits}`),
    trusts: (address) => {
      const a = parseAddress(address);
      return a !== undefined && ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
    },
  };
}

/** `localhost` or a loopback address (127.0.0.0/8, ::1): where plain http never leaves the host. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost') return true;
  return parseAddress(host)?.range() === 'loopback';
}
