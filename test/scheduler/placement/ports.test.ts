/**
 * Ports, as Nomad's NetworkIndex offers them: static ports free on the node's address (not among its reserved host
 * ports, nor held by a running allocation, nor by this call's placements), dynamic ports in the node's range and
 * never colliding, the granted network in the allocation's resources, and the exhaustion reasons Nomad writes.
 */
import { describe, expect, it } from 'vitest';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import { parsePortRanges } from '../../../packages/core/src/scheduler/placement/ports.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

const withNetwork = (network: Record<string, unknown>, count = 1) =>
  makeJob({ TaskGroups: [{ Name: 'web', Count: count, Networks: [network], Tasks: [task('a', 100, 64)] }] });

describe('reserved host ports (Nomad’s ParsePortRanges)', () => {
  it('reads single ports and ranges, and refuses what Nomad refuses', () => {
    expect(parsePortRanges('22, 80,8000-8003')).toEqual([22, 80, 8000, 8001, 8002, 8003]);
    expect(parsePortRanges('')).toEqual([]);
    expect(parsePortRanges('0')).toBe('port must be > 0');
    expect(parsePortRanges('70000')).toBe('port must be < 65536 but found 70000');
    expect(parsePortRanges('90-80')).toBe('invalid range: ending value (80) less than starting (90) value');
    expect(parsePortRanges('1-2-3')).toBe('can only parse single port numbers or port ranges (ex. 80,100-120,150)');
    expect(parsePortRanges('22,')).toBe("can't specify empty port");
  });
});

describe('static ports', () => {
  it('grants a free static port, with the node’s address, in Shared.Ports and Shared.Networks', () => {
    const node = makeNode({ ip: '10.1.2.3' });
    const job = withNetwork({ ReservedPorts: [{ Label: 'http', Value: 8080, To: 80 }] });
    const result = place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.placements[0]?.resources.Shared).toEqual({
      DiskMB: 300,
      Ports: [{ Label: 'http', Value: 8080, To: 80, HostIP: '10.1.2.3' }],
      Networks: [
        {
          Mode: 'host',
          Device: '',
          CIDR: '',
          IP: '10.1.2.3',
          MBits: 0,
          DNS: null,
          ReservedPorts: [{ Label: 'http', Value: 8080, To: 80, HostNetwork: 'default' }],
          DynamicPorts: null,
        },
      ],
    });
  });

  it('exhausts a node whose reserved host ports include it: "network: reserved port collision http=22"', () => {
    const node = makeNode({ reserved: { ports: '22,8000-8100' } });
    const ssh = withNetwork({ ReservedPorts: [{ Label: 'http', Value: 22 }] });
    expect(place({ nodes: [node], allocs: [] }, ssh, requests(ssh, 'web', 1), 's').failed.web).toMatchObject({
      NodesExhausted: 1,
      DimensionExhausted: { 'network: reserved port collision http=22': 1 },
    });
    const inRange = withNetwork({ ReservedPorts: [{ Label: 'admin', Value: 8050 }] });
    expect(place({ nodes: [node], allocs: [] }, inRange, requests(inRange, 'web', 1), 's').failed.web).toMatchObject({
      DimensionExhausted: { 'network: reserved port collision admin=8050': 1 },
    });
  });

  it('collides with a running allocation’s port and with this call’s earlier placement', () => {
    const busy = makeNode();
    const free = makeNode();
    const other = makeJob({ ID: 'other' });
    const holding = makeAlloc(other, 'web', busy, { ports: [{ Label: 'http', Value: 9000 }] });
    const job = withNetwork({ ReservedPorts: [{ Label: 'http', Value: 9000 }] }, 3);
    const result = place({ nodes: [busy, free], allocs: [holding] }, job, requests(job, 'web', 3), 's');
    expect(result.placements.map((p) => p.node.ID)).toEqual([free.ID]);
    expect(result.failed.web).toMatchObject({
      NodesEvaluated: 2,
      NodesExhausted: 2,
      DimensionExhausted: { 'network: reserved port collision http=9000': 2 },
      CoalescedFailures: 1,
    });
  });

  it('exhausts a node whose allocations’ ports already collide: "network: port collision"', () => {
    const node = makeNode();
    const other = makeJob({ ID: 'other' });
    const allocs = [
      makeAlloc(other, 'web', node, { ports: [{ Label: 'a', Value: 7000 }] }),
      makeAlloc(other, 'web', node, { ports: [{ Label: 'b', Value: 7000 }] }),
    ];
    const job = makeJob();
    expect(place({ nodes: [node], allocs }, job, requests(job, 'web', 1), 's').failed.web).toMatchObject({
      DimensionExhausted: { 'network: port collision': 1 },
    });
  });

  it('exhausts a node whose reserved ports do not parse: "network: invalid node"', () => {
    const node = makeNode({ reserved: { ports: 'twenty-two' } });
    const job = makeJob();
    expect(place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 's').failed.web).toMatchObject({
      DimensionExhausted: { 'network: invalid node': 1 },
    });
  });

  it('filters a node without the host network a port names', () => {
    const node = makeNode();
    const job = withNetwork({ ReservedPorts: [{ Label: 'http', Value: 80, HostNetwork: 'public' }] });
    expect(place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 's').failed.web).toMatchObject({
      NodesFiltered: 1,
      ConstraintFiltered: { 'missing host network "public" for port "http"': 1 },
    });
    const bridge = withNetwork({ Mode: 'bridge', DynamicPorts: [{ Label: 'http' }] });
    expect(place({ nodes: [node], allocs: [] }, bridge, requests(bridge, 'web', 1), 's').failed.web).toMatchObject({
      ConstraintFiltered: { 'missing network': 1 },
    });
  });
});

