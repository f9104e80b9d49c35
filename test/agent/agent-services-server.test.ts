/**
 * The real agent (`npm run agent`'s entry point, a child process) against the real service (`npm start`'s runtime, in
 * this process on the run's DynamoDB Local), through Nomad's service discovery: a job whose group has a `nomad`
 * service runs `python3 -m http.server` on its dynamic port; once the task runs, the agent registers the service and
 * `GET /v1/service/web` answers the address and port a client reaches the server at; when the allocation is stopped,
 * the agent deletes the registration before it reports the allocation `complete`, with the Service topic's events.
 * The allocation is placed (and stopped) through the scheduler's plan apply in process, as the evaluation worker
 * will: that worker is not built yet.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signalGroup } from '../../packages/agent/src/runner/executor.ts';
import { AllocStateStore } from '../../packages/agent/src/runner/state-store.ts';
import { type Plan, PlanApplier } from '../../packages/core/src/scheduler/cluster/evaluations/plan-apply.ts';
import { type Scheduler, schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { type LocalRuntime, startLocal } from '../../packages/local/src/start-local.ts';
import { nomadVar } from '../support/alloc-fixtures.ts';
import { allocationOf } from '../support/cluster-allocations.ts';
import { freePort, killLeftovers, launch } from '../support/npm-start.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

let work: string;
let runtime: LocalRuntime;
let scheduler: Scheduler;
let management: string;

// biome-ignore lint/suspicious/noExplicitAny: the test reads Nomad's JSON as it comes
async function api(method: string, url: string, body?: unknown, token = management): Promise<any> {
  const response = await fetch(`${runtime.schedulerUrl}/v1/${url}`, {
    method,
    headers: { 'X-Nomad-Token': token, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** A plan applied as the evaluation worker will apply it, on the node versions as they are now. */
