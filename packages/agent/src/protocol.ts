/**
 * The client side of the scheduler's client protocol: Nomad's client RPCs (`Node.Register`, `Node.UpdateStatus`,
 * `Node.EmitEvents`, `Node.GetClientAllocs`, `Alloc.GetAlloc`, `Node.UpdateAlloc`, `ServiceRegistration.Upsert` and
 * `.DeleteByID`) as HTTP JSON under `/v1/client/`.
 * One `ProtocolClient` is shared by every node a process speaks for (the agent's one, the simulated fleet's many): it
 * holds one keep-alive `http.Agent`, so 10,000 simulated nodes share a handful of sockets. Every call names its
 * credential (`X-Nomad-Token`); an answer other than 2xx is a `ProtocolError` carrying the status and the server's
 * plain-text message; a server that cannot be reached is tried again on the next server of the list.
 */
import http from 'node:http';
import https from 'node:https';
import * as z from 'zod/mini';
import type { ClientNode, NodeEvent } from './node.ts';
import type { Allocation, ClientStatus, TaskState } from './runner/types.ts';

/** An answer the server gave with a status other than 2xx. */
export class ProtocolError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly call: string,
  ) {
    super(`${call}: HTTP ${status}: ${body.trim().slice(0, 500)}`);
  }
}

/** None of the servers answered (refused, reset, timed out). */
export class ServersUnreachable extends Error {}

/** Nomad's `NodeUpdateResponse` as the register and status calls answer it (TTL in nanoseconds). */
const updateResponse = z.object({
  HeartbeatTTL: z.number(),
  Index: z.number(),
  NodeModifyIndex: z.optional(z.number()),
  EvalIDs: z.optional(z.nullable(z.array(z.string()))),
  EvalCreateIndex: z.optional(z.number()),
  /** The index of the node's allocation map: the agent reads the map when it moved. */
  AllocIndex: z.optional(z.number()),
  SignedIdentity: z.optional(z.string()),
});
export type NodeUpdateResponse = z.infer<typeof updateResponse>;

const eventsResponse = z.object({ Index: z.number() });
const allocsResponse = z.object({ Allocs: z.nullable(z.record(z.string(), z.number())), Index: z.number() });
export type ClientAllocs = { Allocs: Record<string, number>; Index: number };
const indexResponse = z.object({ Index: z.number() });
/** The allocation as the agent needs it; the rest of Nomad's fields are carried as they come. */
const allocationResponse = z.looseObject({
  ID: z.string(),
  Name: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  TaskGroup: z.string(),
  DesiredStatus: z.enum(['run', 'stop', 'evict']),
  Job: z.nullable(z.looseObject({ ID: z.string(), TaskGroups: z.nullable(z.array(z.looseObject({}))) })),
});

/** One allocation's update as the agent reports it (`Node.UpdateAlloc`). */
export interface AllocUpdate {
  ID: string;
  ClientStatus: ClientStatus;
  ClientDescription: string;
  TaskStates: Record<string, TaskState>;
  DeploymentStatus?: { Healthy: boolean; Timestamp: string };
}

/** Nomad's `structs.ServiceRegistration` as the agent sends it. */
export interface ServiceRegistration {
  ID: string;
  ServiceName: string;
  Namespace: string;
  NodeID: string;
  Datacenter: string;
  JobID: string;
  AllocID: string;
  Tags: string[];
  Address: string;
  Port: number;
}

export interface ProtocolClientOptions {
  /** Server addresses (`http://127.0.0.1:4646`), tried in order; the last one that answered is tried first. */
  servers: string[];
  /** Sockets kept open per server (default 16). */
  maxSockets?: number;
  /** How long a call may take before it counts as unanswered, blocking polls excepted (default 15 s). */
  timeoutMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** How long this call may take (a blocking poll: its wait and some). */
  timeoutMs?: number;
}

export class ProtocolClient {
  private readonly servers: URL[];
  private preferred = 0;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly timeoutMs: number;
  /** Calls made, by name (the cost bench counts them). */
  readonly calls = new Map<string, number>();

  constructor(options: ProtocolClientOptions) {
    if (options.servers.length === 0) throw new Error('no server address given');
    this.servers = options.servers.map((address) => {
      const url = new URL(address.includes('://') ? address : `http://${address}`);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new Error(`a server address is http:// or https://, not "${address}"`);
      return url;
    });
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 16 };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  /** `Node.Register`: with an introduction token for a new node, its SecretID (or identity) for a known one. */
  async register(node: ClientNode, credential: string, options: CallOptions = {}): Promise<NodeUpdateResponse> {
    const body = await this.call('register', 'POST', '/v1/client/register', credential, { Node: node }, options);
    return updateResponse.parse(body);
  }

  /** `Node.UpdateStatus`: the heartbeat, with the status the node reports and a node event to record. */
  async updateStatus(
    nodeId: string,
    credential: string,
    status: 'initializing' | 'ready',
    event?: NodeEvent,
    options: CallOptions = {},
  ): Promise<NodeUpdateResponse> {
    const body = await this.call(
      'heartbeat',
      'PUT',
      `/v1/client/node/${encodeURIComponent(nodeId)}/status`,
      credential,
      { Status: status, ...(event ? { NodeEvent: event } : {}) },
      options,
    );
    return updateResponse.parse(body);
  }

