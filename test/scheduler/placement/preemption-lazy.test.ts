/**
 * Lazy priority reads give the plan of priorities read up front, over random clusters (fast-check): nodes full of
 * other jobs' allocations of random priorities (some unknown, some holding a GPU or the static port 8080), and a
 * service, batch or system job that may preempt, asking CPU, memory, maybe the port and maybe a GPU. Each case runs
 * both ways (`place-both.ts`, which asserts one plan); and whatever it evicts, it evicts only allocations of jobs at
 * least 10 below it, never over-commits a node or grants one GPU twice, and settles in at most two reads.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { AllocatedDeviceResource } from '../../../packages/core/src/scheduler/cluster/allocations/resources.ts';
import type { ClusterNode } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { heldDevices } from '../../../packages/core/src/scheduler/placement/devices.ts';
import { capacityOf, usageOf } from '../../../packages/core/src/scheduler/placement/resources.ts';
import { groupKey, priorityKey } from '../../../packages/core/src/scheduler/placement/types.ts';
import { makeAlloc, makeJob, makeNode, task } from './fixtures.ts';
import { placeBoth } from './place-both.ts';

const holderArbitrary = fc.record({
  job: fc.integer({ min: 0, max: 5 }),
  cpu: fc.integer({ min: 300, max: 2000 }),
  memoryMB: fc.integer({ min: 100, max: 2000 }),
  gpu: fc.boolean(),
  port: fc.boolean(),
});

const caseArbitrary = fc.record({
  nodes: fc.array(fc.array(holderArbitrary, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
  /** The other jobs' priorities; `null` for a job whose priority is unknown (not in the snapshot's). */
  priorities: fc.array(fc.option(fc.integer({ min: 1, max: 100 }), { nil: null }), { minLength: 6, maxLength: 6 }),
  maxParallel: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 6, maxLength: 6 }),
  type: fc.constantFrom('service', 'batch', 'system'),
  priority: fc.integer({ min: 40, max: 100 }),
  count: fc.integer({ min: 1, max: 8 }),
  cpu: fc.integer({ min: 100, max: 2500 }),
  memoryMB: fc.integer({ min: 100, max: 2500 }),
  port: fc.boolean(),
  gpus: fc.integer({ min: 0, max: 2 }),
  seed: fc.string({ maxLength: 4 }),
});

