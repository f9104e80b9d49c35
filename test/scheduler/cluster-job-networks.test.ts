import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { webJob, withReadyNode } from '../support/cluster-allocations.ts';
import { hostNetworkResources } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

type Json = Record<string, unknown>;

/** A group network as a user sends it: no mode, no host networks, a device Nomad's agent does not carry, empty parts. */
const sentNetwork = () => ({
  Device: 'eth9',
  MBits: 0,
  DNS: null,
  ReservedPorts: [{ Label: 'admin', Value: 8080 }],
  DynamicPorts: [{ Label: 'http' }, { Label: 'grpc', To: 9090, HostNetwork: '' }],
});

/**
 * What Nomad stores and answers for it: `structs.NetworkResource.Canonicalize` names the `default` host network on
 * every port; `NetworkResource` and `Port` encode without their empty fields (`Mode` stays empty: Nomad sets none).
 */
const canonicalNetwork = {
  ReservedPorts: [{ Label: 'admin', Value: 8080, HostNetwork: 'default' }],
  DynamicPorts: [
    { Label: 'http', HostNetwork: 'default' },
    { Label: 'grpc', To: 9090, HostNetwork: 'default' },
  ],
};

const networked = (id: string, network: Json = sentNetwork()) =>
  webJob(id, {
    TaskGroups: [
      {
        Name: 'web',
        Count: 1,
        Networks: [network],
        Tasks: [
          { Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } },
        ],
      },
    ],
  });

