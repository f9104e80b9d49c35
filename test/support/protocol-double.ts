/**
 * A recording stand-in for the scheduler's side of the client protocol (docs/client-protocol.md and part 2's
 * allocation and service calls), for the agent's tests while the server's routes are built: it registers any node,
 * answers heartbeats with the allocation index it holds, serves the allocations a test places, and records every
 * allocation update and service call the agent makes (applying them, so a terminal allocation leaves the map as the
 * server's does). It checks the agent's credential on every call after registration.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AllocUpdate, ServiceRegistration } from '../../packages/agent/src/protocol.ts';
import type { Allocation } from '../../packages/agent/src/runner/types.ts';

export class ProtocolDouble {
  private server: Server | undefined;
  url = '';
  index = 1;
  nodeId = '';
  /** The node as the agent last registered it. */
  // biome-ignore lint/suspicious/noExplicitAny: the agent's JSON as it comes
  node: any;
  private secret = '';
  readonly allocs = new Map<string, Allocation>();
  readonly updates: AllocUpdate[] = [];
  readonly services = new Map<string, ServiceRegistration>();
  readonly serviceCalls: string[] = [];
  readonly refused: string[] = [];

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      void this.handle(request, response).catch((error: Error) => {
        response.writeHead(500).end(error.message);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Places (or replaces) an allocation on the node; the map's index moves. */
  place(alloc: Allocation): void {
    this.index++;
    this.allocs.set(alloc.ID, { ...alloc, NodeID: this.nodeId, AllocModifyIndex: this.index });
  }

  /** The server stops an allocation (DesiredStatus stop). */
  stop(id: string): void {
    const alloc = this.allocs.get(id);
    if (!alloc) throw new Error(`no allocation ${id}`);
    this.place({ ...alloc, DesiredStatus: 'stop' });
  }

  /** Allocations the agent must act on: not terminal on the client's side. */
  private map(): Record<string, number> {
    const map: Record<string, number> = {};
    for (const alloc of this.allocs.values())
      if (!['complete', 'failed', 'lost'].includes(alloc.ClientStatus)) map[alloc.ID] = alloc.AllocModifyIndex;
    return map;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    // biome-ignore lint/suspicious/noExplicitAny: the agent's JSON as it comes
    const body: any = text ? JSON.parse(text) : undefined;
    const url = new URL(request.url ?? '/', this.url);
    const token = String(request.headers['x-nomad-token'] ?? '');
    const answer = (status: number, value: unknown) => {
      response.writeHead(status, { 'Content-Type': 'application/json', 'X-Nomad-Index': String(this.index) });
      response.end(typeof value === 'string' ? value : JSON.stringify(value));
    };
    const beat = { HeartbeatTTL: 1e9, Index: this.index, AllocIndex: this.index, EvalIDs: [], EvalCreateIndex: 0 };
    if (url.pathname === '/v1/client/register') {
      this.nodeId = body.Node.ID;
      this.node = body.Node;
      this.secret = body.Node.SecretID;
      return answer(200, { ...beat, NodeModifyIndex: this.index });
    }
    if (token !== this.secret) {
      this.refused.push(`${request.method} ${url.pathname}`);
      return answer(403, 'Permission denied');
    }
    const node = `/v1/client/node/${this.nodeId}`;
    if (url.pathname === `${node}/status`) return answer(200, beat);
    if (url.pathname === `${node}/events`) return answer(200, { Index: this.index });
    if (url.pathname === `${node}/allocations` && request.method === 'GET')
      return answer(200, { Allocs: this.map(), Index: this.index });
    if (url.pathname === `${node}/allocations` && request.method === 'PUT') {
      this.index++;
      for (const update of body.Allocs as AllocUpdate[]) {
        this.updates.push(update);
        const alloc = this.allocs.get(update.ID);
        if (alloc)
          this.allocs.set(update.ID, {
            ...alloc,
            ClientStatus: update.ClientStatus,
            AllocModifyIndex: alloc.AllocModifyIndex,
          });
      }
      return answer(200, { Index: this.index });
    }
    const allocMatch = /^\/v1\/client\/allocation\/([^/]+)$/.exec(url.pathname);
    if (allocMatch) {
      const alloc = this.allocs.get(decodeURIComponent(allocMatch[1] as string));
      return alloc ? answer(200, alloc) : answer(404, 'alloc not found');
    }
    if (url.pathname === '/v1/client/services' && request.method === 'PUT') {
      this.index++;
      for (const service of body.Services as ServiceRegistration[]) {
        this.services.set(service.ID, service);
        this.serviceCalls.push(`upsert ${service.ID}`);
      }
      return answer(200, { Index: this.index });
    }
    const serviceMatch = /^\/v1\/client\/service\/([^/]+)$/.exec(url.pathname);
    if (serviceMatch && request.method === 'DELETE') {
      const id = decodeURIComponent(serviceMatch[1] as string);
      this.serviceCalls.push(`delete ${id}`);
      if (!this.services.delete(id)) return answer(404, 'service not found');
      this.index++;
      return answer(200, { Index: this.index });
    }
    return answer(404, `no route ${request.method} ${url.pathname}`);
  }
}
