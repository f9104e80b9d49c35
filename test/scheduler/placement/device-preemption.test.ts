/**
 * Preemption for devices (Nomad's `PreemptForDevice` and `selectBestAllocs`, reached from its `BinPackIterator` when
 * a task's device request finds too few free instances): the scenarios of Nomad's `preemption_test.go` device cases,
 * rebuilt as our own over one node of three device groups, and run both ways (`place-both.ts`: priorities given up
 * front, and read lazily as the worker reads them, with one plan asserted).
 */
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { AllocatedDeviceResource } from '../../../packages/core/src/scheduler/cluster/allocations/resources.ts';
import type { Job } from '../../../packages/core/src/scheduler/cluster/jobs/model.ts';
import type { ClusterNode } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';
import type { PlacementSettings } from '../../../packages/core/src/scheduler/cluster/scheduler-config/model.ts';
import { preemptForDevice } from '../../../packages/core/src/scheduler/placement/device-preemption.ts';
import { deviceAsks, heldDevices } from '../../../packages/core/src/scheduler/placement/devices.ts';
import { preemptionScore } from '../../../packages/core/src/scheduler/placement/preemption.ts';
import { priorityKey } from '../../../packages/core/src/scheduler/placement/types.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';
import { placeBoth } from './place-both.ts';

const settings = (preempt: boolean): PlacementSettings => ({
  algorithm: 'binpack',
  preempt,
  nodeLimit: 100,
  memoryOversubscription: false,
});

const gpu1080 = ['dev0', 'dev1', 'dev2', 'dev3'];
const gpu2080 = ['dev4', 'dev5', 'dev6', 'dev7', 'dev8'];

/** A node of 4000 MHz and 8 GiB with four 1080ti GPUs, five 2080ti GPUs and two F100 FPGAs, all healthy. */
function deviceNode(): ClusterNode {
  const node = makeNode({ cpu: 4000, memoryMB: 8192, reserved: { cpu: 100, memoryMB: 256 } });
  const group = (Vendor: string, Type: string, Name: string, ids: string[]) => ({
    Vendor,
    Type,
    Name,
    Instances: ids.map((ID) => ({ ID, Healthy: true })),
  });
  (node.NodeResources as Record<string, unknown>).Devices = [
    group('nvidia', 'gpu', '1080ti', gpu1080),
    group('nvidia', 'gpu', '2080ti', gpu2080),
    group('intel', 'fpga', 'F100', ['fpga1', 'fpga2']),
  ];
  return node;
}

const low = makeJob({ ID: 'low', Priority: 30 });
const low2 = makeJob({ ID: 'low2', Priority: 40 });
const high = makeJob({ ID: 'high', Priority: 100 });
const near = makeJob({ ID: 'near', Priority: 95 });
const priorities = new Map([low, low2, high, near].map((job) => [priorityKey(job.Namespace, job.ID), job.Priority]));

/** An allocation of `job` on `node` holding `cpu` MHz, `memoryMB` and the instances `ids` of one device group. */
function holding(
  job: Job,
  node: ClusterNode,
  device: [string, string, string],
  ids: string[],
  held: { cpu?: number; memoryMB?: number } = {},
): Allocation {
  const alloc = makeAlloc(job, 'g', node, { cpu: held.cpu ?? 200, memoryMB: held.memoryMB ?? 256, diskMB: 0 });
  const [Vendor, Type, Name] = device;
  const granted: AllocatedDeviceResource = { Vendor, Type, Name, DeviceIDs: ids };
  (alloc.AllocatedResources.Tasks.main as { Devices: AllocatedDeviceResource[] | null }).Devices = [granted];
  return alloc;
}
const on1080: [string, string, string] = ['nvidia', 'gpu', '1080ti'];
const on2080: [string, string, string] = ['nvidia', 'gpu', '2080ti'];
const onFpga: [string, string, string] = ['intel', 'fpga', 'F100'];

/** A job of priority 100 (`type`) whose one task asks 1000 MHz, 512 MB and `count` devices named `name`. */
const asking = (name: string, count: number, type = 'system', cpu = 1000) =>
  makeJob({
    ID: `placing-${type}`,
    Type: type,
    Priority: 100,
    TaskGroups: [
      {
        Name: 'train',
        Count: 1,
        Tasks: [
          task('t', cpu, 512, { Resources: { CPU: cpu, MemoryMB: 512, Devices: [{ Name: name, Count: count }] } }),
        ],
      },
    ],
  });