describe('a job’s networks, canonicalised as Nomad’s', () => {
  let h: SchedulerService;
  let root: string;
  let worker: EvaluationWorker;
  const call = async (method: string, path: string, body?: unknown) => h.call(method, path, { token: root, body });
  const get = async (path: string) => {
    const out = await call('GET', path);
    expect(out.status, out.text).toBe(200);
    return out.body;
  };

  beforeAll(async () => {
    ({ h, root, worker } = await withReadyNode(await startSchedulerInMemory(), {
      NodeResources: hostNetworkResources(),
    }));
  });
  afterAll(() => h.close());

  it('a group network of static and dynamic ports: stored, read and versioned in its canonical shape', async () => {
    const out = await call('PUT', '/v1/jobs', { Job: networked('net') });
    expect(out.status, out.text).toBe(200);

    const stored = await h.scheduler.jobs.get('default', 'net');
    if (!stored) throw new Error('not stored');
    const [group] = stored.TaskGroups;
    expect(group?.Networks).toEqual([canonicalNetwork]);
    expect(group?.Tasks[0]?.Resources).toEqual({ CPU: 100, Cores: 0, MemoryMB: 64, Networks: null });

    const read = await get('/v1/job/net');
    expect(read.TaskGroups[0].Networks).toEqual([canonicalNetwork]);
    expect(read.TaskGroups[0].Tasks[0].Resources).toEqual({ CPU: 100, Cores: 0, MemoryMB: 64, Networks: null });

    const versions = await get('/v1/job/net/versions');
    expect(versions.Versions).toHaveLength(1);
    expect(versions.Versions[0].TaskGroups[0].Networks).toEqual([canonicalNetwork]);
  });

  it('the canonical job registers as itself: no new version, and plans as no change', async () => {
    const read = await get('/v1/job/net');
    const again = await call('PUT', '/v1/jobs', { Job: read });
    expect(again.status, again.text).toBe(200);
    expect((await get('/v1/job/net')).Version).toBe(0);
    expect((await h.scheduler.jobs.get('default', 'net'))?.TaskGroups[0]?.Networks).toEqual([canonicalNetwork]);

    // As sent first (no host networks named) or as read back: the same job, so the plan's diff is None.
    for (const job of [networked('net'), read]) {
      const plan = await call('PUT', '/v1/job/net/plan', { Job: job, Diff: true });
      expect(plan.status, plan.text).toBe(200);
      expect(plan.body.Diff.Type).toBe('None');
    }
  });

  it('a changed static port shows in the plan’s diff between canonical networks', async () => {
    const moved = sentNetwork();
    moved.ReservedPorts = [{ Label: 'admin', Value: 8081 }];
    const plan = await call('PUT', '/v1/job/net/plan', { Job: networked('net', moved), Diff: true });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.Diff.Type).toBe('Edited');
    // Nomad's networks diff as sets: the old network deleted, the new one added, each port with its `default`.
    const networks = (plan.body.Diff.TaskGroups[0].Objects as Json[]).filter((object) => object.Name === 'Networks');
    expect(networks.map((network) => network.Type)).toEqual(['Deleted', 'Added']);
    const reserved = (network: Json) => (network.Objects as Json[]).find((object) => object.Name === 'ReservedPorts');
    expect(reserved(networks[0] as Json)?.Fields).toEqual([
      { Type: 'Deleted', Name: 'HostNetwork', Old: 'default', New: '', Annotations: null },
      { Type: 'Deleted', Name: 'Label', Old: 'admin', New: '', Annotations: null },
      { Type: 'Deleted', Name: 'Value', Old: '8080', New: '', Annotations: null },
    ]);
    expect(reserved(networks[1] as Json)?.Fields).toEqual([
      { Type: 'Added', Name: 'HostNetwork', Old: '', New: 'default', Annotations: null },
      { Type: 'Added', Name: 'Label', Old: '', New: 'admin', Annotations: null },
      { Type: 'Added', Name: 'Value', Old: '', New: '8081', Annotations: null },
    ]);
  });

  it('placement reads the canonical ports: the static one, dynamic ones and a mapping; the allocation’s job shows them', async () => {
    const own = sentNetwork();
    own.ReservedPorts = [{ Label: 'admin', Value: 8090 }];
    const out = await call('PUT', '/v1/jobs', { Job: networked('placed', own) });
    expect(out.status, out.text).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'placed');
    if (!alloc) throw new Error('not placed');
    const read = await get(`/v1/allocation/${alloc.ID}`);
    const [granted] = read.AllocatedResources.Shared.Networks;
    expect(granted.ReservedPorts).toEqual([{ Label: 'admin', Value: 8090, HostNetwork: 'default' }]);
    expect(granted.DynamicPorts.map((port: Json) => [port.Label, port.To ?? 0, port.HostNetwork])).toEqual([
      ['http', 0, 'default'],
      ['grpc', 9090, 'default'],
    ]);
    for (const port of granted.DynamicPorts) expect(port.Value).toBeGreaterThanOrEqual(20_000);
    const ports = read.AllocatedResources.Shared.Ports as Json[];
    expect(ports.map((port) => port.Label).sort()).toEqual(['admin', 'grpc', 'http']);
    expect(ports.find((port) => port.Label === 'grpc')?.To).toBe(9090);
    expect(ports.find((port) => port.Label === 'admin')?.Value).toBe(8090);
    expect(read.Job.TaskGroups[0].Networks).toEqual([
      { ...canonicalNetwork, ReservedPorts: [{ Label: 'admin', Value: 8090, HostNetwork: 'default' }] },
    ]);
  });

  it('a job of no networks: the group’s and the task’s networks are null', async () => {
    const out = await call('PUT', '/v1/jobs', { Job: webJob('plain') });
    expect(out.status, out.text).toBe(200);
    const read = await get('/v1/job/plain');
    expect(read.TaskGroups[0]).toHaveProperty('Networks', null);
    expect(read.TaskGroups[0].Tasks[0].Resources).toEqual({ CPU: 500, Cores: 0, MemoryMB: 256, Networks: null });
    const empty = await call('PUT', '/v1/jobs', {
      Job: webJob('empty', {
        TaskGroups: [{ Name: 'web', Networks: [], Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
      }),
    });
    expect(empty.status, empty.text).toBe(200);
    expect((await h.scheduler.jobs.get('default', 'empty'))?.TaskGroups[0]?.Networks).toBeNull();
  });

  it('a task’s network, a bridge group with a named host network, DNS and bandwidth: kept as Nomad keeps them', async () => {
    const job = webJob('bridged', {
      TaskGroups: [
        {
          Name: 'web',
          Networks: [
            {
              Mode: 'bridge',
              Hostname: 'web-1',
              DNS: { Servers: ['1.1.1.1'] },
              DynamicPorts: [{ Label: 'http', To: 8080, HostNetwork: 'public' }],
              ReservedPorts: [],
            },
          ],
          Tasks: [
            {
              Name: 'server',
              Driver: 'raw_exec',
              Resources: {
                CPU: 100,
                MemoryMB: 64,
                Networks: [{ MBits: 10, ReservedPorts: [{ Label: 'x', Value: 22 }] }],
              },
            },
          ],
        },
      ],
    });
    const out = await call('PUT', '/v1/jobs', { Job: job });
    expect(out.status, out.text).toBe(200);
    const read = await get('/v1/job/bridged');
    expect(read.TaskGroups[0].Networks).toEqual([
      {
        Mode: 'bridge',
        Hostname: 'web-1',
        DNS: { Servers: ['1.1.1.1'], Searches: null, Options: null },
        DynamicPorts: [{ Label: 'http', To: 8080, HostNetwork: 'public' }],
      },
    ]);
    expect(read.TaskGroups[0].Tasks[0].Resources.Networks).toEqual([
      { MBits: 10, ReservedPorts: [{ Label: 'x', Value: 22, HostNetwork: 'default' }] },
    ]);
  });
});
