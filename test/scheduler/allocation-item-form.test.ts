/**
 * The allocation's compact item (`cluster/allocations/item-form.ts`): every field of an allocation survives the
 * write and the read, at every value and at every empty one, through DynamoDB's own conversion (`marshall`,
 * `unmarshall`, as the store converts items); what the item leaves out; and items of the whole form (every item
 * written before the compact form) read exactly as stored.
 */
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { allocationItem, allocationOfItem } from '../../packages/core/src/scheduler/cluster/allocations/item-form.ts';
import type { StoredAllocation } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { allocNodePk } from '../../packages/core/src/scheduler/keys.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';

const nodeId = '5f0c6b1e-8f3a-4d2b-9c1e-0a1b2c3d4e5f';
const id = '0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a';

/** Through the table: DynamoDB JSON and back, as the store writes and reads items. */
const throughTable = (item: Item): Item =>
  unmarshall(marshall(item, { removeUndefinedValues: true, allowImpreciseNumbers: true }), {
    wrapNumbers: Number,
  }) as Item;

const roundTrip = (alloc: StoredAllocation): StoredAllocation => allocationOfItem(throughTable(allocationItem(alloc)));

/** An allocation with every field set to something other than its empty value, at every depth. */
function fullAllocation(): StoredAllocation {
  const port = { Label: 'http', Value: 24_301, To: 8080, HostNetwork: 'public' };
  const network = {
    Mode: 'bridge',
    Device: 'eth0',
    CIDR: '10.0.0.0/24',
    IP: '10.0.0.7',
    MBits: 100,
    DNS: null,
    ReservedPorts: [{ ...port, Label: 'admin', Value: 9000 }],
    DynamicPorts: [port],
  };
  return {
    ID: id,
    Namespace: 'prod',
    EvalID: '3c2b1a09-8877-4655-9443-322110ffeedd',
    Name: 'api.web[12]',
    NodeID: nodeId,
    NodeName: 'node-17',
    JobID: 'api',
    JobVersion: 4,
    JobType: 'batch',
    Job: null,
    TaskGroup: 'web',
    AllocatedResources: {
      Tasks: {
        server: {
          Cpu: { CpuShares: 500, ReservedCores: [0, 1] },
          Memory: { MemoryMB: 256, MemoryMaxMB: 512 },
          Networks: [network],
          Devices: [{ Vendor: 'nvidia', Type: 'gpu', Name: 'T4', DeviceIDs: ['GPU-1'] }],
        },
        sidecar: {
          Cpu: { CpuShares: 0, ReservedCores: null },
          Memory: { MemoryMB: 0, MemoryMaxMB: 0 },
          Networks: null,
          Devices: null,
        },
      },
      TaskLifecycles: { sidecar: { Hook: 'prestart', Sidecar: true } },
      Shared: {
        DiskMB: 300,
        Networks: [network],
        Ports: [{ Label: 'http', Value: 24_301, To: 8080, HostIP: '10.0.0.7' }],
      },
    },
    Metrics: {
      NodesEvaluated: 13,
      NodesFiltered: 2,
      NodesInPool: 5000,
      NodePool: 'gpu',
      NodesAvailable: { dc1: 2500, dc2: 2500 },
      ClassFiltered: { small: 1 },
      ConstraintFiltered: { '${attr.kernel.name} = linux': 1 },
      NodesExhausted: 3,
      ClassExhausted: { small: 3 },
      DimensionExhausted: { memory: 3 },
      QuotaExhausted: ['q'],
      ResourcesExhausted: { server: { CPU: 100 } },
      Scores: { [`${nodeId}.binpack`]: 0.5 },
      ScoreMetaData: [{ NodeID: nodeId, Scores: { binpack: 0.52, 'job-anti-affinity': -0.1 }, NormScore: 0.21 }],
      AllocationTime: 123_456,
      CoalescedFailures: 1,
    },
    DesiredStatus: 'stop',
    DesiredDescription: 'alloc is being updated due to job update',
    DesiredTransition: { Migrate: true, Reschedule: false, ForceReschedule: true, NoShutdownDelay: false },
    ClientStatus: 'running',
    ClientDescription: 'Tasks are running',
    TaskStates: {
      server: {
        State: 'running',
        Failed: false,
        Restarts: 1,
        LastRestart: '2026-11-29T10:00:00Z',
        StartedAt: '2026-11-29T10:00:01Z',
        FinishedAt: null,
        Events: [{ Type: 'Started', Time: 1, Message: '', DisplayMessage: 'Task started', Details: {} }],
      },
    },
    DeploymentID: 'a1b2c3d4-0000-4000-8000-000000000001',
    DeploymentStatus: { Healthy: true, Timestamp: '2026-11-29T10:00:02Z', Canary: true, ModifyIndex: 40 },
    PreviousAllocation: 'b1b2c3d4-0000-4000-8000-000000000002',
    NextAllocation: 'c1b2c3d4-0000-4000-8000-000000000003',
    RescheduleTracker: {
      Events: [{ RescheduleTime: 1.7e18, PrevAllocID: 'p', PrevNodeID: 'n', Delay: 30e9 }],
      LastReschedule: 'ok',
    },
    FollowupEvalID: 'd1b2c3d4-0000-4000-8000-000000000004',
    PreemptedAllocations: ['e1b2c3d4-0000-4000-8000-000000000005'],
    PreemptedByAllocation: 'f1b2c3d4-0000-4000-8000-000000000006',
    CreateIndex: 30,
    ModifyIndex: 42,
    AllocModifyIndex: 41,
    CreateTime: 1_796_000_000_000_000_000,
    ModifyTime: 1_796_000_100_000_000_000,
  };
}

