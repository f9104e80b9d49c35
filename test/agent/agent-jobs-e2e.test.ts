import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nomadVar } from '../support/alloc-fixtures.ts';
import {
  type AgentService,
  startRawExecAgent,
  startServiceForAgent,
  stopServiceForAgent,
  untilWithin,
} from '../support/agent-service.ts';
import { START_TIMEOUT_MS, type Started } from '../support/npm-start.ts';

let work: string;
let service: Started;
let api: AgentService['api'];

beforeAll(async () => {
  ({ work, service, api } = await startServiceForAgent('agent-jobs'));
}, START_TIMEOUT_MS);

afterAll(() => stopServiceForAgent(work));

const until = untilWithin(60_000, 200);

const job = (count: number) => ({
  Job: {
    ID: 'web',
    Name: 'web',
    Type: 'service',
    Datacenters: ['dc1'],
    TaskGroups: [
      {
        Name: 'web',
        Count: count,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: 'http' }] }],
        Services: [{ Name: 'web', PortLabel: 'http', Provider: 'nomad' }],
        Tasks: [
          {
            Name: 'server',
            Driver: 'raw_exec',
            Config: {
              command: 'python3',
              args: ['-m', 'http.server', nomadVar('NOMAD_PORT_http'), '--bind', nomadVar('NOMAD_IP_http')],
            },
            Resources: { CPU: 100, MemoryMB: 64 },
          },
        ],
      },
    ],
  },
});

describe('a job on the real agent', () => {
  it('runs, is served through the service registry, scales to 3 and stops', { timeout: 240_000 }, async () => {
    const { agent, log } = await startRawExecAgent({ work, service, api }, until);

    const submitted = await api('PUT', '/v1/jobs', job(1));
    expect(submitted.status).toBe(200);
    const running = await until(
      'the allocation to run',
      async () => {
        const allocs = (await api('GET', '/v1/job/web/allocations')).body as Array<{
          ID: string;
          ClientStatus: string;
        }>;
        return allocs.length === 1 && allocs[0]?.ClientStatus === 'running' ? allocs : undefined;
      },
      log,
    );
    const alloc = await api('GET', `/v1/allocation/${running[0]?.ID}`);
    expect(alloc.body.TaskStates.server).toMatchObject({ State: 'running', Failed: false });
    expect(alloc.body.TaskStates.server.Events.map((event: { Type: string }) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
    ]);

    const registered = await until(
      'the service to be registered',
      async () => {
        const found = (await api('GET', '/v1/service/web')).body;
        return Array.isArray(found) && found.length === 1 ? found : undefined;
      },
      log,
    );
    const port = alloc.body.AllocatedResources.Shared.Ports.find((entry: { Label: string }) => entry.Label === 'http');
    expect(registered[0]).toMatchObject({ ServiceName: 'web', AllocID: running[0]?.ID, Port: port.Value });
    const answer = await until(
      'the server to answer through the registry',
      async () => {
        try {
          return await fetch(`http://${registered[0].Address}:${registered[0].Port}/`);
        } catch {
          return undefined;
        }
      },
      log,
    );
    expect(answer.status).toBe(200);

    expect((await api('PUT', '/v1/job/web', job(3))).status).toBe(200);
    await until(
      'three allocations to run',
      async () => {
        const allocs = (await api('GET', '/v1/job/web/allocations')).body as Array<{ ClientStatus: string }>;
        return allocs.filter((entry) => entry.ClientStatus === 'running').length === 3 ? true : undefined;
      },
      log,
    );
    const three = await until(
      'three services',
      async () => {
        const found = (await api('GET', '/v1/service/web')).body;
        return Array.isArray(found) && found.length === 3 ? found : undefined;
      },
      log,
    );
    // A service is registered when its task starts, which can be before python listens (as the first one above).
    for (const entry of three) {
      const served = await until(
        `the server at ${entry.Address}:${entry.Port} to answer`,
        async () => {
          try {
            return await fetch(`http://${entry.Address}:${entry.Port}/`);
          } catch {
            return undefined;
          }
        },
        log,
      );
      expect(served.status).toBe(200);
    }

    expect((await api('DELETE', '/v1/job/web')).status).toBe(200);
    await until(
      'every allocation to complete',
      async () => {
        const allocs = (await api('GET', '/v1/job/web/allocations')).body as Array<{ ClientStatus: string }>;
        return allocs.length >= 3 && allocs.every((entry) => entry.ClientStatus === 'complete') ? true : undefined;
      },
      log,
    );
    await until(
      'the services to be gone',
      async () => {
        const found = (await api('GET', '/v1/service/web')).body;
        return Array.isArray(found) && found.length === 0 ? true : undefined;
      },
      log,
    );
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  });
});