/** One placement of `job` on `node` over `allocs`, both ways. */
const placeOn = (node: ClusterNode, allocs: Allocation[], job: Job, preempt = true) =>
  placeBoth(
    { nodes: [node], allocs, priorities },
    job,
    job.Type === 'system'
      ? [{ group: 'train', name: `${job.ID}.train[0]`, nodeId: node.ID }]
      : requests(job, 'train', 1),
    's',
    settings(preempt),
  );

const evictedIds = (result: Awaited<ReturnType<typeof placeOn>>) =>
  result.placements[0]?.preempted?.map((alloc) => alloc.ID).sort();
const grantedIds = (result: Awaited<ReturnType<typeof placeOn>>) =>
  result.placements[0]?.resources.Tasks.t?.Devices?.flatMap((device) => device.DeviceIDs);

describe('device preemption in placement (Nomad’s preemption_test.go device cases, as our scenarios)', () => {
  it('one instance per allocation: both holders of the model asked for are evicted to free four', async () => {
    const node = deviceNode();
    const a = holding(low, node, on1080, ['dev0'], { cpu: 500, memoryMB: 512 });
    const b = holding(low, node, on1080, ['dev1'], { cpu: 200, memoryMB: 512 });
    const result = await placeOn(node, [a, b], asking('nvidia/gpu/1080ti', 4));
    expect(result.failed).toEqual({});
    expect(evictedIds(result)).toEqual([a.ID, b.ID].sort());
    expect(grantedIds(result)).toEqual(gpu1080);
    // Only the holders' job was read lazily.
    expect(result.read).toEqual(['low']);
  });

  it('an allocation holding every instance is evicted alone; one holding another device is kept', async () => {
    const node = deviceNode();
    const gpus = holding(low, node, on1080, gpu1080, { cpu: 500, memoryMB: 512 });
    const fpga = holding(low, node, onFpga, ['fpga1']);
    const result = await placeOn(node, [gpus, fpga], asking('nvidia/gpu/1080ti', 4));
    expect(evictedIds(result)).toEqual([gpus.ID]);
    expect(grantedIds(result)).toEqual(gpu1080);
  });

  it('across two matching models, only allocations of the model that can be freed are evicted', async () => {
    const node = deviceNode();
    // The 1080ti holds a priority-100 allocation: evicting the low one there leaves 3 of 4. The 2080ti's two low
    // allocations and its free instance make 5.
    const allocs = [
      holding(low, node, on1080, ['dev0', 'dev1'], { cpu: 500, memoryMB: 512 }),
      holding(high, node, on1080, ['dev2'], { memoryMB: 100 }),
      holding(low, node, on2080, ['dev4', 'dev5']),
      holding(low, node, on2080, ['dev6', 'dev7'], { cpu: 100 }),
      holding(low, node, onFpga, ['fpga1']),
    ];
    const result = await placeOn(node, allocs, asking('gpu', 4));
    expect(evictedIds(result)).toEqual([allocs[2]?.ID, allocs[3]?.ID].sort());
    expect(grantedIds(result)).toEqual(['dev4', 'dev5', 'dev6', 'dev7']);
  });

  it('of two models that can both be freed, the one whose evictions sum the lower priorities wins', async () => {
    const node = deviceNode();
    // 1080ti: priorities 30 and 40 (net 70); 2080ti: two of priority 30 (net 30).
    const allocs = [
      holding(low, node, on1080, ['dev0', 'dev1'], { cpu: 500, memoryMB: 512 }),
      holding(low2, node, on1080, ['dev2', 'dev3'], { memoryMB: 100 }),
      holding(low, node, on2080, ['dev4', 'dev5']),
      holding(low, node, on2080, ['dev6', 'dev7'], { cpu: 100 }),
      holding(low, node, on2080, ['dev8'], { cpu: 100 }),
      holding(low, node, onFpga, ['fpga1']),
    ];
    const result = await placeOn(node, allocs, asking('gpu', 4));
    expect(evictedIds(result)).toEqual([allocs[2]?.ID, allocs[3]?.ID].sort());
    expect(result.read.sort()).toEqual(['low', 'low2']);
  });

  it('more instances asked than any model has: nothing is evicted and the node is exhausted on devices', async () => {
    const node = deviceNode();
    const allocs = [
      holding(low, node, on1080, gpu1080, { cpu: 500, memoryMB: 512 }),
      holding(low, node, onFpga, ['fpga1']),
    ];
    const result = await placeOn(node, allocs, asking('gpu', 6));
    expect(result.placements).toEqual([]);
    expect(result.failed.train?.DimensionExhausted).toEqual({ 'devices: no devices match request': 1 });
  });

  it('never evicts for devices within 10 of the placing priority, nor when preemption is off', async () => {
    const node = deviceNode();
    const closeHolder = holding(near, node, on1080, gpu1080);
    const close = await placeOn(node, [closeHolder], asking('nvidia/gpu/1080ti', 1));
    expect(close.placements).toEqual([]);
    expect(close.failed.train?.DimensionExhausted).toEqual({ 'devices: no devices match request': 1 });
    const lowHolder = holding(low, node, on1080, gpu1080);
    const off = await placeOn(node, [lowHolder], asking('nvidia/gpu/1080ti', 1), false);
    expect(off.placements).toEqual([]);
    expect(off.failed.train?.DimensionExhausted).toEqual({ 'devices: no devices match request': 1 });
    // With preemption off no priority is asked for.
    expect(off.read).toEqual([]);
  });

  it('an allocation evicted for its device frees its CPU too: no second eviction is needed', async () => {
    const node = deviceNode();
    // 3900 MHz offered: the holder's 3000 and another job's 400 leave 500, short of the 1000 asked.
    const holder = holding(low, node, on1080, gpu1080, { cpu: 3000 });
    const other = makeAlloc(low2, 'g', node, { cpu: 400, memoryMB: 256, diskMB: 0 });
    const result = await placeOn(node, [holder, other], asking('nvidia/gpu/1080ti', 2));
    expect(evictedIds(result)).toEqual([holder.ID]);
    expect(grantedIds(result)).toEqual(['dev0', 'dev1']);
  });

  it('the cores an allocation evicted for its device reserved are free for the placement’s cores', async () => {
    const node = deviceNode(); // 4 cores of 1,000 MHz
    const holder = holding(low, node, on1080, gpu1080, { cpu: 3000 });
    const pinned = holder.AllocatedResources.Tasks.main;
    if (pinned) pinned.Cpu.ReservedCores = [0, 1, 2];
    const job = makeJob({
      ID: 'pinned',
      Type: 'system',
      Priority: 100,
      TaskGroups: [
        {
          Name: 'train',
          Count: 1,
          Tasks: [
            task('t', 100, 512, {
              Resources: { Cores: 2, MemoryMB: 512, Devices: [{ Name: 'nvidia/gpu/1080ti', Count: 1 }] },
            }),
          ],
        },
      ],
    });
    const result = await placeOn(node, [holder], job);
    expect(evictedIds(result)).toEqual([holder.ID]);
    expect(result.placements[0]?.resources.Tasks.t?.Cpu).toEqual({ CpuShares: 2000, ReservedCores: [0, 1] });
  });

  it('a service job evicts for a device only once enabled, after a first pass without, and scores it', async () => {
    const node = deviceNode();
    const holder = holding(low, node, on1080, gpu1080);
    const job = asking('nvidia/gpu/1080ti', 1, 'service');
    const off = await placeOn(node, [holder], job, false);
    expect(off.placements).toEqual([]);
    const on = await placeOn(node, [holder], job);
    expect(evictedIds(on)).toEqual([holder.ID]);
    expect(on.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores.preemption).toBe(preemptionScore([30]));
  });
});

