/**
 * Attack class: reaching allocations past what a token's namespace rules or a node's credential grant (Nomad's
 * `nomad/alloc_endpoint.go`, `nomad/node_endpoint.go` GetAllocs, GetClientAllocs and UpdateAlloc).
 *
 * Attackers: a `read-job` token (namespace `read` policy) stopping an allocation; a token of namespace `team-a`
 * reaching `team-b`'s allocations; a `node:read` token without `read-job`; node A (its secret or its identity) reading,
 * listing or reporting on node B's allocations; a node's secret used as an ACL token.
 * They try: the stop, every allocation read (`/v1/allocations` with `team-b` and `*`, `/v1/allocation/:id`, the job's,
 * the evaluation's and the node's lists), the client map, the client fetch and the client report.
 * They must never reach: a write (the index unmoved), an allocation of a namespace they may not read in any answer,
 * or another node's allocation in a node's answers. Each refusal is a 403 `Permission denied` (`ACL token not found` for a
 * node's secret presented as a token).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocationOf, applyPlan, ready } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const job = (id: string) => ({
  ID: id,
  TaskGroups: [{ Name: 'web', Tasks: [{ Name: 't', Driver: 'raw_exec' }] }],
});

describe('attack: allocations past their namespace rules and their node', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let teamA: string;
  let nodeReader: string;
  let nodeA: Awaited<ReturnType<typeof registerNode>>;
  let nodeB: Awaited<ReturnType<typeof registerNode>>;
  let allocA: string;
  let allocB: string;
  let evalB: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    nodeA = await registerNode(h, tokens.writer);
    nodeB = await registerNode(h, tokens.writer);
    await ready(h, nodeA.node);
    await ready(h, nodeB.node);
    for (const name of ['team-a', 'team-b'])
      expect((await as(root)('PUT', '/v1/namespace', { Name: name })).status).toBe(200);
    const a = await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('app') });
    const b = await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('secret') });
    evalB = b.body.EvalID;
    const placedA = await allocationOf(h, { namespace: 'team-a', id: 'app', evalId: a.body.EvalID }, nodeA.node);
    const placedB = await allocationOf(h, { namespace: 'team-b', id: 'secret', evalId: evalB }, nodeB.node);
    expect((await applyPlan(h, { place: [placedA, placedB] })).placed).toHaveLength(2);
    allocA = placedA.ID;
    allocB = placedB.ID;
    reader = await tokenWith('namespace "team-a" { policy = "read" }');
    teamA = await tokenWith('namespace "team-a" { policy = "write" }');
    nodeReader = await tokenWith('node { policy = "read" }');
  });
  afterAll(() => h.close());

  it('a read-job token cannot stop an allocation; alloc-lifecycle in another namespace cannot either', async () => {
    await refused(() => as(reader)('PUT', `/v1/allocation/${allocA}/stop`));
    await refused(() => as(teamA)('POST', `/v1/allocation/${allocB}/stop`));
    await refused(() => as(undefined)('PUT', `/v1/allocation/${allocA}/stop`));
    expect((await h.scheduler.allocations.get(allocA))?.DesiredTransition.Migrate).toBeNull();
    expect((await h.scheduler.allocations.get(allocB))?.DesiredTransition.Migrate).toBeNull();
    // The namespace's own write policy grants alloc-lifecycle.
    expect((await as(teamA)('PUT', `/v1/allocation/${allocA}/stop`)).status).toBe(200);
  });

  it('namespace team-a reads none of team-b’s allocations, by any route', async () => {
    await refused(() => as(reader)('GET', '/v1/allocations?namespace=team-b'));
    await refused(() => as(reader)('GET', `/v1/allocation/${allocB}`));
    await refused(() => as(reader)('GET', '/v1/job/secret/allocations?namespace=team-b'));
    await refused(() => as(reader)('GET', `/v1/evaluation/${evalB}/allocations`));
    const all = await as(reader)('GET', '/v1/allocations?namespace=*');
    expect(all.status).toBe(200);
    expect(all.body.map((alloc: { ID: string }) => alloc.ID)).toEqual([allocA]);
    // A filter cannot reach past the namespace rules either.
    const filtered = await as(reader)(
      'GET',
      `/v1/allocations?namespace=*&filter=${encodeURIComponent('Namespace == "team-b"')}`,
    );
    expect(filtered.body).toEqual([]);
  });

  it('node:read alone lists a node’s allocations only of namespaces it may read (none)', async () => {
    const out = await as(nodeReader)('GET', `/v1/node/${nodeB.node.ID}/allocations`);
    expect(out.status).toBe(200);
    expect(out.body).toEqual([]);
    await refused(() => as(reader)('GET', `/v1/node/${nodeB.node.ID}/allocations`));
    await refused(() => as(nodeReader)('GET', '/v1/allocations'));
  });

  it('node A reads neither node B’s map nor its allocation, with its secret or its identity', async () => {
    for (const credential of [nodeA.node.SecretID, nodeA.identity]) {
      await refused(() => as(credential)('GET', `/v1/client/node/${nodeB.node.ID}/allocations`));
      await refused(() => as(credential)('GET', `/v1/client/allocation/${allocB}`));
    }
    const own = await as(nodeA.identity)('GET', `/v1/client/allocation/${allocA}`);
    expect(own.status).toBe(200);
    expect(JSON.stringify(own.body)).not.toContain(allocB);
    const map = await as(nodeA.node.SecretID)('GET', `/v1/client/node/${nodeA.node.ID}/allocations`);
    expect(Object.keys(map.body.Allocs)).toEqual([allocA]);
  });

  it('node A cannot report on node B’s allocation, on its own path or on B’s', async () => {
    const report = { Allocs: [{ ID: allocB, ClientStatus: 'failed' }] };
    for (const credential of [nodeA.node.SecretID, nodeA.identity]) {
      await refused(() => as(credential)('PUT', `/v1/client/node/${nodeA.node.ID}/allocations`, report));
      await refused(() => as(credential)('PUT', `/v1/client/node/${nodeB.node.ID}/allocations`, report));
    }
    // Mixed with one of its own: the whole report is refused, its own allocation unchanged too.
    await refused(() =>
      as(nodeA.node.SecretID)('PUT', `/v1/client/node/${nodeA.node.ID}/allocations`, {
        Allocs: [
          { ID: allocA, ClientStatus: 'running' },
          { ID: allocB, ClientStatus: 'failed' },
        ],
      }),
    );
    expect((await h.scheduler.allocations.get(allocA))?.ClientStatus).toBe('pending');
    expect((await h.scheduler.allocations.get(allocB))?.ClientStatus).toBe('pending');
    await refused(() => as(undefined)('PUT', `/v1/client/node/${nodeB.node.ID}/allocations`, report));
  });

  it('a node’s secret is no ACL token for the allocation routes', async () => {
    // An unknown ACL token, as Nomad words it.
    const unknown = 'ACL token not found';
    await refused(() => as(nodeB.node.SecretID)('GET', '/v1/allocations?namespace=*'), 403, unknown);
    await refused(() => as(nodeB.node.SecretID)('GET', `/v1/allocation/${allocB}`), 403, unknown);
    await refused(() => as(nodeB.node.SecretID)('PUT', `/v1/allocation/${allocB}/stop`), 403, unknown);
  });
});
