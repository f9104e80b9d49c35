/**
 * The deployment watcher's queue (`cluster/deployments/store.ts` `put`, `watcher.ts` `checkDue`), on DynamoDB Local:
 * the sweep checks only the deployments due on the table's `due` index. A deployment is due now after a write its own
 * check did not follow (a placement, a node's report whose process died before checking), at its progress deadline
 * once checked, never while nothing but a write can change it, and leaves the index when it ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAllocation } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { Deployments, deploymentKind, neverDue } from '../../packages/core/src/scheduler/cluster/deployments/store.ts';
import { PlanApplier } from '../../packages/core/src/scheduler/cluster/evaluations/plan-apply.ts';
import { DEPLOYMENT_DUE } from '../../packages/core/src/scheduler/keys.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { dueItems, dueKey, shardedQueue } from '../../packages/core/src/storage/due.ts';
import { nodeVersions, ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const update = { MaxParallel: 1, MinHealthyTime: 1e9, HealthyDeadline: 30e9, ProgressDeadline: 600e9 };

/** A service job of group `web` under `update`; `reschedule`: its group's policy (Nomad's service default when null). */
const rollingJob = (id: string, command: string, reschedule: Record<string, unknown> | null = null) =>
  webJob(id, {
    TaskGroups: [
      {
        Name: 'web',
        Count: 1,
        Update: update,
        ...(reschedule ? { ReschedulePolicy: reschedule } : {}),
        Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command }, Resources: { CPU: 20, MemoryMB: 16 } }],
      },
    ],
  });