  /** `Node.EmitEvents`: node events to record on the node. */
  async emitEvents(nodeId: string, credential: string, events: NodeEvent[], options: CallOptions = {}) {
    const body = await this.call(
      'events',
      'PUT',
      `/v1/client/node/${encodeURIComponent(nodeId)}/events`,
      credential,
      { Events: events },
      options,
    );
    return eventsResponse.parse(body);
  }

  /**
   * `Node.GetClientAllocs`: the node's allocation map, blocking until its index passes `index` or `waitMs` ends; with
   * `index` 0 and `waitMs` 0 a plain read (no query: nothing held open), which is how the agent calls it.
   */
  async allocations(
    nodeId: string,
    credential: string,
    index: number,
    waitMs: number,
    options: CallOptions = {},
  ): Promise<ClientAllocs> {
    const query =
      index === 0 && waitMs === 0
        ? ''
        : `?${new URLSearchParams({ index: String(index), wait: `${Math.max(0, Math.round(waitMs / 1000))}s` })}`;
    const body = await this.call(
      'allocations',
      'GET',
      `/v1/client/node/${encodeURIComponent(nodeId)}/allocations${query}`,
      credential,
      undefined,
      { ...options, timeoutMs: options.timeoutMs ?? waitMs + this.timeoutMs },
    );
    const parsed = allocsResponse.parse(body);
    return { Allocs: parsed.Allocs ?? {}, Index: parsed.Index };
  }

  /** `Alloc.GetAlloc`: one allocation placed on this node, its job rehydrated. */
  async allocation(allocId: string, credential: string, options: CallOptions = {}): Promise<Allocation> {
    const body = await this.call(
      'allocation',
      'GET',
      `/v1/client/allocation/${encodeURIComponent(allocId)}`,
      credential,
      undefined,
      options,
    );
    return allocationResponse.parse(body) as unknown as Allocation;
  }

  /** `Node.UpdateAlloc`: the client status and task states of allocations of this node, in one write. */
  async updateAllocations(nodeId: string, credential: string, allocs: AllocUpdate[], options: CallOptions = {}) {
    const body = await this.call(
      'update-allocations',
      'PUT',
      `/v1/client/node/${encodeURIComponent(nodeId)}/allocations`,
      credential,
      { Allocs: allocs },
      options,
    );
    return indexResponse.parse(body);
  }

  /** `ServiceRegistration.Upsert`: services of allocations running on this node. */
  async upsertServices(credential: string, services: ServiceRegistration[], options: CallOptions = {}) {
    const body = await this.call(
      'upsert-services',
      'PUT',
      '/v1/client/services',
      credential,
      { Services: services },
      options,
    );
    return indexResponse.parse(body);
  }

  /** `ServiceRegistration.DeleteByID`: one of this node's services. */
  async deleteService(credential: string, serviceId: string, options: CallOptions = {}) {
    const body = await this.call(
      'delete-service',
      'DELETE',
      `/v1/client/service/${encodeURIComponent(serviceId)}`,
      credential,
      undefined,
      options,
    );
    return indexResponse.parse(body);
  }

  /** Closes the kept sockets. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private async call(
    name: string,
    method: string,
    path: string,
    credential: string,
    payload: unknown,
    options: CallOptions,
  ): Promise<unknown> {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    const body = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
    let lastFailure: unknown;
    for (let tried = 0; tried < this.servers.length; tried++) {
      const position = (this.preferred + tried) % this.servers.length;
      const server = this.servers[position] as URL;
      try {
        const answer = await this.send(server, method, path, credential, body, options);
        this.preferred = position;
        if (answer.status < 200 || answer.status > 299) throw new ProtocolError(answer.status, answer.text, name);
        return answer.text === '' ? {} : JSON.parse(answer.text);
      } catch (error) {
        if (error instanceof ProtocolError || options.signal?.aborted) throw error;
        lastFailure = error;
      }
    }
    throw new ServersUnreachable(
      `${name}: no server answered (${lastFailure instanceof Error ? lastFailure.message : String(lastFailure)})`,
      { cause: lastFailure },
    );
  }

  private send(
    server: URL,
    method: string,
    path: string,
    credential: string,
    body: Buffer | undefined,
    options: CallOptions,
  ): Promise<{ status: number; text: string }> {
    const secure = server.protocol === 'https:';
    const base = server.pathname.replace(/\/+$/, '');
    return new Promise((resolve, reject) => {
      const request = (secure ? https : http).request(
        {
          protocol: server.protocol,
          hostname: server.hostname,
          port: server.port || (secure ? 443 : 80),
          method,
          path: `${base}${path}`,
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers: {
            'X-Nomad-Token': credential,
            Accept: 'application/json',
            ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(body.length) } : {}),
          },
          timeout: options.timeoutMs ?? this.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          response.on('error', reject);
        },
      );
      request.on('timeout', () =>
        request.destroy(new Error(`no answer within ${options.timeoutMs ?? this.timeoutMs} ms`)),
      );
      request.on('error', reject);
      request.end(body);
    });
  }
}