/** A placement as plan apply writes it (`worker/plan.ts`): most fields empty, the metrics mostly zero. */
function placedAllocation(): StoredAllocation {
  const full = fullAllocation();
  return {
    ...full,
    Namespace: 'default',
    Name: 'c10k.web[7]',
    JobID: 'c10k',
    JobVersion: 0,
    JobType: 'service',
    AllocatedResources: {
      Tasks: {
        server: {
          Cpu: { CpuShares: 100, ReservedCores: null },
          Memory: { MemoryMB: 256, MemoryMaxMB: 0 },
          Networks: null,
          Devices: null,
        },
      },
      TaskLifecycles: { server: null },
      Shared: {
        DiskMB: 300,
        Networks: [
          {
            Mode: '',
            Device: '',
            CIDR: '',
            IP: '10.0.0.7',
            MBits: 0,
            DNS: null,
            ReservedPorts: null,
            DynamicPorts: [{ Label: 'http', Value: 24_301, To: 0, HostNetwork: 'default' }],
          },
        ],
        Ports: [{ Label: 'http', Value: 24_301, To: 0, HostIP: '10.0.0.7' }],
      },
    },
    Metrics: {
      NodesEvaluated: 13,
      NodesFiltered: 0,
      NodesInPool: 5000,
      NodePool: 'default',
      NodesAvailable: { dc1: 5000 },
      ClassFiltered: null,
      ConstraintFiltered: null,
      NodesExhausted: 0,
      ClassExhausted: null,
      DimensionExhausted: null,
      QuotaExhausted: null,
      ResourcesExhausted: null,
      Scores: null,
      ScoreMetaData: [{ NodeID: nodeId, Scores: { binpack: 0.52, 'job-anti-affinity': 0 }, NormScore: 0.26 }],
      AllocationTime: 0,
      CoalescedFailures: 0,
    },
    DesiredStatus: 'run',
    DesiredDescription: '',
    DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
    ClientStatus: 'pending',
    ClientDescription: '',
    TaskStates: null,
    DeploymentID: '',
    DeploymentStatus: null,
    PreviousAllocation: '',
    NextAllocation: '',
    RescheduleTracker: null,
    FollowupEvalID: '',
    PreemptedAllocations: undefined,
    PreemptedByAllocation: undefined,
    CreateIndex: 42,
    ModifyIndex: 42,
    AllocModifyIndex: 42,
    CreateTime: 1_796_000_000_000_000_000,
    ModifyTime: 1_796_000_000_000_000_000,
  };
}

/** The allocation as the API's own (omitempty) answer and the client's stored-form answer encode it: same bytes. */
const asJson = (alloc: unknown) => JSON.stringify(alloc);