describe('dynamic ports', () => {
  it('picks distinct ports in the node’s range, To -1 meaning the same port, reproducibly from the seed', () => {
    const node = makeNode({ cpu: 100_000, memoryMB: 100_000 });
    const job = withNetwork(
      {
        ReservedPorts: [{ Label: 'static', Value: 20001 }],
        DynamicPorts: [
          { Label: 'http', To: -1 },
          { Label: 'grpc', To: 9090 },
        ],
      },
      50,
    );
    const run = () => place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 'seed-9');
    const ports = run().placements[0]?.resources.Shared.Ports ?? [];
    expect(ports.map((port) => port.Label)).toEqual(['static', 'http', 'grpc']);
    const [, http, grpc] = ports;
    expect(http?.Value).toBeGreaterThanOrEqual(20000);
    expect(http?.Value).toBeLessThanOrEqual(32000);
    expect(http?.To).toBe(http?.Value);
    expect(grpc?.To).toBe(9090);
    expect(new Set(ports.map((port) => port.Value)).size).toBe(3);
    expect(run().placements[0]?.resources.Shared.Ports).toEqual(ports);
    const network = run().placements[0]?.resources.Shared.Networks?.[0];
    expect(network?.DynamicPorts).toEqual([
      { Label: 'http', Value: http?.Value, To: http?.Value, HostNetwork: 'default' },
      { Label: 'grpc', Value: grpc?.Value, To: 9090, HostNetwork: 'default' },
    ]);
  });

  it('fills a small range exactly: every port of it once, then "network: dynamic port selection failed"', () => {
    const node = makeNode({
      cpu: 100_000,
      memoryMB: 100_000,
      dynamicPorts: { min: 30000, max: 30004 },
      reserved: { ports: '30002' },
    });
    const job = withNetwork({ DynamicPorts: [{ Label: 'http' }] }, 6);
    const result = place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 6), 'x');
    const values = result.placements.map((p) => p.resources.Shared.Ports?.[0]?.Value).sort();
    expect(values).toEqual([30000, 30001, 30003, 30004]);
    expect(result.failed.web).toMatchObject({
      DimensionExhausted: { 'network: dynamic port selection failed': 1 },
      CoalescedFailures: 1,
    });
  });
});
