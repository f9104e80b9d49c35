/** The simulated fleet's nodes: the same seed gives the same nodes, each shaped as the real agent's. */
import { describe, expect, it } from 'vitest';
import { seededNode } from '../../packages/agent/src/fleet/seeded-nodes.ts';

describe('seeded nodes', () => {
  it('are the same nodes for the same seed and position, different for another', () => {
    const a = seededNode(7, { seed: 42 });
    expect(seededNode(7, { seed: 42 })).toEqual(a);
    expect(seededNode(7, { seed: 43 }).ID).not.toBe(a.ID);
    expect(seededNode(8, { seed: 42 }).ID).not.toBe(a.ID);
  });

  it('have distinct IDs, secrets and addresses over 10,000 positions, and varied hardware', () => {
    const nodes = Array.from({ length: 10_000 }, (_, position) => seededNode(position, { seed: 1 }));
    expect(new Set(nodes.map((node) => node.ID)).size).toBe(10_000);
    expect(new Set(nodes.map((node) => node.SecretID)).size).toBe(10_000);
    expect(new Set(nodes.map((node) => node.Attributes['unique.network.ip-address'])).size).toBe(10_000);
    expect(new Set(nodes.map((node) => node.NodeResources.Cpu.TotalCpuCores)).size).toBeGreaterThan(3);
    expect(new Set(nodes.map((node) => node.Datacenter))).toEqual(new Set(['dc1', 'dc2', 'dc3']));
    expect(nodes.filter((node) => node.Drivers.raw_exec?.Healthy).length).toBeGreaterThan(8000);
  });

  it("carry the real agent's attributes, with consistent figures", () => {
    const node = seededNode(3, { seed: 5, datacenters: ['east'], nodePool: 'sim' });
    for (const name of [
      'cpu.arch',
      'cpu.numcores',
      'cpu.frequency',
      'cpu.totalcompute',
      'memory.totalbytes',
      'unique.storage.volume',
      'unique.storage.bytesfree',
      'kernel.name',
      'os.name',
      'unique.hostname',
      'nomad.version',
    ])
      expect(node.Attributes[name], name).toBeTruthy();
    expect(Number(node.Attributes['cpu.totalcompute'])).toBe(
      Number(node.Attributes['cpu.numcores']) * Number(node.Attributes['cpu.frequency']),
    );
    expect(node.NodeResources.Cpu.CpuShares).toBe(Number(node.Attributes['cpu.totalcompute']));
    expect(node).toMatchObject({ Datacenter: 'east', NodePool: 'sim', Name: 'sim-5-3' });
  });
});
