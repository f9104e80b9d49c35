// biome-ignore-all lint/suspicious/noTemplateCurlyInString: constraint targets are Nomad interpolations
/**
 * Properties of any placement, over random clusters and jobs (fast-check): no node ends up holding more CPU,
 * memory or disk than it offers less its reserved resources; no two allocations on a node share a port, none takes
 * a reserved host port, every dynamic port is in the node's range; every placement is on a ready, eligible,
 * undrained node of the job's pool and datacenters that has the driver and meets the constraints; every request is
 * placed or counted in its group's failure; and the same inputs give the same plan.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { ClusterNode } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import { parsePortRanges } from '../../../packages/core/src/scheduler/placement/ports.ts';
import { capacityOf, usageOf } from '../../../packages/core/src/scheduler/placement/resources.ts';
import { makeAlloc, makeJob, makeNode, task } from './fixtures.ts';

const nodeArbitrary = fc.record({
  cpu: fc.integer({ min: 500, max: 8000 }),
  memoryMB: fc.integer({ min: 512, max: 16384 }),
  diskMB: fc.integer({ min: 400, max: 5000 }),
  reservedCpu: fc.integer({ min: 0, max: 400 }),
  reservedPorts: fc.constantFrom('', '22', '8080,20000-20010'),
  datacenter: fc.constantFrom('dc1', 'dc2', 'dc3'),
  rack: fc.constantFrom('r1', 'r2', 'r3'),
  rawExec: fc.boolean(),
  status: fc.constantFrom('ready', 'ready', 'ready', 'down'),
  draining: fc.boolean(),
  dynamic: fc.constantFrom(undefined, { min: 25000, max: 25003 }),
  held: fc.array(fc.record({ cpu: fc.integer({ min: 50, max: 2000 }), memoryMB: fc.integer({ min: 50, max: 2000 }) }), {
    maxLength: 3,
  }),
});

const jobArbitrary = fc.record({
  type: fc.constantFrom('service', 'batch'),
  datacenters: fc.constantFrom<string[]>(['*'], ['dc1', 'dc2'], ['dc3']),
  count: fc.integer({ min: 1, max: 25 }),
  cpu: fc.integer({ min: 50, max: 1500 }),
  memoryMB: fc.integer({ min: 50, max: 3000 }),
  diskMB: fc.integer({ min: 100, max: 2000 }),
  staticPort: fc.boolean(),
  dynamicPorts: fc.integer({ min: 0, max: 2 }),
  rackConstraint: fc.constantFrom(undefined, 'r1', 'r2'),
  spread: fc.boolean(),
  affinity: fc.boolean(),
  distinctHosts: fc.boolean(),
});

describe('placement invariants (property)', () => {
  it('never over-commits a node, never collides ports, places only where allowed, and is deterministic', () => {
    fc.assert(
      fc.property(
        fc.array(nodeArbitrary, { minLength: 1, maxLength: 12 }),
        jobArbitrary,
        fc.string(),
        (nodeSpecs, spec, seed) => {
          const other = makeJob({ ID: 'other' });
          const allocs: Allocation[] = [];
          const nodes: ClusterNode[] = nodeSpecs.map((nodeSpec) => {
            const node = makeNode({
              cpu: nodeSpec.cpu,
              memoryMB: nodeSpec.memoryMB,
              diskMB: nodeSpec.diskMB,
              reserved: { cpu: nodeSpec.reservedCpu, ports: nodeSpec.reservedPorts },
              datacenter: nodeSpec.datacenter,
              meta: { rack: nodeSpec.rack },
              rawExec: nodeSpec.rawExec,
              status: nodeSpec.status as ClusterNode['Status'],
              draining: nodeSpec.draining,
              ...(nodeSpec.dynamic ? { dynamicPorts: nodeSpec.dynamic } : {}),
            });
            for (const held of nodeSpec.held) allocs.push(makeAlloc(other, 'web', node, { ...held, diskMB: 100 }));
            return node;
          });
          const job = makeJob({
            Type: spec.type,
            Datacenters: spec.datacenters,
            Constraints: [
              ...(spec.rackConstraint ? [{ LTarget: '${meta.rack}', RTarget: spec.rackConstraint, Operand: '=' }] : []),
              ...(spec.distinctHosts ? [{ LTarget: '', RTarget: '', Operand: 'distinct_hosts' }] : []),
            ],
            Affinities: spec.affinity ? [{ LTarget: '${meta.rack}', RTarget: 'r3', Operand: '=', Weight: 60 }] : null,
            Spreads: spec.spread ? [{ Attribute: '${node.datacenter}', Weight: 50 }] : null,
            TaskGroups: [
              {
                Name: 'web',
                Count: spec.count,
                EphemeralDisk: { SizeMB: spec.diskMB },
                Networks:
                  spec.staticPort || spec.dynamicPorts > 0
                    ? [
                        {
                          ReservedPorts: spec.staticPort ? [{ Label: 'admin', Value: 8080 }] : [],
                          DynamicPorts: Array.from({ length: spec.dynamicPorts }, (_, i) => ({ Label: `p${i}` })),
                        },
                      ]
                    : null,
                Tasks: [task('a', spec.cpu, spec.memoryMB)],
              },
            ],
          });
          const asked = Array.from({ length: spec.count }, (_, i) => ({ group: 'web', name: `example.web[${i}]` }));
          const result = place({ nodes, allocs }, job, asked, seed);

          // every request placed or counted in the failure
          const failed = result.failed.web;
          expect(result.placements.length + (failed ? 1 + failed.CoalescedFailures : 0)).toBe(spec.count);

          for (const node of nodes) {
            const mine = result.placements.filter((p) => p.node.ID === node.ID);
            const capacity = capacityOf(node);
            const used = [
              ...allocs.filter((a) => a.NodeID === node.ID).map((a) => a.AllocatedResources),
              ...mine.map((p) => p.resources),
            ]
              .map(usageOf)
              .reduce(
                (sum, each) => ({
                  cpu: sum.cpu + each.cpu,
                  memoryMB: sum.memoryMB + each.memoryMB,
                  diskMB: sum.diskMB + each.diskMB,
                }),
                { cpu: 0, memoryMB: 0, diskMB: 0 },
              );
            if (mine.length > 0) {
              expect(used.cpu).toBeLessThanOrEqual(capacity.cpu);
              expect(used.memoryMB).toBeLessThanOrEqual(capacity.memoryMB);
              expect(used.diskMB).toBeLessThanOrEqual(capacity.diskMB);
              expect(node.Status).toBe('ready');
              expect(node.DrainStrategy).toBeNull();
              expect(node.Attributes['driver.raw_exec']).toBe('1');
              if (!spec.datacenters.includes('*')) expect(spec.datacenters).toContain(node.Datacenter);
              if (spec.rackConstraint) expect(node.Meta?.rack).toBe(spec.rackConstraint);
              if (spec.distinctHosts) expect(mine).toHaveLength(1);
            }
            const ports = mine.flatMap((p) => (p.resources.Shared.Ports ?? []).map((port) => port.Value));
            expect(new Set(ports).size).toBe(ports.length);
            const reserved = parsePortRanges(
              (node.ReservedResources as { Networks: { ReservedHostPorts: string } }).Networks.ReservedHostPorts,
            );
            for (const port of ports) expect(reserved).not.toContain(port);
            const range = node.NodeResources as { MinDynamicPort: number; MaxDynamicPort: number };
            for (const placement of mine)
              for (const port of placement.resources.Shared.Ports ?? [])
                if (port.Label !== 'admin') {
                  expect(port.Value).toBeGreaterThanOrEqual(range.MinDynamicPort);
                  expect(port.Value).toBeLessThanOrEqual(range.MaxDynamicPort);
                }
          }

          const again = place({ nodes, allocs }, job, asked, seed);
          expect(again.placements.map((p) => [p.node.ID, p.resources])).toEqual(
            result.placements.map((p) => [p.node.ID, p.resources]),
          );
        },
      ),
      { numRuns: 150, seed: 41 },
    );
  });
});
