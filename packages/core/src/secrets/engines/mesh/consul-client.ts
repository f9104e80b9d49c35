import { createHash } from 'node:crypto';
import type * as Http from 'node:http';
import { BodyTooLarge, byteCounter, maxApiAnswerBytes } from '../../../lib/bounded-body.ts';

// The builtins' CommonJS objects, not an ESM `import`: node:http's module facade reads every export and so loads
// undici (~20 ms of a Lambda cold start) for exports nobody here uses.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/**
 * The few calls of Consul's HTTP API the mesh engine makes, over node:http(s) so a CA and a client
 * certificate can be given per mount (the global fetch cannot take them without an extra dependency).
 * Errors are worded like Consul's own Go client: `Unexpected response code: 403 (Permission denied …)`.
 */

export interface MeshAccess {
  /** `host:port`. */
  address: string;
  scheme: 'http' | 'https';
  /** A management token; '' before a bootstrap. */
  token: string;
  caCert: string;
  clientCert: string;
  clientKey: string;
}

/** Where a token lives on the server; '' means the server's `default`. */
export interface MeshScope {
  namespace: string;
  partition: string;
}

/** The server answered with an error status. */
export class MeshServerError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`Unexpected response code: ${status} (${detail})`);
  }
}

/** The server could not be reached: refused, timed out, or the TLS handshake failed. */
export class MeshUnreachable extends Error {}

/** The server answered 2xx with something a Consul server does not send. */
export class MeshBadAnswer extends Error {}

export interface ConsulTokenRequest {
  Description: string;
  Policies?: Array<{ Name: string }>;
  Roles?: Array<{ Name: string }>;
  ServiceIdentities?: Array<{ ServiceName: string; Datacenters?: string[] }>;
  NodeIdentities?: Array<{ NodeName: string; Datacenter: string }>;
  Local: boolean;
  Namespace?: string;
  Partition?: string;
}

export interface CreatedToken {
  AccessorID: string;
  SecretID: string;
  Local?: boolean;
  Namespace?: string;
  Partition?: string;
}

export interface LegacyToken {
  Name: string;
  Type: 'client' | 'management';
  Rules: string;
}

const requestTimeoutMs = 10_000;

/** Connections are kept alive per TLS identity, so a warm Lambda reuses them across requests. */
const agents = new Map<string, Http.Agent>();
const maxAgents = 16;

function agentFor(access: MeshAccess): Http.Agent {
  const key =
    access.scheme === 'http'
      ? 'http'
      : createHash('sha256')
          .update(['https', access.caCert, access.clientCert, access.clientKey].join('\0'))
          .digest('base64');
  let agent = agents.get(key);
  if (!agent) {
    if (agents.size >= maxAgents) {
      const [oldestKey, oldest] = agents.entries().next().value as [string, Http.Agent];
      oldest.destroy();
      agents.delete(oldestKey);
    }
    agent =
      access.scheme === 'http'
        ? new http.Agent({ keepAlive: true })
        : new https.Agent({
            keepAlive: true,
            ...(access.caCert ? { ca: access.caCert } : {}),
            ...(access.clientCert ? { cert: access.clientCert, key: access.clientKey } : {}),
          });
    agents.set(key, agent);
  }
  return agent;
}

export class ConsulClient {
  constructor(private readonly access: MeshAccess) {}

  /** `Config.Version` of `/v1/agent/self`, e.g. `1.15.4+ent`. */
  async agentVersion(): Promise<string> {
    const self = (await this.call('GET', '/v1/agent/self')) as { Config?: { Version?: unknown } } | undefined;
    const version = self?.Config?.Version;
    if (typeof version !== 'string') throw new MeshBadAnswer('/v1/agent/self reported no Config.Version');
    return version;
  }

  /** Bootstraps the ACL system and returns the management token's secret (`ID` below 1.4, `SecretID` after). */
  async bootstrap(): Promise<string> {
    const reply = (await this.call('PUT', '/v1/acl/bootstrap')) as { SecretID?: string; ID?: string } | undefined;
    const secret = reply?.SecretID || reply?.ID;
    if (!secret) throw new MeshBadAnswer('the bootstrap reply carried no token');
    return secret;
  }

