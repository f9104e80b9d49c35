/**
 * Deployments that finish (Nomad's deployment watcher and `Deployment.Promote`/`SetAllocHealth`): a node's health
 * verdicts count in the deployment in the report's own write, the watcher asks for the next batch, fails on an
 * unhealthy allocation or a missed progress deadline (reverting under `auto_revert`), promotes under `auto_promote`,
 * and the reconciler marks a finished deployment successful and its job version stable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAllocation } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, reportAllocs, withReadyNode } from '../support/cluster-allocations.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/** A service job of group `web` running `command` under the update block `update`. */
const updatingJob = (id: string, count: number, command: string, update: Record<string, unknown>) =>
  groupJob(id, { count, command, cpu: 20, memoryMB: 16, group: { Update: update } });

describe('deployments finish: health, the watcher, promote and allocation-health (in memory)', () => {
  let h: SchedulerService;
  let root: string;
  let node: { ID: string; SecretID: string };
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));

  /** The node reports these allocations running with this health. */
  function report(allocs: StoredAllocation[], healthy: boolean | null): Promise<number> {
    return reportAllocs(
      h,
      node,
      allocs.map((alloc) => ({ ID: alloc.ID, ClientStatus: 'running', DeploymentStatus: { Healthy: healthy } })),
    );
  }

  /** The job's live allocations (told to run) of `version`, or of every version. */
  async function running(jobId: string, version?: number): Promise<StoredAllocation[]> {
    return (await h.scheduler.allocations.ofJob('default', jobId)).filter(
      (alloc) => alloc.DesiredStatus === 'run' && (version === undefined || alloc.JobVersion === version),
    );
  }

  async function submit(job: Record<string, unknown>): Promise<void> {
    const out = await mgmt('PUT', '/v1/jobs', { Job: job });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
  }

  /** Reports every live allocation of `version` healthy and runs what the watcher asked, until none is left. */
  async function rollOut(jobId: string, version: number): Promise<void> {
    for (let round = 0; round < 10; round++) {
      const fresh = (await running(jobId, version)).filter((alloc) => alloc.DeploymentStatus?.Healthy !== true);
      if (fresh.length === 0) return;
      await report(fresh, true);
      await worker.runDue();
    }
    throw new Error('the rollout did not finish in 10 rounds');
  }

  const eventsSince = async (index: number) =>
    (await h.scheduler.state.eventsAfter(index)).flatMap((batch) => batch.events);

  beforeAll(async () => {
    ({ h, root, node, worker } = await withReadyNode(await startSchedulerInMemory()));
  });
  afterAll(() => h.close());

  it('a health report counts in the deployment in its own write, with a Deployment event of type AllocationUpdated', async () => {
    await submit(updatingJob('count', 2, 'python3', { MaxParallel: 1 }));
    const deployment = await h.scheduler.deployments.latest('default', 'count');
    if (!deployment) throw new Error('no deployment');
    const [first, second] = await running('count');
    if (!first || !second) throw new Error('two allocations expected');
    const before = await h.scheduler.state.currentIndex();
    const index = await report([first], true);
    const counted = await h.scheduler.deployments.get(deployment.ID);
    expect(counted?.TaskGroups.web).toMatchObject({ HealthyAllocs: 1, UnhealthyAllocs: 0, PlacedAllocs: 2 });
    expect(counted?.ModifyIndex).toBe(index);
    const atReport = (await eventsSince(before)).filter((event) => event.Index === index);
    expect(atReport.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['Allocation', 'AllocationUpdated', first.ID],
      ['Deployment', 'AllocationUpdated', deployment.ID],
    ]);
    expect(atReport[1]?.Payload).toMatchObject({ Deployment: { TaskGroups: { web: { HealthyAllocs: 1 } } } });
    // The same verdict again changes nothing; an unhealthy one counts once.
    const settled = await h.scheduler.state.currentIndex();
    expect(await report([first], true)).toBe(index);
    expect(await h.scheduler.state.currentIndex()).toBe(settled);
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web?.HealthyAllocs).toBe(1);
    await report([second], false);
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web).toMatchObject({
      HealthyAllocs: 1,
      UnhealthyAllocs: 1,
    });
    // Healthy turned unhealthy moves from one count to the other.
    await report([first], false);
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web).toMatchObject({
      HealthyAllocs: 0,
      UnhealthyAllocs: 2,
    });
  });

  it('the watcher asks for the next batch as allocations turn healthy; the rollout ends successful and stable', async () => {
    await submit(updatingJob('roll', 2, 'python3', { MaxParallel: 1 }));
    const first = await h.scheduler.deployments.latest('default', 'roll');
    if (!first) throw new Error('no deployment');
    const before = await h.scheduler.state.currentIndex();
    const reported = await report(await running('roll', 0), true);
    // The watcher's evaluation, at the next index, for this deployment.
    const asked = (await h.scheduler.evaluations.ofJob('default', 'roll')).find(
      (evaluation) => evaluation.TriggeredBy === 'deployment-watcher',
    );
    expect(asked).toMatchObject({ Status: 'pending', DeploymentID: first.ID, CreateIndex: reported + 1 });
    const evaluationEvents = (await eventsSince(before)).filter((event) => event.Topic === 'Evaluation');
    expect(evaluationEvents.map((event) => [event.Type, event.Key])).toEqual([
      ['AllocationUpdateDesiredStatus', asked?.ID],
    ]);
    // A check run again asks for nothing more.
    expect(await h.scheduler.deploymentWatcher.check(first.ID)).toBeUndefined();
    await worker.runDue();
    expect(await h.scheduler.deployments.get(first.ID)).toMatchObject({
      Status: 'successful',
      StatusDescription: 'Deployment completed successfully',
    });
    const versions = await mgmt('GET', '/v1/job/roll/versions');
    expect(
      versions.body.Versions.map((job: { Version: number; Stable: boolean }) => [job.Version, job.Stable]),
    ).toEqual([[0, true]]);
    expect((await mgmt('GET', '/v1/job/roll')).body.Stable).toBe(true);

    // A new version rolls one at a time, each batch after the last is healthy.
    await submit(updatingJob('roll', 2, 'python3.12', { MaxParallel: 1 }));
    const second = await h.scheduler.deployments.latest('default', 'roll');
    expect(second).toMatchObject({ JobVersion: 1, Status: 'running' });
    expect(await running('roll', 1)).toHaveLength(1);
    await rollOut('roll', 1);
    expect(await running('roll', 1)).toHaveLength(2);
    expect(await running('roll', 0)).toHaveLength(0);
    expect(await h.scheduler.deployments.get(second?.ID ?? '')).toMatchObject({
      Status: 'successful',
      TaskGroups: { web: expect.objectContaining({ HealthyAllocs: 2, PlacedAllocs: 2 }) },
    });
    const stable = (await mgmt('GET', '/v1/job/roll/versions')).body.Versions.map(
      (job: { Version: number; Stable: boolean }) => [job.Version, job.Stable],
    );
    expect(stable).toEqual([
      [1, true],
      [0, true],
    ]);
  });

  it('promote: refused while a canary is not healthy, then promotes with its events and the rollout finishes', async () => {
    const update = { MaxParallel: 1, Canary: 1, AutoPromote: false };
    await submit(updatingJob('canary', 2, 'python3', update));
    await rollOut('canary', 0);
    await submit(updatingJob('canary', 2, 'python3.12', update));
    const deployment = await h.scheduler.deployments.latest('default', 'canary');
    if (!deployment) throw new Error('no deployment');
    expect(deployment).toMatchObject({
      JobVersion: 1,
      StatusDescription: 'Deployment is running but requires manual promotion',
      TaskGroups: { web: expect.objectContaining({ DesiredCanaries: 1, Promoted: false }) },
    });
    const [canary] = await running('canary', 1);
    expect(canary?.DeploymentStatus?.Canary).toBe(true);

    const index = await h.scheduler.state.currentIndex();
    const early = await mgmt('PUT', `/v1/deployment/promote/${deployment.ID}`, {
      DeploymentID: deployment.ID,
      All: true,
    });
    expect([early.status, early.text]).toEqual([
      400,
      '1 error occurred:\n\t* Task group "web" has 0/1 healthy allocations\n\n',
    ]);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    const mismatch = await mgmt('PUT', `/v1/deployment/promote/${deployment.ID}`, { DeploymentID: 'other', All: true });
    expect([mismatch.status, mismatch.text]).toEqual([400, 'Deployment ID does not match']);
    const missingId = await mgmt('PUT', `/v1/deployment/promote/${deployment.ID}`, { All: true });
    expect([missingId.status, missingId.text]).toEqual([400, 'DeploymentID must be specified']);

    // Healthy, the canary waits for a manual promotion: the watcher does not promote it.
    await report([canary as StoredAllocation], true);
    await worker.runDue();
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web?.Promoted).toBe(false);
    expect(await running('canary', 0)).toHaveLength(2);

    const before = await h.scheduler.state.currentIndex();
    const promoted = await mgmt('POST', `/v1/deployment/promote/${deployment.ID}`, {
      DeploymentID: deployment.ID,
      Groups: ['web'],
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({
      EvalID: expect.any(String),
      EvalCreateIndex: promoted.body.Index,
      DeploymentModifyIndex: promoted.body.Index,
      RevertedJobVersion: null,
      Index: promoted.body.Index,
    });
    expect(promoted.headers.get('x-nomad-index')).toBe(String(promoted.body.Index));
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      StatusDescription: 'Deployment is running',
      TaskGroups: { web: expect.objectContaining({ Promoted: true }) },
    });
    expect((await h.scheduler.allocations.get(canary?.ID ?? ''))?.DeploymentStatus).toMatchObject({
      Canary: false,
      Healthy: true,
    });
    expect(await h.scheduler.evaluations.get(promoted.body.EvalID)).toMatchObject({
      TriggeredBy: 'deployment-watcher',
      DeploymentID: deployment.ID,
      Status: 'pending',
    });
    const events = (await eventsSince(before)).filter((event) => event.Index === promoted.body.Index);
    expect(events.map((event) => [event.Topic, event.Type])).toEqual([
      ['Deployment', 'DeploymentPromotion'],
      ['Evaluation', 'DeploymentPromotion'],
      ['Allocation', 'DeploymentPromotion'],
    ]);

    await worker.runDue();
    await rollOut('canary', 1);
    expect(await running('canary', 1)).toHaveLength(2);
    expect(await running('canary', 0)).toHaveLength(0);
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('successful');
    const terminal = await mgmt('PUT', `/v1/deployment/promote/${deployment.ID}`, {
      DeploymentID: deployment.ID,
      All: true,
    });
    expect([terminal.status, terminal.text]).toEqual([400, "can't promote terminal deployment"]);
  });

  it('auto_promote promotes once every canary is healthy', async () => {
    const update = { MaxParallel: 1, Canary: 1, AutoPromote: true };
    await submit(updatingJob('auto', 1, 'python3', update));
    await rollOut('auto', 0);
    await submit(updatingJob('auto', 1, 'python3.12', update));
    const deployment = await h.scheduler.deployments.latest('default', 'auto');
    expect(deployment?.StatusDescription).toBe('Deployment is running pending automatic promotion');
    const before = await h.scheduler.state.currentIndex();
    await report(await running('auto', 1), true);
    const promoted = await h.scheduler.deployments.get(deployment?.ID ?? '');
    expect(promoted).toMatchObject({
      StatusDescription: 'Deployment is running',
      TaskGroups: { web: expect.objectContaining({ Promoted: true }) },
    });
    expect((await eventsSince(before)).filter((event) => event.Type === 'DeploymentPromotion')).not.toHaveLength(0);
    await worker.runDue();
    await rollOut('auto', 1);
    expect((await h.scheduler.deployments.get(deployment?.ID ?? ''))?.Status).toBe('successful');
    expect(await running('auto', 0)).toHaveLength(0);
  });

  it('an unhealthy allocation fails the deployment; under auto_revert the latest stable version is registered again', async () => {
    // No progress deadline: the first unhealthy allocation fails the deployment (Nomad's shouldFailEarly).
    const update = { MaxParallel: 1, AutoRevert: true, ProgressDeadline: 0 };
    await submit(updatingJob('revert', 1, 'python3', update));
    await rollOut('revert', 0);
    await submit(updatingJob('revert', 1, 'python3.12', update));
    const deployment = await h.scheduler.deployments.latest('default', 'revert');
    if (!deployment) throw new Error('no deployment');
    const before = await h.scheduler.state.currentIndex();
    const reported = await report(await running('revert', 1), false);
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to unhealthy allocations - rolling back to job version 0',
      ModifyIndex: reported + 1,
    });
    const job = (await mgmt('GET', '/v1/job/revert')).body;
    expect([job.Version, job.TaskGroups[0].Tasks[0].Config.command]).toEqual([2, 'python3']);
    const failedAt = (await eventsSince(before)).filter((event) => event.Index === reported + 1);
    expect(failedAt.map((event) => [event.Topic, event.Type])).toEqual([
      ['Deployment', 'DeploymentStatusUpdate'],
      ['Job', 'DeploymentStatusUpdate'],
      ['Evaluation', 'DeploymentStatusUpdate'],
    ]);
    // The reverted version rolls out as any other.
    await worker.runDue();
    await rollOut('revert', 2);
    expect((await running('revert')).map((alloc) => alloc.JobVersion)).toEqual([2]);

    // Without auto_revert: failed, nothing registered.
    const plain = { MaxParallel: 1, ProgressDeadline: 0 };
    await submit(updatingJob('plain', 1, 'python3', plain));
    await rollOut('plain', 0);
    await submit(updatingJob('plain', 1, 'python3.12', plain));
    const failing = await h.scheduler.deployments.latest('default', 'plain');
    await report(await running('plain', 1), false);
    expect(await h.scheduler.deployments.get(failing?.ID ?? '')).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to unhealthy allocations',
    });
    expect((await mgmt('GET', '/v1/job/plain')).body.Version).toBe(1);
  });

  it('auto_revert says so when there is no stable version, or when the stable one is the current spec', async () => {
    const update = { MaxParallel: 1, AutoRevert: true, ProgressDeadline: 0 };
    await submit(updatingJob('nostable', 1, 'python3', update));
    const first = await h.scheduler.deployments.latest('default', 'nostable');
    await report(await running('nostable', 0), false);
    expect(await h.scheduler.deployments.get(first?.ID ?? '')).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to unhealthy allocations - no stable job version to auto revert to',
    });
    expect((await mgmt('GET', '/v1/job/nostable')).body.Version).toBe(0);

    await submit(updatingJob('noop', 1, 'python3', update));
    await rollOut('noop', 0);
    await submit(updatingJob('noop', 1, 'python3.12', update));
    await report(await running('noop', 1), false);
    expect((await mgmt('GET', '/v1/job/noop')).body.Version).toBe(2);
    await worker.runDue();
    // Version 2 is version 0 registered again, Stable as its copy (Nomad's upsertJobImpl keeps the flag); it fails
    // too, and reverting to it again would loop, so the watcher does not.
    expect((await mgmt('GET', '/v1/job/noop')).body.Stable).toBe(true);
    const reverted = await h.scheduler.deployments.latest('default', 'noop');
    expect(reverted?.JobVersion).toBe(2);
    await report(await running('noop', 2), false);
    expect(await h.scheduler.deployments.get(reverted?.ID ?? '')).toMatchObject({
      Status: 'failed',
      StatusDescription:
        'Failed due to unhealthy allocations - not rolling back to stable job version 2 as current job has same specification',
    });
    expect((await mgmt('GET', '/v1/job/noop')).body.Version).toBe(2);
  });

  it('an unhealthy allocation that may be rescheduled is marked to be replaced instead of failing the deployment', async () => {
    await submit(updatingJob('retry', 1, 'python3', { MaxParallel: 1 }));
    const deployment = await h.scheduler.deployments.latest('default', 'retry');
    const [alloc] = await running('retry', 0);
    await report([alloc as StoredAllocation], false);
    expect((await h.scheduler.deployments.get(deployment?.ID ?? ''))?.Status).toBe('running');
    expect((await h.scheduler.allocations.get(alloc?.ID ?? ''))?.DesiredTransition.Reschedule).toBe(true);
  });

  it('allocation-health sets health by hand, refuses allocations not in the deployment, and fails on unhealthy', async () => {
    await submit(updatingJob('manual', 2, 'python3', { MaxParallel: 1 }));
    const deployment = await h.scheduler.deployments.latest('default', 'manual');
    if (!deployment) throw new Error('no deployment');
    const [first, second] = await running('manual');
    const path = `/v1/deployment/allocation-health/${deployment.ID}`;
    const before = await h.scheduler.state.currentIndex();
    const marked = await mgmt('PUT', path, { DeploymentID: deployment.ID, HealthyAllocationIDs: [first?.ID] });
    expect(marked.status).toBe(200);
    expect(marked.body).toMatchObject({ RevertedJobVersion: null, EvalCreateIndex: marked.body.Index });
    expect((await h.scheduler.allocations.get(first?.ID ?? ''))?.DeploymentStatus?.Healthy).toBe(true);
    expect((await h.scheduler.deployments.get(deployment.ID))?.TaskGroups.web?.HealthyAllocs).toBe(1);
    const events = (await eventsSince(before)).filter((event) => event.Index === marked.body.Index);
    expect(events.map((event) => [event.Topic, event.Type])).toEqual([
      ['Allocation', 'DeploymentAllocHealth'],
      ['Deployment', 'DeploymentAllocHealth'],
      ['Evaluation', 'DeploymentAllocHealth'],
    ]);

    const index = await h.scheduler.state.currentIndex();
    const other = (await running('count'))[0]?.ID;
    const foreign = await mgmt('PUT', path, { DeploymentID: deployment.ID, HealthyAllocationIDs: [first?.ID, other] });
    expect([foreign.status, foreign.text]).toEqual([400, `unknown alloc "${other}"`]);
    const none = await mgmt('PUT', path, { DeploymentID: deployment.ID });
    expect([none.status, none.text]).toEqual([400, 'must specify at least one healthy/unhealthy allocation ID']);
    expect(await h.scheduler.state.currentIndex()).toBe(index);

    const failed = await mgmt('POST', path, { DeploymentID: deployment.ID, UnhealthyAllocationIDs: [second?.ID] });
    expect(failed.status).toBe(200);
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to unhealthy allocations',
      TaskGroups: { web: expect.objectContaining({ HealthyAllocs: 1, UnhealthyAllocs: 1 }) },
    });
    const terminal = await mgmt('PUT', path, { DeploymentID: deployment.ID, HealthyAllocationIDs: [second?.ID] });
    expect([terminal.status, terminal.text]).toEqual([
      400,
      "can't set health of allocations for a terminal deployment",
    ]);
  });

  it('fail under auto_revert answers the reverted version; a service job whose update block is empty gets no deployment', async () => {
    const update = { MaxParallel: 1, AutoRevert: true };
    await submit(updatingJob('failrevert', 1, 'python3', update));
    await rollOut('failrevert', 0);
    await submit(updatingJob('failrevert', 1, 'python3.12', update));
    const deployment = await h.scheduler.deployments.latest('default', 'failrevert');
    const failed = await mgmt('PUT', `/v1/deployment/fail/${deployment?.ID}`);
    expect(failed.status).toBe(200);
    expect(failed.body.RevertedJobVersion).toBe(2);
    expect((await h.scheduler.deployments.get(deployment?.ID ?? ''))?.StatusDescription).toBe(
      'Deployment marked as failed - rolling back to job version 0',
    );

    await submit(updatingJob('noupdate', 2, 'python3', { MaxParallel: 0 }));
    expect(await running('noupdate')).toHaveLength(2);
    expect((await mgmt('GET', '/v1/job/noupdate/deployment')).body).toBeNull();
    await submit(updatingJob('noupdate', 2, 'python3.12', { MaxParallel: 0 }));
    expect(await running('noupdate', 1)).toHaveLength(2);
    expect((await mgmt('GET', '/v1/job/noupdate/deployments')).body).toEqual([]);
  });

  // Last: moving the clock past the node's heartbeat TTL takes the node down.
  it('a missed progress deadline fails the deployment in the sweep', async () => {
    const update = { MaxParallel: 1, MinHealthyTime: 1e9, HealthyDeadline: 30e9, ProgressDeadline: 60e9 };
    await submit(updatingJob('late', 1, 'python3', update));
    const deployment = await h.scheduler.deployments.latest('default', 'late');
    if (!deployment) throw new Error('no deployment');
    const startedBy = Date.parse(deployment.TaskGroups.web?.RequireProgressBy ?? '');
    expect(startedBy).toBe(h.clock.now() + 60_000);
    await sweepScheduler(h.core);
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('running');
    h.clock.advance(61_000);
    await sweepScheduler(h.core);
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to progress deadline',
    });
  });
});
