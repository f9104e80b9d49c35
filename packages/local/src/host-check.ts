import type { IncomingMessage, ServerResponse } from 'node:http';
import { networkInterfaces } from 'node:os';

type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * The `Host` names a local listener answers to (issue 37 §4, DNS rebinding): a page on `evil.example` whose name the
 * attacker's DNS then points at 127.0.0.1 is same-origin with the loopback listener as far as the browser knows, so
 * it could read every answer and send any request; only the `Host` it sends (`evil.example:8200`) gives it away.
 * Answered: the loopback names (`127.0.0.1`, `localhost`, `[::1]`) and the address the listener binds, on any port
 * (a relay or port forward in front of the listener keeps its own port; no DNS name can be spelt as an address),
 * every address of this machine when it binds all of them (`0.0.0.0`, `::`), and the names the operator lists in
 * `KEYHAVEN_ALLOWED_HOSTS` (`name` for any port, `name:port` for that one). Vault and Nomad check no Host; a request
 * without one (HTTP/1.0, never a browser) is taken.
 */
export function allowedHosts(bindHost: string, operatorHosts: readonly string[]): HostNames {
  const names = new Set(['127.0.0.1', 'localhost', '[::1]', bracketed(bindHost).toLowerCase()]);
  if (bindHost === '0.0.0.0' || bindHost === '::') {
    for (const addresses of Object.values(networkInterfaces()))
      for (const address of addresses ?? []) names.add(bracketed(address.address).toLowerCase());
  }
  const withPort = new Set<string>();
  for (const entry of operatorHosts) {
    const name = entry.trim().toLowerCase();
    if (!name) continue;
    if (/:\d+$/.test(name) && !name.endsWith(']')) withPort.add(name);
    else names.add(name);
  }
  return { names, withPort };
}

/** Host names answered on any port, and `name:port` pairs answered as written. */
export interface HostNames {
  names: ReadonlySet<string>;
  withPort: ReadonlySet<string>;
}

/** Whether a `Host` header names this listener. */
export function answersTo(allowed: HostNames, host: string): boolean {
  const value = host.trim().toLowerCase();
  if (allowed.withPort.has(value)) return true;
  const name = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(value)?.[1];
  return name !== undefined && allowed.names.has(name);
}

/** `KEYHAVEN_ALLOWED_HOSTS`: comma-separated host names (with a port or not) the local listeners also answer to. */
export function operatorHostsFromEnvironment(env: Record<string, string | undefined>): string[] {
  return (env.KEYHAVEN_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** The refusal of a request to another host name, in the service's own form. */
export type HostRefusal = (message: string) => { headers: Record<string, string>; body: string };

/** The listener, answering 403 to a request whose `Host` is not one of `allowed()`. */
export function hostChecked(listener: Listener, allowed: HostNames, refuse: HostRefusal): Listener {
  return (request, response) => {
    const host = request.headers.host;
    if (host === undefined || answersTo(allowed, host)) {
      listener(request, response);
      return;
    }
    // The request's body, if any, is left unread: the connection is closed with the answer.
    const { headers, body } = refuse(
      `this server does not answer to the host "${host.slice(0, 100)}" (KEYHAVEN_ALLOWED_HOSTS lists other names it may)`,
    );
    response.writeHead(403, { ...headers, Connection: 'close', 'Content-Length': String(Buffer.byteLength(body)) });
    response.end(body);
  };
}

const bracketed = (address: string) => (address.includes(':') && !address.startsWith('[') ? `[${address}]` : address);
