/**
 * A deployment's end sets its job's status in the same write (Nomad's `UpdateDeploymentStatus`: the evaluation it
 * creates runs `setJobStatuses` after the deployment's change). A service job whose only allocation has ended stays
 * `running` while its deployment is active (Nomad's getJobStatus); failed by the route or by the watcher's progress
 * deadline, the job is `pending` (its new evaluation waits) in that write, with a Job event of the write's type.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, ready, reportAllocs, withReadyNode } from '../support/cluster-allocations.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const updatingJob = (id: string, update: Record<string, unknown>) =>
  groupJob(id, { command: 'sleep', cpu: 20, memoryMB: 16, group: { Update: update } });

describe('a deployment’s end sets its job’s status in the same write (in memory)', () => {
  let h: SchedulerService;
  let root: string;
  let node: { ID: string; SecretID: string };
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));

  /** A job placed under an active deployment whose one allocation then completed: `running` by its deployment. */
  async function endedUnderDeployment(id: string, update: Record<string, unknown>): Promise<string> {
    const out = await mgmt('PUT', '/v1/jobs', { Job: updatingJob(id, update) });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const [alloc] = await h.scheduler.allocations.ofJob('default', id);
    if (!alloc) throw new Error('not placed');
    await reportAllocs(h, node, [{ ID: alloc.ID, ClientStatus: 'complete' }]);
    const deployment = await h.scheduler.deployments.latest('default', id);
    expect(deployment?.Status).toBe('running');
    expect((await mgmt('GET', `/v1/job/${id}`)).body.Status).toBe('running');
    return deployment?.ID ?? '';
  }

  /** The events of the write that changed the deployment to `status`. */
  async function writeOf(deploymentId: string, status: string, after: number) {
    const batches = await h.scheduler.state.eventsAfter(after);
    const batch = batches.find((candidate) =>
      candidate.events.some(
        (event) =>
          event.Topic === 'Deployment' &&
          event.Key === deploymentId &&
          (event.Payload.Deployment as { Status: string }).Status === status,
      ),
    );
    if (!batch) throw new Error(`no write made the deployment ${status}`);
    return batch;
  }

  beforeAll(async () => {
    ({ h, root, node, worker } = await withReadyNode(await startSchedulerInMemory()));
  });
  afterAll(() => h.close());

  it('failed by the route: the job leaves running in the fail’s write, with its Job event', async () => {
    const id = await endedUnderDeployment('failed-by-hand', { MaxParallel: 1 });
    const before = await h.scheduler.state.currentIndex();
    const failed = await mgmt('PUT', `/v1/deployment/fail/${id}`);
    expect(failed.status).toBe(200);
    const job = (await mgmt('GET', '/v1/job/failed-by-hand')).body;
    // Its new evaluation waits: pending, as Nomad's getJobStatus.
    expect(job.Status).toBe('pending');
    expect(job.ModifyIndex).toBe(failed.body.Index);
    const write = await writeOf(id, 'failed', before);
    expect(write.index).toBe(failed.body.Index);
    expect(write.events.map((event) => [event.Topic, event.Type])).toEqual([
      ['Deployment', 'DeploymentStatusUpdate'],
      ['Evaluation', 'DeploymentStatusUpdate'],
      ['Job', 'DeploymentStatusUpdate'],
    ]);
    expect(write.events.at(-1)?.Payload.Job).toMatchObject({ ID: 'failed-by-hand', Status: 'pending' });

    // Its evaluation run, nothing left to run: dead.
    await worker.runDue();
    expect((await mgmt('GET', '/v1/job/failed-by-hand')).body.Status).toBe('dead');
  });

  it('failed by the watcher at the progress deadline: the job’s status in the same write', async () => {
    const id = await endedUnderDeployment('failed-by-deadline', {
      MaxParallel: 1,
      HealthyDeadline: 60e9,
      ProgressDeadline: 120e9,
    });
    const before = await h.scheduler.state.currentIndex();
    h.clock.advance(121);
    await ready(h, node);
    await sweepScheduler(h.core);
    expect(await h.scheduler.deployments.get(id)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Failed due to progress deadline',
    });
    const write = await writeOf(id, 'failed', before);
    const jobEvent = write.events.find((event) => event.Topic === 'Job');
    expect(jobEvent).toMatchObject({ Type: 'DeploymentStatusUpdate', Key: 'failed-by-deadline' });
    expect(jobEvent?.Payload.Job).toMatchObject({ Status: 'pending', ModifyIndex: write.index });
  });

  it('paused, the job keeps its status (no evaluation, as Nomad)', async () => {
    const id = await endedUnderDeployment('paused', { MaxParallel: 1 });
    const paused = await mgmt('PUT', `/v1/deployment/pause/${id}`, { DeploymentID: id, Pause: true });
    expect(paused.status).toBe(200);
    expect((await mgmt('GET', '/v1/job/paused')).body.Status).toBe('running');
    // Resumed: its evaluation is created, and the job's status follows in that write.
    const resumed = await mgmt('PUT', `/v1/deployment/pause/${id}`, { DeploymentID: id, Pause: false });
    expect(resumed.status).toBe(200);
    const job = (await mgmt('GET', '/v1/job/paused')).body;
    // Still running by its active deployment.
    expect(job.Status).toBe('running');
  });
});