describe('the device preemption choice (pure)', () => {
  it('trims an option to the fewest allocations: a larger holder makes a smaller lower-priority one unneeded', () => {
    const node = deviceNode();
    // Needing 4 of the 2080ti's 5: priority 30 holds 1, priority 40 holds 4. Both are taken in priority order
    // (1 + 0 free < 4, then 5 ≥ 4), then trimmed by instances held: the 40 alone covers the 4.
    const small = holding(low, node, on2080, ['dev4']);
    const large = holding(low2, node, on2080, ['dev5', 'dev6', 'dev7', 'dev8']);
    const allocs = [small, large];
    const [ask] = deviceAsks({ Devices: [{ Name: 'nvidia/gpu/2080ti', Count: 4 }] });
    if (!ask) throw new Error('no ask');
    const chosen = preemptForDevice({
      node,
      ask,
      allocs,
      held: heldDevices(allocs),
      job: { ID: 'placing', Namespace: 'default', Priority: 100 },
      priorityOf: (alloc) => priorities.get(priorityKey(alloc.Namespace, alloc.JobID)),
    });
    expect(chosen?.map((alloc) => alloc.ID)).toEqual([large.ID]);
    // An allocation of the placing job itself, or of unknown priority, is never a candidate.
    const own = preemptForDevice({
      node,
      ask,
      allocs,
      held: heldDevices(allocs),
      job: { ID: 'low2', Namespace: 'default', Priority: 100 },
      priorityOf: (alloc) => (alloc.JobID === 'low' ? 30 : undefined),
    });
    expect(own).toBeNull();
  });
});