async function apply(nodeId: string, plan: Partial<Plan>) {
  const beat = await scheduler.nodes.beat(nodeId);
  return new PlanApplier(scheduler.state, scheduler.nodes, scheduler.allocations).apply({
    place: [],
    update: [],
    nodeVersions: new Map([[nodeId, beat?.allocIndex ?? 0]]),
    ...plan,
  });
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-services-'));
  writeFileSync(path.join(work, 'agent.json'), JSON.stringify({ plugin: { raw_exec: { config: { enabled: true } } } }));
  runtime = await startLocal({
    dataDir: path.join(work, 'service'),
    dynamoDbEndpoint: inject('dynamoEndpoint'),
    tableName: `agent-services-${randomBytes(6).toString('hex')}`,
    secretsPort: 0,
    schedulerPort: 0,
    sweepIntervalMs: 500,
    log: { info() {}, error() {} },
  });
  scheduler = schedulerFor(runtime.core);
  const bootstrap = await fetch(`${runtime.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' });
  management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
});

afterAll(async () => {
  killLeftovers();
  // The tasks outlive their agent by design (their own process groups): end them as the agent would have.
  const store = new AllocStateStore(path.join(work, 'agent'));
  for (const saved of store.loadAll().saved)
    for (const task of Object.values(saved.Tasks)) if (task.Handle) signalGroup(task.Handle, 'SIGKILL');
  await runtime?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('the agent registers a running allocation’s services with the real service', () => {
  it('registers the service once its task runs, serves it at the registered address, and removes it on stop', {
    timeout: 180_000,
  }, async () => {
    const intro = await api('PUT', 'acl/identity/client-introduction-token', {});
    const agent = launch({}, 'packages/agent/src/main.ts', [
      '-data-dir',
      path.join(work, 'agent'),
      '-servers',
      runtime.schedulerUrl,
      '-client-intro-token',
      intro.JWT,
      '-config',
      path.join(work, 'agent.json'),
    ]);
    const failing = (error: Error) => {
      throw new Error(`${error.message}\n--- agent:\n${agent.stdout()}\n${agent.stderr()}`);
    };
    const node = await until('the node to be ready', async () => {
      const nodes = (await api('GET', 'nodes')) as Array<{ ID: string; Name: string; Status: string }>;
      return nodes.find((entry) => entry.Status === 'ready');
    }).catch(failing);

    const job = await api('PUT', 'jobs', {
      Job: {
        ID: 'web',
        TaskGroups: [
          {
            Name: 'web',
            Services: [{ Name: 'web', PortLabel: 'http', Provider: 'nomad', Tags: ['http'] }],
            Tasks: [
              {
                Name: 'server',
                Driver: 'raw_exec',
                Config: {
                  command: 'python3',
                  args: ['-m', 'http.server', nomadVar('NOMAD_PORT_http'), '--bind', nomadVar('NOMAD_IP_http')],
                },
              },
            ],
          },
        ],
      },
    });
    const port = await freePort();
    const stub = await allocationOf(
      { scheduler, clock: runtime.core.clock } as unknown as SchedulerService,
      { id: 'web', evalId: job.EvalID },
      node,
    );
    const alloc = {
      ...stub,
      AllocatedResources: {
        ...stub.AllocatedResources,
        Shared: {
          ...stub.AllocatedResources.Shared,
          Ports: [{ Label: 'http', Value: port, To: 0, HostIP: '127.0.0.1' }],
        },
      },
    };
    const from = await scheduler.state.currentIndex();
    const stream = await fetch(`${runtime.schedulerUrl}/v1/event/stream?topic=Service&index=${from}`, {
      headers: { 'X-Nomad-Token': management },
    });
    const lines = readLines(stream);
    expect((await apply(node.ID, { place: [alloc] })).placed).toHaveLength(1);

    const [registered] = await until('the service registered', async () => {
      const services = (await api('GET', 'service/web')) as Array<Record<string, unknown>>;
      return services.length > 0 ? services : undefined;
    }).catch(failing);
    expect(registered).toMatchObject({
      ID: `_nomad-task-${alloc.ID}-group-web-web-http`,
      ServiceName: 'web',
      Namespace: 'default',
      NodeID: node.ID,
      Datacenter: 'dc1',
      JobID: 'web',
      AllocID: alloc.ID,
      Tags: ['http'],
      Address: '127.0.0.1',
      Port: port,
    });
    const answer = await until('python’s server at the registered address', async () => {
      try {
        return await fetch(`http://${registered?.Address}:${registered?.Port}/`);
      } catch {
        return undefined;
      }
    });
    expect(answer.status).toBe(200);
    const registration = await lines.until((event) => event.Type === 'ServiceRegistration');
    expect(registration).toMatchObject({ Topic: 'Service', Key: registered?.ID, FilterKeys: ['web', 'web'] });

    // The plan stops the allocation: the agent kills the task, reports it complete and the registration goes.
    await apply(node.ID, {
      update: [
        {
          id: alloc.ID,
          nodeId: node.ID,
          change: (current) => ({ ...current, DesiredStatus: 'stop', DesiredDescription: 'alloc is being stopped' }),
        },
      ],
    });
    await until('the registration removed', async () =>
      ((await api('GET', 'service/web')) as unknown[]).length === 0 ? true : undefined,
    ).catch(failing);
    const removal = await lines.until((event) => event.Key === registered?.ID && event.Type !== 'ServiceRegistration');
    // The agent's own delete, before it reports the allocation complete (as Nomad's alloc runner deregisters a
    // stopping allocation's services before its terminal status is synced), not the server's removal in that write.
    expect(removal.Type).toBe('ServiceDeregistration');
    expect(await scheduler.services.ofAllocation(alloc.ID)).toEqual([]);
    await until('the allocation reported complete', async () =>
      (await api('GET', `allocation/${alloc.ID}`)).ClientStatus === 'complete' ? true : undefined,
    ).catch(failing);
    lines.close();
  });
});

/** `probe`'s first answer that is not undefined, asked every 200 ms for at most 45 s (a loaded machine starts slowly). */
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** The stream's events, one at a time, as they arrive. */
function readLines(response: Response) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const events: Array<Record<string, unknown>> = [];
  return {
    async until(match: (event: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        buffer += decoder.decode(value, { stream: true });
        let newline = buffer.indexOf('\n');
        while (newline >= 0) {
          const line = JSON.parse(buffer.slice(0, newline)) as { Events?: Array<Record<string, unknown>> };
          events.push(...(line.Events ?? []));
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
        }
      }
    },
    close: () => void reader.cancel().catch(() => undefined),
  };
}
