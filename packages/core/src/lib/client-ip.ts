import { BlockList, isIP } from 'node:net';

/**
 * The caller's address, one way for both services and every adapter (issue 23 §8): the address the connection
 * came from (the node socket, API Gateway's `requestContext.http.sourceIp`), unless that address is a proxy the
 * operator said to trust (`KEYHAVEN_TRUSTED_PROXIES`, CIDRs separated by commas, e.g. CloudFront's origin-facing
 * ranges). Only then is `X-Forwarded-For` read, from the right: each trusted hop is skipped, and the first address
 * that is not a trusted proxy is the caller. Anything to its left was written by the caller and is ignored.
 * Without trusted proxies `X-Forwarded-For` is never read: anyone can send it.
 */
export function clientIpFrom(
  sourceIp: string,
  forwardedFor: string | undefined,
  trustedProxies: readonly string[],
): string {
  if (trustedProxies.length === 0 || !trusted(sourceIp, trustedProxies)) return sourceIp;
  const hops = (forwardedFor ?? '')
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hops[index] as string;
    if (isIP(hop) === 0) return sourceIp;
    if (!trusted(hop, trustedProxies)) return hop;
  }
  return sourceIp;
}

/** `KEYHAVEN_TRUSTED_PROXIES`: CIDRs (or single addresses) separated by commas; unset or empty: none. An invalid entry is an error at start. */
export function trustedProxiesFromEnvironment(env: NodeJS.ProcessEnv): string[] {
  const entries = (env.KEYHAVEN_TRUSTED_PROXIES ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    if (isIP(entry) === 0 && !cidrOf(entry)) {
      throw new Error(`KEYHAVEN_TRUSTED_PROXIES: ${JSON.stringify(entry)} is neither an IP address nor a CIDR`);
    }
  }
  return entries;
}

/** A CIDR's address and prefix length, when the text is one: `10.0.0.0/8`, `2001:db8::/32`. */
function cidrOf(text: string): { network: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [network = '', prefix = '', extra] = text.split('/');
  const version = isIP(network);
  if (extra !== undefined || version === 0 || !/^\d{1,3}$/.test(prefix)) return undefined;
  const bits = Number(prefix);
  if (bits > (version === 4 ? 32 : 128)) return undefined;
  return { network, prefix: bits, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * The proxies as node's address matcher (`net.BlockList`, built once per list): an address matches its own entry,
 * a CIDR its range, an IPv4 address written as IPv6 (`::ffff:192.0.2.9`) its IPv4 entry. An entry that is neither
 * address nor CIDR matches nothing (the environment's list is checked at start).
 */
const matchers = new WeakMap<readonly string[], BlockList>();

function matcherOf(proxies: readonly string[]): BlockList {
  let matcher = matchers.get(proxies);
  if (!matcher) {
    matcher = new BlockList();
    for (const proxy of proxies) {
      const version = isIP(proxy);
      if (version !== 0) matcher.addAddress(proxy, version === 4 ? 'ipv4' : 'ipv6');
      const cidr = version === 0 ? cidrOf(proxy) : undefined;
      if (cidr) matcher.addSubnet(cidr.network, cidr.prefix, cidr.family);
    }
    matchers.set(proxies, matcher);
  }
  return matcher;
}

function trusted(address: string, proxies: readonly string[]): boolean {
  const version = isIP(address);
  return version !== 0 && matcherOf(proxies).check(address, version === 4 ? 'ipv4' : 'ipv6');
}