describe('lazy priority reads (property)', () => {
  it('give the up-front plan, and every eviction follows Nomad’s rules', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async (spec) => {
        const others = spec.priorities.map((priority, i) => makeJob({ ID: `other-${i}`, Priority: priority ?? 50 }));
        const allocs: Allocation[] = [];
        const nodes: ClusterNode[] = spec.nodes.map((holders) => {
          const node = makeNode({ cpu: 4000, memoryMB: 4096 });
          (node.NodeResources as Record<string, unknown>).Devices = [
            {
              Vendor: 'nvidia',
              Type: 'gpu',
              Name: 't4',
              Instances: ['a', 'b'].map((id) => ({ ID: `${node.ID}-${id}`, Healthy: true })),
            },
          ];
          // Holders while they fit: the first GPU and port holder takes them, later ones go without.
          let cpu = 0;
          let memoryMB = 0;
          let gpuFree = 2;
          let portFree = true;
          for (const holder of holders) {
            if (cpu + holder.cpu > 4000 || memoryMB + holder.memoryMB > 4096) continue;
            cpu += holder.cpu;
            memoryMB += holder.memoryMB;
            const other = others[holder.job] as (typeof others)[number];
            const port = holder.port && portFree;
            const alloc = makeAlloc(other, 'g', node, {
              cpu: holder.cpu,
              memoryMB: holder.memoryMB,
              diskMB: 0,
              ...(port ? { ports: [{ Label: 'http', Value: 8080 }] } : {}),
            });
            if (port) {
              portFree = false;
              // The group network that names the port static, as placement grants it (what PreemptForNetwork reads).
              const ip = String(node.Attributes['unique.network.ip-address']);
              alloc.AllocatedResources.Shared.Networks = [
                { Mode: 'host', Device: 'eth0', IP: ip, ReservedPorts: [{ Label: 'http', Value: 8080, To: 0 }] },
              ] as unknown as typeof alloc.AllocatedResources.Shared.Networks;
            }
            if (holder.gpu && gpuFree > 0) {
              const granted: AllocatedDeviceResource = {
                Vendor: 'nvidia',
                Type: 'gpu',
                Name: 't4',
                DeviceIDs: [`${node.ID}-${gpuFree === 2 ? 'a' : 'b'}`],
              };
              gpuFree--;
              (alloc.AllocatedResources.Tasks.main as { Devices: AllocatedDeviceResource[] | null }).Devices = [
                granted,
              ];
            }
            allocs.push(alloc);
          }
          return node;
        });
        const priorities = new Map<string, number>();
        const maxParallel = new Map<string, number>();
        spec.priorities.forEach((priority, i) => {
          if (priority !== null) priorities.set(priorityKey('default', `other-${i}`), priority);
          maxParallel.set(groupKey('default', `other-${i}`, 'g'), spec.maxParallel[i] ?? 0);
        });
        const resources = {
          CPU: spec.cpu,
          MemoryMB: spec.memoryMB,
          ...(spec.gpus > 0 ? { Devices: [{ Name: 'nvidia/gpu', Count: spec.gpus }] } : {}),
        };
        const job = makeJob({
          ID: 'placing',
          Type: spec.type,
          Priority: spec.priority,
          TaskGroups: [
            {
              Name: 'web',
              Count: spec.type === 'system' ? 1 : spec.count,
              EphemeralDisk: { SizeMB: 0 },
              Networks: spec.port ? [{ ReservedPorts: [{ Label: 'http', Value: 8080 }] }] : null,
              Tasks: [task('t', spec.cpu, spec.memoryMB, { Resources: resources })],
            },
          ],
        });
        const requests =
          spec.type === 'system'
            ? nodes.map((node, i) => ({ group: 'web', name: `placing.web[${i}]`, nodeId: node.ID }))
            : Array.from({ length: spec.count }, (_, i) => ({ group: 'web', name: `placing.web[${i}]` }));
        const settings = {
          algorithm: 'binpack' as const,
          preempt: true,
          nodeLimit: 100,
          memoryOversubscription: false,
        };
        const result = await placeBoth({ nodes, allocs, priorities, maxParallel }, job, requests, spec.seed, settings);

        expect(result.rounds).toBeLessThanOrEqual(2);
        const evicted = new Set(result.placements.flatMap((placement) => placement.preempted ?? []));
        for (const alloc of evicted) {
          const priority = priorities.get(priorityKey(alloc.Namespace, alloc.JobID));
          expect(priority).toBeDefined();
          expect(spec.priority - (priority ?? 0)).toBeGreaterThanOrEqual(10);
        }
        for (const node of nodes) {
          const kept = allocs.filter((alloc) => alloc.NodeID === node.ID && !evicted.has(alloc));
          const mine = result.placements.filter((placement) => placement.node.ID === node.ID);
          const held = [...kept.map((alloc) => alloc.AllocatedResources), ...mine.map((p) => p.resources)].map(usageOf);
          const capacity = capacityOf(node);
          expect(held.reduce((sum, usage) => sum + usage.cpu, 0)).toBeLessThanOrEqual(capacity.cpu);
          expect(held.reduce((sum, usage) => sum + usage.memoryMB, 0)).toBeLessThanOrEqual(capacity.memoryMB);
          const gpus = mine.flatMap((p) => p.resources.Tasks.t?.Devices?.flatMap((device) => device.DeviceIDs) ?? []);
          expect(new Set(gpus).size).toBe(gpus.length);
          const keptGpus = heldDevices(kept);
          for (const id of gpus) expect(keptGpus.has(`nvidia/gpu/t4/${id}`)).toBe(false);
          const ports = [...kept, ...mine.map((p) => ({ AllocatedResources: p.resources }))].flatMap((alloc) =>
            (alloc.AllocatedResources.Shared.Ports ?? []).map((port) => port.Value),
          );
          expect(new Set(ports).size).toBe(ports.length);
        }
      }),
      { numRuns: 200 },
    );
  });
});
