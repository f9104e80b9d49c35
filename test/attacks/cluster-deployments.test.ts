/**
 * Attack class: reading deployments past what a token's namespace rules grant (Nomad's `nomad/deployment_endpoint.go`
 * GetDeployment, List, Allocations and `nomad/job_endpoint.go` Deployments, LatestDeployment: `read-job`).
 *
 * Attackers: a token with `read` on namespace `team-a` only; an anonymous caller; a `node:read` token.
 * They try: every deployment read on `team-b`'s deployment (`/v1/deployments` with `team-b`, `*` and a filter naming
 * `team-b`, `/v1/deployment/:id`, `/v1/deployment/allocations/:id`, the job's `deployments` and `deployment`).
 * They also try `fail` and `pause` with a `read-job` token, and team-a's `write` token on team-b's deployment.
 * They must never reach: a deployment or an allocation of `team-b` in any answer, or a deployment's status. Each refusal is a 403
 * `Permission denied` that writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const job = (id: string) => ({
  ID: id,
  TaskGroups: [
    {
      Name: 'web',
      Update: { MaxParallel: 1 },
      Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } }],
    },
  ],
});

describe('attack: deployments past their namespace rules', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let nodeReader: string;
  let deploymentA: string;
  let deploymentB: string;
  let writerA: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
    for (const name of ['team-a', 'team-b'])
      expect((await h.call('PUT', '/v1/namespace', { token: root, body: { Name: name } })).status).toBe(200);
    for (const [namespace, id] of [
      ['team-a', 'app'],
      ['team-b', 'secret'],
    ])
      expect(
        (await h.call('PUT', `/v1/jobs?namespace=${namespace}`, { token: root, body: { Job: job(id as string) } }))
          .status,
      ).toBe(200);
    await new EvaluationWorker(h.scheduler).runDue();
    deploymentA = (await h.scheduler.deployments.latest('team-a', 'app'))?.ID ?? '';
    deploymentB = (await h.scheduler.deployments.latest('team-b', 'secret'))?.ID ?? '';
    expect(deploymentA).not.toBe('');
    expect(deploymentB).not.toBe('');
    reader = await tokenWith('namespace "team-a" { policy = "read" }');
    nodeReader = await tokenWith('node { policy = "read" }');
    writerA = await tokenWith('namespace "team-a" { policy = "write" }');
  });
  afterAll(() => h.close());

  it('namespace team-a reads none of team-b’s deployments, by any route', async () => {
    await refused(() => as(reader)('GET', '/v1/deployments?namespace=team-b'));
    await refused(() => as(reader)('GET', `/v1/deployment/${deploymentB}`));
    await refused(() => as(reader)('GET', `/v1/deployment/allocations/${deploymentB}`));
    await refused(() => as(reader)('GET', '/v1/job/secret/deployments?namespace=team-b'));
    await refused(() => as(reader)('GET', '/v1/job/secret/deployment?namespace=team-b'));
    const all = await as(reader)('GET', '/v1/deployments?namespace=*');
    expect(all.status).toBe(200);
    expect(all.body.map((d: { ID: string }) => d.ID)).toEqual([deploymentA]);
    const filtered = await as(reader)(
      'GET',
      `/v1/deployments?namespace=*&filter=${encodeURIComponent('Namespace == "team-b"')}`,
    );
    expect(filtered.body).toEqual([]);
    // Its own namespace's deployment it reads.
    expect((await as(reader)('GET', `/v1/deployment/${deploymentA}`)).body.ID).toBe(deploymentA);
  });

  it('no token, or node:read alone, reads no deployment', async () => {
    for (const token of [undefined, nodeReader]) {
      await refused(() => as(token)('GET', '/v1/deployments'));
      await refused(() => as(token)('GET', `/v1/deployment/${deploymentA}`));
      await refused(() => as(token)('GET', `/v1/deployment/allocations/${deploymentA}`));
      await refused(() => as(token)('GET', '/v1/job/app/deployment?namespace=team-a'));
    }
  });

  it('a read-job token fails or pauses no deployment; team-a’s writer none of team-b’s', async () => {
    for (const [token, id] of [
      [reader, deploymentA],
      [writerA, deploymentB],
      [undefined, deploymentA],
    ] as const) {
      await refused(() => as(token)('PUT', `/v1/deployment/fail/${id}`));
      await refused(() => as(token)('PUT', `/v1/deployment/pause/${id}`, { Pause: true }));
    }
    expect((await h.scheduler.deployments.get(deploymentA))?.Status).toBe('running');
    expect((await h.scheduler.deployments.get(deploymentB))?.Status).toBe('running');
    // The namespace's own write policy grants it.
    expect((await as(writerA)('PUT', `/v1/deployment/pause/${deploymentA}`, { Pause: true })).status).toBe(200);
  });
});
