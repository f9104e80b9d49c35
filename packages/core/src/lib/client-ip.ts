import ipaddr from 'ipaddr.js';

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
    if (!ipaddr.isValid(hop)) return sourceIp;
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
    if (!ipaddr.isValid(entry) && !isCidr(entry)) {
      throw new Error(`KEYHAVEN_TRUSTED_PROXIES: ${JSON.stringify(entry)} is neither an IP address nor a CIDR`);
    }
  }
  return entries;
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}

function trusted(address: string, proxies: readonly string[]): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return proxies.some((proxy) => {
    if (ipaddr.isValid(proxy)) return ipaddr.process(proxy).toString() === parsed.toString();
    try {
      const range = ipaddr.parseCIDR(proxy);
      return parsed.kind() === range[0].kind() && parsed.match(range);
    } catch {
      return false;
    }
  });
}