describe('the allocation item: compact, restored exactly', () => {
  it('every field of a full allocation survives the write and the read, in the model’s order', () => {
    const alloc = fullAllocation();
    const read = roundTrip(alloc);
    expect(read).toStrictEqual(alloc);
    expect(asJson(read)).toBe(asJson(alloc));
    const item = allocationItem(alloc);
    // The key holds the ID and the node; the job is never stored.
    expect(item).toMatchObject({ pk: allocNodePk(nodeId), sk: id });
    expect(Object.keys(item)).not.toContain('ID');
    expect(Object.keys(item)).not.toContain('NodeID');
    expect(Object.keys(item)).not.toContain('Job');
    expect(item.Name).toBe(12);
  });

  it('a placement’s empty and default fields are left out of the item and restored on read', () => {
    const alloc = placedAllocation();
    const { PreemptedAllocations: _a, PreemptedByAllocation: _b, ...expected } = alloc;
    expect(roundTrip(alloc)).toStrictEqual(expected);
    const item = allocationItem(alloc);
    expect(Object.keys(item).sort()).toEqual(
      ['pk', 'sk', 'EvalID', 'Name', 'NodeName', 'JobID', 'TaskGroup', 'AllocatedResources', 'Metrics']
        .concat(['ModifyIndex', 'CreateTime'])
        .sort(),
    );
    expect(item.Metrics).toEqual({
      NodesEvaluated: 13,
      NodesInPool: 5000,
      NodePool: 'default',
      NodesAvailable: { dc1: 5000 },
      ScoreMetaData: [{ NodeID: nodeId, Scores: [0.52, 0], NormScore: 0.26 }],
    });
    expect(item.AllocatedResources).toEqual({
      Tasks: { server: { Cpu: { CpuShares: 100 }, Memory: { MemoryMB: 256 } } },
      Shared: {
        DiskMB: 300,
        Networks: [{ IP: '10.0.0.7', DynamicPorts: [{ Label: 'http', Value: 24_301 }] }],
        Ports: [{ Label: 'http', Value: 24_301, HostIP: '10.0.0.7' }],
      },
    });
    const whole = Buffer.byteLength(
      JSON.stringify(marshall({ ...alloc }, { removeUndefinedValues: true, allowImpreciseNumbers: true })),
    );
    const compact = Buffer.byteLength(
      JSON.stringify(marshall(item, { removeUndefinedValues: true, allowImpreciseNumbers: true })),
    );
    expect(compact).toBeLessThan(whole / 2);
  });

  it('each field at its empty value, one at a time, and every field at once, reads back as written', () => {
    const empties: Array<[string, (alloc: StoredAllocation) => void]> = [
      ['Namespace', (a) => (a.Namespace = 'default')],
      ['JobVersion', (a) => (a.JobVersion = 0)],
      ['JobType', (a) => (a.JobType = 'service')],
      ['Metrics', (a) => (a.Metrics = null)],
      [
        'Metrics.NodesAvailable',
        (a) => {
          if (a.Metrics) a.Metrics.NodesAvailable = {};
        },
      ],
      [
        'Metrics.NodePool',
        (a) => {
          if (a.Metrics) a.Metrics.NodePool = '';
        },
      ],
      [
        'Metrics.ScoreMetaData',
        (a) => {
          if (a.Metrics) a.Metrics.ScoreMetaData = null;
        },
      ],
      [
        'Cpu',
        (a) => {
          const server = a.AllocatedResources.Tasks.server as StoredAllocation['AllocatedResources']['Tasks'][string];
          server.Cpu = { CpuShares: 0, ReservedCores: null };
          server.Memory = { MemoryMB: 0, MemoryMaxMB: 0 };
        },
      ],
      ['Shared.Networks', (a) => (a.AllocatedResources.Shared.Networks = null)],
      ['Shared.Ports', (a) => (a.AllocatedResources.Shared.Ports = [])],
      ['TaskLifecycles', (a) => (a.AllocatedResources.TaskLifecycles = {})],
      ['TaskLifecycles of none', (a) => (a.AllocatedResources.TaskLifecycles = { server: null, sidecar: null })],
      ['TaskLifecycles of one', (a) => (a.AllocatedResources.TaskLifecycles = { sidecar: null })],
      ['TaskLifecycles reordered', (a) => (a.AllocatedResources.TaskLifecycles = { sidecar: null, server: null })],
      [
        'Scores of other scorers',
        (a) => {
          if (a.Metrics)
            a.Metrics.ScoreMetaData = [
              { NodeID: nodeId, Scores: { 'node-affinity': 1, binpack: 0.1 }, NormScore: 0.5 },
            ];
        },
      ],
      [
        'Scores of every scorer',
        (a) => {
          const all = { binpack: 0.1, 'job-anti-affinity': -0.5, 'node-reschedule-penalty': -1, 'node-affinity': 0.25 };
          if (a.Metrics)
            a.Metrics.ScoreMetaData = [
              { NodeID: nodeId, Scores: { ...all, 'allocation-spread': 0.5, preemption: 0 }, NormScore: 0.5 },
              { NodeID: id, Scores: {}, NormScore: 0 },
            ];
        },
      ],
      ['DesiredStatus', (a) => (a.DesiredStatus = 'run')],
      ['DesiredTransition', (a) => (a.DesiredTransition = placedAllocation().DesiredTransition)],
      ['DesiredTransition.Migrate', (a) => (a.DesiredTransition = { ...a.DesiredTransition, Migrate: null })],
      ['ClientStatus', (a) => (a.ClientStatus = 'pending')],
      ['TaskStates', (a) => (a.TaskStates = null)],
      ['DeploymentStatus', (a) => (a.DeploymentStatus = null)],
      ['RescheduleTracker', (a) => (a.RescheduleTracker = null)],
      ['CreateIndex', (a) => (a.CreateIndex = a.ModifyIndex)],
      ['AllocModifyIndex', (a) => (a.AllocModifyIndex = a.ModifyIndex)],
      ['ModifyTime', (a) => (a.ModifyTime = a.CreateTime)],
      ['Name', (a) => (a.Name = 'api.web[0]')],
    ];
    const all = fullAllocation();
    for (const [field, empty] of empties) {
      const alloc = fullAllocation();
      empty(alloc);
      empty(all);
      expect(roundTrip(alloc), field).toStrictEqual(alloc);
      expect(asJson(roundTrip(alloc)), field).toBe(asJson(alloc));
    }
    expect(roundTrip(all)).toStrictEqual(all);
  });

  it('a name that is not `<job>.<group>[<index>]` is stored as it is', () => {
    for (const name of ['api.web[01]', 'api.web[-1]', 'api.web[1]x', 'other.web[1]', 'api.web', '']) {
      const alloc = { ...fullAllocation(), Name: name };
      expect(allocationItem(alloc).Name, name).toBe(name);
      expect(roundTrip(alloc).Name, name).toBe(name);
    }
  });

  it('an allocation not of the full shape is stored whole and reads as it was written', () => {
    const alloc = fullAllocation();
    // Metrics written before NodePool existed, and an allocation without its job type.
    const { NodePool: _pool, ...olderMetrics } = alloc.Metrics as NonNullable<StoredAllocation['Metrics']>;
    for (const odd of [
      { ...alloc, Metrics: olderMetrics },
      { ...alloc, JobType: undefined } as unknown as StoredAllocation,
    ]) {
      const item = allocationItem(odd);
      expect(item.ID).toBe(id);
      expect(item.Job).toBeNull();
      expect(roundTrip(odd)).toEqual(odd);
      expect(Object.keys(roundTrip(odd))).toEqual(Object.keys(odd).filter((key) => odd[key as never] !== undefined));
    }
  });

  it('an item written whole before the compact form reads exactly as it is stored, without its bookkeeping', () => {
    const alloc = placedAllocation();
    const stored = throughTable({ pk: allocNodePk(nodeId), sk: id, ...alloc, Job: null, mac: 'v1:tag' });
    const { pk: _pk, sk: _sk, mac: _mac, ...expected } = stored;
    const read = allocationOfItem(stored);
    expect(read).toStrictEqual(expected);
    expect(Object.keys(read)).toEqual(Object.keys(expected));
  });
});