  async createToken(token: ConsulTokenRequest): Promise<CreatedToken> {
    const created = (await this.call('PUT', '/v1/acl/token', token)) as Partial<CreatedToken> | undefined;
    if (!created?.AccessorID || !created.SecretID)
      throw new MeshBadAnswer('the token the server created has no AccessorID or SecretID');
    return created as CreatedToken;
  }

  async deleteToken(accessor: string, scope: MeshScope): Promise<void> {
    await this.call('DELETE', `/v1/acl/token/${encodeURIComponent(accessor)}`, undefined, scopeQuery(scope));
  }

  /** Servers below 1.4 (and legacy roles up to 1.10): `/v1/acl/create` answers `{"ID": secret}`. */
  async legacyCreate(token: LegacyToken): Promise<string> {
    const reply = (await this.call('PUT', '/v1/acl/create', token)) as { ID?: string } | undefined;
    if (!reply?.ID) throw new MeshBadAnswer('the legacy create reply carried no ID');
    return reply.ID;
  }

  async legacyDestroy(secret: string): Promise<void> {
    await this.call('PUT', `/v1/acl/destroy/${encodeURIComponent(secret)}`);
  }

  private call(method: string, path: string, body?: unknown, query: Record<string, string> = {}): Promise<unknown> {
    const { access } = this;
    const [host, port] = splitAddress(access.address, access.scheme);
    const search = new URLSearchParams(query).toString();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (access.token) headers['X-Consul-Token'] = access.token;
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const options = { host, port, method, path: search ? `${path}?${search}` : path, headers, agent: agentFor(access) };
    return new Promise((resolve, reject) => {
      const request = access.scheme === 'https' ? https.request(options) : http.request(options);
      request.setTimeout(requestTimeoutMs, () =>
        request.destroy(new Error(`no answer within ${requestTimeoutMs / 1000} s`)),
      );
      request.on('error', (error) =>
        reject(
          new MeshUnreachable(
            `the mesh server at ${access.scheme}://${access.address} is unreachable: ${error.message}`,
          ),
        ),
      );
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        // An answer past the cap is cut off, unread (issue 39 §3): the mesh server's largest answers are a few kB.
        const within = byteCounter(maxApiAnswerBytes, () => {
          reject(
            new MeshBadAnswer(new BodyTooLarge(`the mesh server at ${access.address}`, maxApiAnswerBytes).message),
          );
          request.destroy();
        });
        response.on('data', (chunk: Buffer) => {
          if (within(chunk)) chunks.push(chunk);
        });
        response.on('error', (error) =>
          reject(new MeshUnreachable(`the mesh server at ${access.address} broke off its answer: ${error.message}`)),
        );
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = response.statusCode ?? 0;
          if (status < 200 || status >= 300) return reject(new MeshServerError(status, text.trim()));
          if (text.trim() === '') return resolve(undefined);
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new MeshBadAnswer(`the answer to ${method} ${path} is not JSON`));
          }
        });
      });
      request.end(payload);
    });
  }
}

function scopeQuery(scope: MeshScope): Record<string, string> {
  return {
    ...(scope.namespace ? { ns: scope.namespace } : {}),
    ...(scope.partition ? { partition: scope.partition } : {}),
  };
}

/** `host:port`, `host`, `[v6]:port`; the port defaults as Consul's client does (8500, or 8501 for https). */
function splitAddress(address: string, scheme: MeshAccess['scheme']): [string, number] {
  const url = new URL(`${scheme}://${address}`);
  const port = url.port ? Number(url.port) : scheme === 'https' ? 8501 : 8500;
  return [url.hostname.replace(/^\[|\]$/g, ''), port];
}

/** A server version as `/v1/agent/self` reports it (`1.15.4+ent`, `1.4.0-dev`). */
export class ServerVersion {
  private constructor(
    readonly text: string,
    private readonly parts: [number, number, number],
  ) {}

  static parse(text: string): ServerVersion {
    const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text.trim());
    if (!match) throw new MeshBadAnswer(`/v1/agent/self reported an unreadable version "${text}"`);
    return new ServerVersion(text, [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)]);
  }

  /** Whether this version is `minimum` (`"1.8"`) or later. */
  atLeast(minimum: string): boolean {
    const wanted = minimum.split('.').map(Number);
    for (let i = 0; i < 3; i++) {
      const have = this.parts[i] as number;
      const want = wanted[i] ?? 0;
      if (have !== want) return have > want;
    }
    return true;
  }
}
