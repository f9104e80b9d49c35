/**
 * An in-process emulator of the parts of Consul's HTTP API that an ACL token issuer uses, following Consul's
 * published API reference (api-docs/acl, acl/tokens, acl/policies, acl/roles, acl/legacy, namespaces,
 * admin-partitions, agent) field by field:
 *
 * - `PUT /v1/acl/bootstrap`: once; afterwards (or when an initial management token is configured) 403
 *   `Permission denied: ACL bootstrap no longer allowed (reset index: N)`. Below 1.4 it answers `{"ID"}`.
 * - `/v1/acl/token` (create), `/v1/acl/token/:AccessorID` (read, delete), `/v1/acl/token/self`, `/v1/acl/tokens`
 * - `/v1/acl/policy` (create), `/v1/acl/policy/:id` (read, update, delete), `/v1/acl/policy/name/:name`, `/v1/acl/policies`
 * - `/v1/acl/role` … the same shapes as policies (1.5+)
 * - legacy (below 1.11): `PUT /v1/acl/create`, `PUT /v1/acl/destroy/:id`, `GET /v1/acl/info/:id`, `GET /v1/acl/list`
 * - Enterprise: `/v1/namespace` (1.7+) and `/v1/partition` (1.11+): create, read, update, delete, list
 * - `GET /v1/agent/self`: `Config.Version` tells clients which of the above exist.
 *
 * Which endpoints and request fields exist follows the server version, as the reference's "Added in" notes say:
 * the token API and policies from 1.4, roles, service identities and expiration from 1.5, namespaces from 1.7,
 * node identities from 1.8, partitions from 1.11, and the legacy API removed in 1.11. Unknown JSON keys are
 * refused the way Consul's decoder refuses them. Auth is `X-Consul-Token` (or `Authorization: Bearer`, or
 * `?token=`): no token is the anonymous token, which may do nothing; an unknown one is 403 `ACL not found`.
 * A token may manage ACLs when it links the builtin `global-management` policy (or is a legacy `management`
 * token), or when one of its policies has a rule `acl = "write"` (`"read"` for reads); `agent` / `agent_prefix`
 * rules grant `/v1/agent/self`. Rules are otherwise stored, not interpreted.
 *
 * Errors are plain text, with Consul's statuses: 400 for a body that does not decode, 403 for permission and
 * unknown tokens, 404 for unknown endpoints, 500 for the server-side validation errors (an RPC error without
 * a type, as Consul answers them). Enterprise-only error texts are not in the public reference; ours say
 * the same thing plainly.
 *
 * TLS: give `tls` (a server certificate, and a CA to require client certificates as `verify_incoming` does).
 * `stop()` closes the listener and every open connection but keeps the state; `start()` listens again on the
 * same port, so a test can take the server down in the middle of a lease's life.
 *
 * The endpoints are a route table (consul/routes.ts) over per-resource handlers (consul/tokens.ts, policies.ts,
 * roles.ts, legacy.ts, tenancy.ts, agent.ts) that share the state in consul/state.ts.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { anonymousAccessor, ConsulError, type ParsedRequest, parseVersion } from './consul/model.ts';
import { consulRouter } from './consul/routes.ts';
import { createConsulState } from './consul/state.ts';

export interface ConsulEmulatorOptions {
  /** The Consul version `/v1/agent/self` reports and the API follows. Default `1.15.4`. */
  version?: string;
  /** Enterprise has namespaces (1.7+) and admin partitions (1.11+). Default true. */
  enterprise?: boolean;
  datacenter?: string;
  /** `acl.tokens.initial_management`: a management token that exists from the start (bootstrap is then refused). */
  initialManagementToken?: string;
  tls?: { cert: string; key: string /** Require client certificates signed by this CA. */; clientCa?: string };
}

/** A stored token as the server holds it: links resolved to names, secrets in clear. For assertions. */
export interface StoredToken {
  AccessorID: string;
  SecretID: string;
  Description: string;
  Policies: Array<{ ID: string; Name: string }>;
  Roles: Array<{ ID: string; Name: string }>;
  ServiceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  NodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  Local: boolean;
  Namespace: string;
  Partition: string;
  /** Legacy tokens only: `client` or `management`, and their rules. */
  Type?: string;
  Rules?: string;
  ExpirationTime?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
}

