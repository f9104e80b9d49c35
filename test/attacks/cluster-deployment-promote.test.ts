/**
 * Attack class: changing a deployment's rollout past what a caller is granted (Nomad's `Deployment.Promote` and
 * `Deployment.SetAllocHealth`: `submit-job` in the deployment's namespace; the client's `Node.UpdateAlloc`: a node
 * reports only its own allocations).
 *
 * Attackers: a `read` token of namespace `team-a`; team-a's `write` token; anonymous; a node.
 * They try: promoting or setting allocation health with a `read-job` token or none; team-a's writer promoting or
 * setting health on team-b's deployment, naming team-b's allocation (or another deployment's) in its own
 * deployment's allocation-health, or a body `DeploymentID` other than the path's; a node reporting health for an
 * allocation placed on another node.
 * They must never reach: a deployment promoted, failed or counted, or an allocation's health changed, outside what
 * they hold. Each refusal writes nothing (403 for ACL and a foreign node, 400 for an allocation not in the deployment).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready } from '../support/cluster-allocations.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const job = (id: string, count: number) => ({
  ID: id,
  TaskGroups: [
    {
      Name: 'web',
      Count: count,
      Update: { MaxParallel: 1 },
      Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 20, MemoryMB: 16 } }],
    },
  ],
});

describe('attack: promote and allocation health past their grants', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let writerA: string;
  let deploymentA: string;
  let otherA: string;
  let deploymentB: string;
  const nodes: Array<{ ID: string; SecretID: string }> = [];
  const { as, tokenWith } = attackCalls(() => ({ h, root }));

  /** The call is refused with `status` and `text`, and the state's index does not move. */
  async function refused(
    call: () => Promise<{ status: number; text: string }>,
    status = 403,
    text = 'Permission denied',
  ): Promise<void> {
    const before = await h.scheduler.state.currentIndex();
    const out = await call();
    expect([out.status, out.text]).toEqual([status, text]);
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  }

  const allocsOf = async (namespace: string, jobId: string) => h.scheduler.allocations.ofJob(namespace, jobId);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    for (let n = 0; n < 2; n++) {
      const { node } = await registerNode(h, tokens.writer);
      await ready(h, node as unknown as { ID: string; SecretID: string });
      nodes.push(node as unknown as { ID: string; SecretID: string });
    }
    for (const name of ['team-a', 'team-b'])
      expect((await h.call('PUT', '/v1/namespace', { token: root, body: { Name: name } })).status).toBe(200);
    for (const [namespace, id] of [
      ['team-a', 'app'],
      ['team-a', 'other'],
      ['team-b', 'secret'],
    ] as const)
      expect(
        (await h.call('PUT', `/v1/jobs?namespace=${namespace}`, { token: root, body: { Job: job(id, 4) } })).status,
      ).toBe(200);
    await new EvaluationWorker(h.scheduler).runDue();
    deploymentA = (await h.scheduler.deployments.latest('team-a', 'app'))?.ID ?? '';
    otherA = (await h.scheduler.deployments.latest('team-a', 'other'))?.ID ?? '';
    deploymentB = (await h.scheduler.deployments.latest('team-b', 'secret'))?.ID ?? '';
    expect([deploymentA, otherA, deploymentB].every((id) => id !== '')).toBe(true);
    reader = await tokenWith('namespace "team-a" { policy = "read" }');
    writerA = await tokenWith('namespace "team-a" { policy = "write" }');
  });
  afterAll(() => h.close());

  it('a read-job token, or none, promotes nothing and sets no health', async () => {
    const [alloc] = await allocsOf('team-a', 'app');
    for (const token of [reader, undefined]) {
      await refused(() =>
        as(token)('PUT', `/v1/deployment/promote/${deploymentA}`, { DeploymentID: deploymentA, All: true }),
      );
      await refused(() =>
        as(token)('POST', `/v1/deployment/allocation-health/${deploymentA}`, {
          DeploymentID: deploymentA,
          UnhealthyAllocationIDs: [alloc?.ID],
        }),
      );
    }
    expect((await h.scheduler.deployments.get(deploymentA))?.Status).toBe('running');
    expect((await h.scheduler.allocations.get(alloc?.ID ?? ''))?.DeploymentStatus?.Healthy ?? null).toBeNull();
  });

  it('team-a’s writer neither promotes nor marks team-b’s deployment', async () => {
    const [alloc] = await allocsOf('team-b', 'secret');
    await refused(() =>
      as(writerA)('PUT', `/v1/deployment/promote/${deploymentB}`, { DeploymentID: deploymentB, All: true }),
    );
    await refused(() =>
      as(writerA)('PUT', `/v1/deployment/allocation-health/${deploymentB}`, {
        DeploymentID: deploymentB,
        UnhealthyAllocationIDs: [alloc?.ID],
      }),
    );
    // A body naming team-b's deployment under team-a's path is refused before anything is read.
    await refused(
      () => as(writerA)('PUT', `/v1/deployment/promote/${deploymentA}`, { DeploymentID: deploymentB, All: true }),
      400,
      'Deployment ID does not match',
    );
    expect((await h.scheduler.deployments.get(deploymentB))?.Status).toBe('running');
  });

  it('allocation-health on its own deployment refuses another namespace’s or another deployment’s allocations', async () => {
    const [mine] = await allocsOf('team-a', 'app');
    const [theirs] = await allocsOf('team-b', 'secret');
    const [sibling] = await allocsOf('team-a', 'other');
    const path = `/v1/deployment/allocation-health/${deploymentA}`;
    await refused(
      () =>
        as(writerA)('PUT', path, {
          DeploymentID: deploymentA,
          HealthyAllocationIDs: [mine?.ID],
          UnhealthyAllocationIDs: [theirs?.ID],
        }),
      400,
      `unknown alloc "${theirs?.ID}"`,
    );
    await refused(
      () => as(writerA)('PUT', path, { DeploymentID: deploymentA, UnhealthyAllocationIDs: [sibling?.ID] }),
      400,
      `unknown alloc "${sibling?.ID}"`,
    );
    // Nothing of the mixed request was written: not even the valid half.
    expect((await h.scheduler.allocations.get(mine?.ID ?? ''))?.DeploymentStatus?.Healthy ?? null).toBeNull();
    expect((await h.scheduler.allocations.get(theirs?.ID ?? ''))?.DeploymentStatus?.Healthy ?? null).toBeNull();
    expect((await h.scheduler.deployments.get(deploymentB))?.TaskGroups.web?.UnhealthyAllocs).toBe(0);
  });

  it('an allocation of an older deployment of the same job is not part of the new one', async () => {
    const changed = job('app', 4);
    for (const group of changed.TaskGroups) for (const task of group.Tasks) task.Config.command = 'false';
    expect((await h.call('PUT', '/v1/jobs?namespace=team-a', { token: root, body: { Job: changed } })).status).toBe(
      200,
    );
    await new EvaluationWorker(h.scheduler).runDue();
    const newer = (await h.scheduler.deployments.latest('team-a', 'app'))?.ID ?? '';
    const old = (await allocsOf('team-a', 'app')).find((alloc) => alloc.DeploymentID === deploymentA);
    if (newer === deploymentA || !old) return expect.unreachable('a newer deployment and an old allocation expected');
    await refused(
      () =>
        as(writerA)('PUT', `/v1/deployment/allocation-health/${newer}`, {
          DeploymentID: newer,
          HealthyAllocationIDs: [old.ID],
        }),
      400,
      `alloc "${old.ID}" is not part of deployment "${newer}"`,
    );
  });

  it('a node reports no health for an allocation placed on another node', async () => {
    const [first, second] = nodes;
    const theirs = (await allocsOf('team-b', 'secret')).find((alloc) => alloc.NodeID === second?.ID);
    const mine = (await allocsOf('team-b', 'secret')).find((alloc) => alloc.NodeID === first?.ID);
    if (!theirs || !mine || !first) return expect.unreachable('an allocation on each node expected');
    for (const allocs of [[theirs], [mine, theirs]])
      await refused(() =>
        h.call('PUT', `/v1/client/node/${first.ID}/allocations`, {
          token: first.SecretID,
          body: {
            Allocs: allocs.map((alloc) => ({
              ID: alloc.ID,
              ClientStatus: 'running',
              DeploymentStatus: { Healthy: false },
            })),
          },
        }),
      );
    expect((await h.scheduler.deployments.get(deploymentB))?.TaskGroups.web).toMatchObject({
      HealthyAllocs: 0,
      UnhealthyAllocs: 0,
    });
  });
  it('unblock (a no-op on a single region) answers Nomad’s empty response to a granted caller, and refuses the rest', async () => {
    // On team-a's other job's deployment (the app's is superseded by the tests above). Granted: team-a's writer (submit-job), or a token holding only unblock-deployment. Nothing is written either way.
    const unblocker = await tokenWith('namespace "team-a" { capabilities = ["unblock-deployment"] }');
    for (const token of [writerA, unblocker]) {
      const before = await h.scheduler.state.currentIndex();
      const out = await as(token)('PUT', `/v1/deployment/unblock/${otherA}`, { DeploymentID: otherA });
      expect(out.status).toBe(200);
      expect(out.body).toEqual({
        EvalID: '',
        EvalCreateIndex: 0,
        DeploymentModifyIndex: 0,
        RevertedJobVersion: null,
        Index: 0,
      });
      expect(out.headers.get('X-Nomad-Index')).toBe('1');
      expect(await h.scheduler.state.currentIndex()).toBe(before);
    }
    // Refused: a read-job token or none, team-a's writer on team-b's deployment, a body naming another deployment.
    for (const token of [reader, undefined])
      await refused(() => as(token)('PUT', `/v1/deployment/unblock/${otherA}`, { DeploymentID: otherA }));
    await refused(() => as(writerA)('POST', `/v1/deployment/unblock/${deploymentB}`, { DeploymentID: deploymentB }));
    await refused(
      () => as(writerA)('PUT', `/v1/deployment/unblock/${otherA}`, { DeploymentID: deploymentB }),
      400,
      'Deployment ID does not match',
    );
    await refused(
      () => as(writerA)('PUT', `/v1/deployment/unblock/${otherA}`, {}),
      400,
      'DeploymentID must be specified',
    );
    expect((await h.scheduler.deployments.get(deploymentB))?.Status).toBe('running');
    // A terminal deployment: Nomad's ErrDeploymentTerminalNoUnblock, as a 400.
    expect((await as(root)('PUT', `/v1/deployment/fail/${otherA}`, { DeploymentID: otherA })).status).toBe(200);
    await refused(
      () => as(writerA)('PUT', `/v1/deployment/unblock/${otherA}`, { DeploymentID: otherA }),
      400,
      "can't unblock terminal deployment",
    );
  });
});