describe('the deployment watcher reads only the deployments due (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let node: { ID: string; SecretID: string };
  let worker: EvaluationWorker;
  const seconds = () => Math.floor(h.clock.now() / 1000);

  /** Moves the clock to `ms`, and the node heartbeats there (so no sweep takes it down). */
  async function moveTo(ms: number) {
    h.clock.advance((ms - h.clock.now()) / 1000);
    await ready(h, node);
  }

  /** The deployment's stored item, raw: its place on the `due` index. */
  const rawItem = async (id: string) => {
    const key = Deployments.key(id);
    return h.core.store.get(key.pk, key.sk);
  };

  /** The IDs the watcher's queue holds due now (what a sweep reads). */
  const dueNow = async () =>
    (await dueItems({ store: h.core.store, clock: h.clock }, DEPLOYMENT_DUE, 100)).map((item) => item.sk);

  async function submit(job: Record<string, unknown>) {
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const deployment = await h.scheduler.deployments.latest('default', job.ID as string);
    if (!deployment) throw new Error('no deployment');
    return deployment;
  }

  const live = async (jobId: string): Promise<StoredAllocation[]> =>
    (await h.scheduler.allocations.ofJob('default', jobId)).filter((alloc) => alloc.DesiredStatus === 'run');

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    node = (await registerNode(h, tokens.writer)).node as unknown as { ID: string; SecretID: string };
    await ready(h, node);
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  it('a placed deployment is due now; checked, it is due at its progress deadline, and fails there', async () => {
    // Earlier sweeps leave nothing due (the first also runs the backstop listing).
    await sweepScheduler(h.core, { gc: false });
    const deployment = await submit(rollingJob('deadline', 'python3'));
    const deadline = Date.parse(deployment.TaskGroups.web?.RequireProgressBy ?? '');
    expect(deadline).toBe(h.clock.now() + 600_000);
    // The placement's write put it on the queue, due now, on its shard.
    expect(await rawItem(deployment.ID)).toMatchObject({
      duePk: shardedQueue(DEPLOYMENT_DUE, deployment.ID),
      dueSk: dueKey(seconds(), deployment.ID),
    });
    expect(await dueNow()).toEqual([deployment.ID]);

    // The sweep checks it (nothing to decide yet) and moves it to its deadline; the API object is unchanged.
    const checked = await h.scheduler.deploymentWatcher.checkDue();
    expect([...checked.entries()]).toEqual([[deployment.ID, undefined]]);
    expect((await rawItem(deployment.ID))?.dueSk).toBe(dueKey(Math.ceil(deadline / 1000), deployment.ID));
    expect(await h.scheduler.deployments.get(deployment.ID)).toEqual(deployment);
    const read = await h.call('GET', `/v1/deployment/${deployment.ID}`, { token: root });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('dueSk');
    expect(read.body).not.toHaveProperty('duePk');

    // A second before the deadline nothing is due: the sweep reads no deployment.
    await moveTo(deadline - 1000);
    expect(await dueNow()).toEqual([]);
    expect((await h.scheduler.deploymentWatcher.checkDue()).size).toBe(0);
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('running');

    // At the deadline it is due, and the sweep fails it (Nomad's progress deadline); failed, it leaves the index.
    await moveTo(deadline);
    expect(await dueNow()).toEqual([deployment.ID]);
    await sweepScheduler(h.core, { gc: false });
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to progress deadline',
    });
    const after = await rawItem(deployment.ID);
    expect(after).not.toHaveProperty('duePk');
    expect(after).not.toHaveProperty('dueSk');
    expect(await dueNow()).toEqual([]);
  });

  it('a report whose own check never ran is handled by the next sweep', async () => {
    // No reschedule left: an unhealthy allocation fails the deployment (Nomad's shouldFailEarly).
    const deployment = await submit(rollingJob('orphan', 'python3', { Attempts: 0, Unlimited: false }));
    await h.scheduler.deploymentWatcher.checkDue();
    expect((await rawItem(deployment.ID))?.dueSk).not.toBe(dueKey(seconds(), deployment.ID));
    expect(await dueNow()).toEqual([]);
    const [alloc] = await live('orphan');
    if (!alloc) throw new Error('no allocation');
    // The report's write alone, as a process that died after it and before the route's check (`client/routes.ts`).
    const reported = await h.scheduler.allocations.updateFromClient(node.ID, [
      { ID: alloc.ID, ClientStatus: 'running', DeploymentStatus: { Healthy: false } } as never,
    ]);
    expect(reported.deployments).toEqual([deployment.ID]);
    // Its write counted the verdict and put the deployment due now, in the same transaction.
    const raw = await rawItem(deployment.ID);
    expect(raw?.ModifyIndex).toBe(reported.index);
    expect(raw?.dueSk).toBe(dueKey(seconds(), deployment.ID));
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web).toMatchObject({ UnhealthyAllocs: 1 });
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('running');

    // The next sweep runs the check the report missed: unhealthy with no reschedule policy fails the deployment.
    await sweepScheduler(h.core, { gc: false });
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to unhealthy allocations',
    });
    const watcher = (await h.scheduler.evaluations.ofJob('default', 'orphan')).find(
      (evaluation) => evaluation.TriggeredBy === 'deployment-watcher',
    );
    expect(watcher).toMatchObject({ DeploymentID: deployment.ID, Status: 'pending' });
    expect(await rawItem(deployment.ID)).not.toHaveProperty('duePk');
    expect(await dueNow()).toEqual([]);
  });

  it('a report that changes no count still makes its deployment due, for the sweep to check', async () => {
    const deployment = await submit(rollingJob('pending', 'python3'));
    await h.scheduler.deploymentWatcher.checkDue();
    expect(await dueNow()).toEqual([]);
    const [alloc] = await live('pending');
    if (!alloc) throw new Error('no allocation');
    // Running, no health yet: the deployment's counts do not change, so the route checks nothing.
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'running' }] },
    });
    expect(out.status).toBe(200);
    expect((await h.scheduler.deployments.get(deployment.ID))?.ModifyIndex).toBe(deployment.ModifyIndex);
    expect(await dueNow()).toEqual([deployment.ID]);
    // The sweep checks it once, decides nothing, and moves it back to its deadline.
    expect([...(await h.scheduler.deploymentWatcher.checkDue()).entries()]).toEqual([[deployment.ID, undefined]]);
    expect(await dueNow()).toEqual([]);
    const deadline = Date.parse(deployment.TaskGroups.web?.RequireProgressBy ?? '');
    expect((await rawItem(deployment.ID))?.dueSk).toBe(dueKey(Math.ceil(deadline / 1000), deployment.ID));
  });

  it('a report whose route checked it leaves the deployment at its next deadline; healthy, it asks for an evaluation', async () => {
    const deployment = await submit(rollingJob('healthy', 'python3'));
    const [alloc] = await live('healthy');
    if (!alloc) throw new Error('no allocation');
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'running', DeploymentStatus: { Healthy: true } }] },
    });
    expect(out.status).toBe(200);
    // The route's check asked for the next evaluation and moved the deployment to its pushed deadline.
    const counted = await h.scheduler.deployments.get(deployment.ID);
    expect(counted?.TaskGroups.web).toMatchObject({ HealthyAllocs: 1 });
    const evaluations = await h.scheduler.evaluations.ofJob('default', 'healthy');
    expect(evaluations.some((evaluation) => evaluation.TriggeredBy === 'deployment-watcher')).toBe(true);
    // Every group is healthy, so no time can fail it: on the queue, never due.
    expect((await rawItem(deployment.ID))?.dueSk).toBe(dueKey(neverDue, deployment.ID));
    expect(await dueNow()).toEqual([]);
    // The evaluation marks it successful (plan apply's write): it leaves the index.
    await worker.runDue();
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('successful');
    expect(await rawItem(deployment.ID)).not.toHaveProperty('duePk');
  });

  it('a paused deployment is never due by time; resumed, it is due now; failed by hand, it leaves the index', async () => {
    const deployment = await submit(rollingJob('paused', 'python3'));
    const paused = await h.call('PUT', `/v1/deployment/pause/${deployment.ID}`, {
      token: root,
      body: { DeploymentID: deployment.ID, Pause: true },
    });
    expect(paused.status).toBe(200);
    await h.scheduler.deploymentWatcher.checkDue();
    expect((await rawItem(deployment.ID))?.dueSk).toBe(dueKey(neverDue, deployment.ID));
    // Past its deadline, paused: it is not due (others, past theirs, are), and it does not fail.
    await moveTo(h.clock.now() + 700_000);
    expect(await dueNow()).not.toContain(deployment.ID);
    await sweepScheduler(h.core, { gc: false });
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('paused');
    // Resumed: due now. The resume starts its progress deadline again, so the sweep moves it there, where it fails.
    const resumed = await h.call('PUT', `/v1/deployment/pause/${deployment.ID}`, {
      token: root,
      body: { DeploymentID: deployment.ID, Pause: false },
    });
    expect(resumed.status).toBe(200);
    expect(await dueNow()).toEqual([deployment.ID]);
    await sweepScheduler(h.core, { gc: false });
    const running = await h.scheduler.deployments.get(deployment.ID);
    expect(running?.Status).toBe('running');
    const deadline = Date.parse(running?.TaskGroups.web?.RequireProgressBy ?? '');
    expect(deadline).toBe(h.clock.now() + 600_000);
    expect((await rawItem(deployment.ID))?.dueSk).toBe(dueKey(deadline / 1000, deployment.ID));
    await moveTo(deadline);
    await sweepScheduler(h.core, { gc: false });
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to progress deadline',
    });
    expect(await rawItem(deployment.ID)).not.toHaveProperty('duePk');

    const other = await submit(rollingJob('byhand', 'python3'));
    expect(await dueNow()).toContain(other.ID);
    const failed = await h.call('PUT', `/v1/deployment/fail/${other.ID}`, {
      token: root,
      body: { DeploymentID: other.ID },
    });
    expect(failed.status).toBe(200);
    expect(await h.scheduler.deployments.get(other.ID)).toMatchObject({ Status: 'failed' });
    expect(await rawItem(other.ID)).not.toHaveProperty('duePk');
    expect(await dueNow()).not.toContain(other.ID);
  });

  it("an allocation a plan stops makes its deployment due now, in the plan's write", async () => {
    const deployment = await submit(rollingJob('stopped', 'python3'));
    await h.scheduler.deploymentWatcher.checkDue();
    expect(await dueNow()).not.toContain(deployment.ID);
    const [alloc] = await live('stopped');
    if (!alloc) throw new Error('no allocation');
    const applier = new PlanApplier(
      h.scheduler.state,
      h.scheduler.nodes,
      h.scheduler.allocations,
      h.scheduler.deployments,
    );
    const applied = await applier.apply({
      place: [],
      update: [{ nodeId: node.ID, id: alloc.ID, change: (current) => ({ ...current, DesiredStatus: 'stop' }) }],
      nodeVersions: await nodeVersions(h, [node.ID]),
    });
    expect(applied.updated.map((changed) => changed.ID)).toEqual([alloc.ID]);
    expect((await h.scheduler.allocations.get(alloc.ID))?.DesiredStatus).toBe('stop');
    // The deployment itself is unchanged but due now; the sweep checks it and moves it back to its deadline.
    expect(await h.scheduler.deployments.get(deployment.ID)).toEqual(deployment);
    expect(await dueNow()).toContain(deployment.ID);
    const checked = await h.scheduler.deploymentWatcher.checkDue();
    expect(checked.has(deployment.ID)).toBe(true);
    expect(await dueNow()).not.toContain(deployment.ID);
  });

  it('an active deployment written before the queue existed is put on it by the periodic backstop', async () => {
    const deployment = await submit(rollingJob('legacy', 'python3'));
    // As stored before this change: signed, with no place on the due index.
    const key = Deployments.key(deployment.ID);
    await h.core.store.put(h.core.store.signed(deploymentKind, { ...key, ...deployment }));
    expect(await rawItem(deployment.ID)).not.toHaveProperty('duePk');
    expect(await dueNow()).not.toContain(deployment.ID);
    expect(await h.scheduler.deployments.queueUnqueued()).toBe(1);
    expect(await dueNow()).toContain(deployment.ID);
    expect(await h.scheduler.deployments.get(deployment.ID)).toEqual(deployment);
    // Once on the queue, the backstop leaves it.
    expect(await h.scheduler.deployments.queueUnqueued()).toBe(0);
  });
});