export interface ConsulEmulator {
  /** `host:port`, as an access config's `address`. */
  readonly address: string;
  readonly scheme: 'http' | 'https';
  /** The version the server reports; settable, to upgrade or downgrade the server under a client. */
  version: string;
  readonly running: boolean;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Every live token, in every namespace and partition. */
  tokens(): StoredToken[];
  /** A live token by accessor or secret. */
  token(id: string): StoredToken | undefined;
  /** A request to this server over the network (HTTPS with the given client material). */
  request(
    method: string,
    path: string,
    options?: RequestOptions,
  ): Promise<{ status: number; body: string; json: unknown }>;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  tls?: { ca?: string; cert?: string; key?: string };
}

export async function startConsulEmulator(options: ConsulEmulatorOptions = {}): Promise<ConsulEmulator> {
  const s = createConsulState(options);
  const { requests, tokens, live, stored } = s;
  const route = consulRouter(s);

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(incoming.url ?? '/', 'http://consul');
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const request: ParsedRequest = {
      method: incoming.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(
        Object.entries(incoming.headers).map(([key, value]) => [
          key,
          Array.isArray(value) ? (value[0] ?? '') : (value ?? ''),
        ]),
      ),
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push({ method: request.method, path: request.path, query: request.query });
    let status = 200;
    let body: string;
    try {
      body = JSON.stringify(route(request));
      response.setHeader('Content-Type', 'application/json');
      response.setHeader('X-Consul-Index', String(s.index));
      response.setHeader('X-Consul-KnownLeader', 'true');
      response.setHeader('X-Consul-LastContact', '0');
    } catch (error) {
      if (!(error instanceof ConsulError)) throw error;
      status = error.status;
      body = error.message;
      response.setHeader('Content-Type', 'text/plain; charset=utf-8');
    }
    response.statusCode = status;
    response.end(body);
  }

  const listener = (incoming: IncomingMessage, response: ServerResponse) => {
    handle(incoming, response).catch((error: unknown) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  };
  const tls = options.tls;
  const makeServer = () =>
    tls
      ? https.createServer(
          {
            cert: tls.cert,
            key: tls.key,
            ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
          },
          listener,
        )
      : http.createServer(listener);

  let server: http.Server | undefined;
  let port = 0;
  const listen = async () => {
    const created = makeServer();
    await new Promise<void>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, '127.0.0.1', () => resolve());
    });
    port = (created.address() as AddressInfo).port;
    server = created;
  };
  const shut = async () => {
    const current = server;
    if (!current) return;
    server = undefined;
    current.closeAllConnections();
    await new Promise<void>((resolve) => current.close(() => resolve()));
  };
  await listen();
  const scheme = tls ? ('https' as const) : ('http' as const);

  return {
    get address() {
      return `127.0.0.1:${port}`;
    },
    scheme,
    get version() {
      return s.versionText;
    },
    set version(value: string) {
      s.version = parseVersion(value);
      s.versionText = value;
    },
    get running() {
      return server !== undefined;
    },
    requests,
    tokens: () =>
      [...tokens.values()].filter((token) => token.accessor !== anonymousAccessor && live(token)).map(stored),
    token(id) {
      const found = [...tokens.values()].find((token) => (token.accessor === id || token.secret === id) && live(token));
      return found && stored(found);
    },
    request: (method, path, requestOptions = {}) => send(scheme, `127.0.0.1:${port}`, method, path, requestOptions),
    stop: shut,
    start: async () => {
      if (!server) await listen();
    },
    close: shut,
  };
}

/** A plain HTTP(S) call, the way a Consul client makes one; the body comes back as text and, when it parses, JSON. */
function send(scheme: 'http' | 'https', address: string, method: string, path: string, options: RequestOptions) {
  const [host, port] = address.split(':') as [string, string];
  const payload =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    ...(options.token ? { 'X-Consul-Token': options.token } : {}),
    ...options.headers,
  };
  if (payload !== undefined) headers['Content-Length'] = String(Buffer.byteLength(payload));
  return new Promise<{ status: number; body: string; json: unknown }>((resolve, reject) => {
    const common = { host, port: Number(port), method, path, headers, agent: false as const };
    const request = scheme === 'https' ? https.request({ ...common, ...(options.tls ?? {}) }) : http.request(common);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, body, json });
      });
    });
    request.on('error', reject);
    request.end(payload);
  });
}
