import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, rollingJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('deployments: the worker stores them and the routes answer (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let worker: EvaluationWorker;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  it('a new job and then its changed spec each create a deployment; their placements carry its ID', async () => {
    const before = await h.scheduler.state.currentIndex();
    const first = await mgmt('PUT', '/v1/jobs', { Job: rollingJob('roll', 2, 'python3') });
    expect(first.status).toBe(200);
    expect((await worker.runDue()).get(first.body.EvalID)).toBe('complete');

    const initial = await h.scheduler.deployments.latest('default', 'roll');
    expect(initial).toMatchObject({ JobID: 'roll', Namespace: 'default', JobVersion: 0, Status: 'running' });
    expect(initial?.TaskGroups.web).toMatchObject({ DesiredTotal: 2, PlacedAllocs: 2 });
    const v0 = await h.scheduler.allocations.ofJob('default', 'roll');
    expect(v0).toHaveLength(2);
    expect(v0.every((alloc) => alloc.DeploymentID === initial?.ID)).toBe(true);

    // The deployment's write carried its event on the Deployment topic.
    const events = (await h.scheduler.state.eventsAfter(before)).flatMap((batch) => batch.events);
    const deploymentEvents = events.filter((event) => event.Topic === 'Deployment');
    expect(deploymentEvents.length).toBeGreaterThan(0);
    expect(deploymentEvents[0]).toMatchObject({
      Type: 'PlanResult',
      Key: initial?.ID,
      Namespace: 'default',
      FilterKeys: ['roll'],
    });

    const changed = await mgmt('PUT', '/v1/job/roll', { Job: rollingJob('roll', 2, 'python3.12') });
    expect(changed.status).toBe(200);
    expect((await worker.runDue()).get(changed.body.EvalID)).toBe('complete');
    const deployments = await h.scheduler.deployments.ofJob('default', 'roll');
    expect(deployments).toHaveLength(2);
    const [latest, older] = deployments;
    expect(latest).toMatchObject({ JobVersion: 1, Status: 'running' });
    expect(older).toMatchObject({
      ID: initial?.ID,
      Status: 'cancelled',
      StatusDescription: 'Cancelled due to newer version of job',
    });
    // One at a time (max_parallel 1): one allocation of the new version, in the new deployment.
    const v1 = (await h.scheduler.allocations.ofJob('default', 'roll')).filter((alloc) => alloc.JobVersion === 1);
    expect(v1).toHaveLength(1);
    expect(v1[0]?.DeploymentID).toBe(latest?.ID);
    expect(latest?.TaskGroups.web).toMatchObject({ DesiredTotal: 2, PlacedAllocs: 1 });
  });

  it('the read routes answer in Nomad’s shapes, with the index', async () => {
    const [latest, older] = await h.scheduler.deployments.ofJob('default', 'roll');
    if (!latest || !older) throw new Error('the deployments of the test before are missing');

    const list = await mgmt('GET', '/v1/deployments');
    expect(list.status).toBe(200);
    expect(list.body.map((d: { ID: string }) => d.ID)).toEqual([latest.ID, older.ID].sort());
    expect(Number(list.headers.get('x-nomad-index'))).toBeGreaterThanOrEqual(latest.ModifyIndex);
    const byPrefix = await mgmt('GET', `/v1/deployments?prefix=${latest.ID.slice(0, 6)}`);
    expect(byPrefix.body.map((d: { ID: string }) => d.ID)).toEqual([latest.ID]);
    expect((await mgmt('GET', '/v1/deployments?namespace=*')).body).toHaveLength(2);

    const one = await mgmt('GET', `/v1/deployment/${latest.ID}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(latest);
    const missing = await mgmt('GET', '/v1/deployment/00000000-0000-0000-0000-000000000000');
    expect([missing.status, missing.text]).toEqual([404, 'deployment not found']);

    const allocs = await mgmt('GET', `/v1/deployment/allocations/${latest.ID}`);
    expect(allocs.status).toBe(200);
    expect(allocs.body).toHaveLength(1);
    // Nomad's AllocListStub carries no DeploymentID: the allocation it names is the deployment's.
    expect(allocs.body[0]).toMatchObject({ JobVersion: 1, JobID: 'roll' });
    expect((await h.scheduler.allocations.get(allocs.body[0].ID))?.DeploymentID).toBe(latest.ID);

    const ofJob = await mgmt('GET', '/v1/job/roll/deployments');
    expect(ofJob.body.map((d: { ID: string }) => d.ID)).toEqual([latest.ID, older.ID]);
    const current = await mgmt('GET', '/v1/job/roll/deployment');
    expect(current.body).toEqual(latest);
    const none = await mgmt('GET', '/v1/job/no-such-job/deployment');
    expect([none.status, none.body]).toEqual([200, null]);
  });

  it('a blocking read of a deployment returns once a write moves its index', async () => {
    const latest = await h.scheduler.deployments.latest('default', 'roll');
    if (!latest) throw new Error('no deployment');
    const index = Number((await mgmt('GET', `/v1/deployment/${latest.ID}`)).headers.get('x-nomad-index'));
    const waiting = mgmt('GET', `/v1/deployment/${latest.ID}?index=${index}&wait=30s`);
    const stopped = await mgmt('DELETE', '/v1/job/roll');
    expect(stopped.status).toBe(200);
    await worker.runDue();
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ ID: latest.ID, Status: 'cancelled' });
    expect(answered.body.StatusDescription).toBe('Cancelled because job is stopped');
    expect(Number(answered.headers.get('x-nomad-index'))).toBeGreaterThan(index);
  });

  it('pause, resume and fail change an active deployment, with their events and the deployment-watcher evaluation', async () => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: rollingJob('ops', 1, 'python3') });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const deployment = await h.scheduler.deployments.latest('default', 'ops');
    if (!deployment) throw new Error('no deployment');
    const before = await h.scheduler.state.currentIndex();

    const paused = await mgmt('PUT', `/v1/deployment/pause/${deployment.ID}`, {
      DeploymentID: deployment.ID,
      Pause: true,
    });
    expect(paused.status).toBe(200);
    // Nomad's DeploymentUpdateResponse: every field, RevertedJobVersion null when nothing was reverted.
    expect(paused.body).toEqual({
      EvalID: '',
      EvalCreateIndex: 0,
      DeploymentModifyIndex: paused.body.Index,
      RevertedJobVersion: null,
      Index: paused.body.Index,
    });
    expect(paused.headers.get('X-Nomad-Index')).toBe(String(paused.body.Index));
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'paused',
      StatusDescription: 'Deployment is paused',
      ModifyIndex: paused.body.DeploymentModifyIndex,
    });

    const resumed = await mgmt('POST', `/v1/deployment/pause/${deployment.ID}`, { Pause: false });
    expect(resumed.status).toBe(200);
    expect((await h.scheduler.deployments.get(deployment.ID))?.Status).toBe('running');
    expect(await h.scheduler.evaluations.get(resumed.body.EvalID)).toMatchObject({
      Status: 'pending',
      TriggeredBy: 'deployment-watcher',
      JobID: 'ops',
      DeploymentID: deployment.ID,
    });

    const failed = await mgmt('PUT', `/v1/deployment/fail/${deployment.ID}`);
    expect(failed.status).toBe(200);
    expect(failed.body).toEqual({
      EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      EvalCreateIndex: failed.body.Index,
      DeploymentModifyIndex: failed.body.Index,
      RevertedJobVersion: null,
      Index: failed.body.Index,
    });
    expect(await h.scheduler.deployments.get(deployment.ID)).toMatchObject({
      Status: 'failed',
      StatusDescription: 'Deployment marked as failed',
    });
    expect((await h.scheduler.evaluations.get(failed.body.EvalID))?.TriggeredBy).toBe('deployment-watcher');

    const events = (await h.scheduler.state.eventsAfter(before)).flatMap((batch) => batch.events);
    const updates = events.filter((event) => event.Type === 'DeploymentStatusUpdate');
    expect(updates.map((event) => [event.Topic, event.Key])).toEqual([
      ['Deployment', deployment.ID],
      ['Deployment', deployment.ID],
      ['Evaluation', resumed.body.EvalID],
      ['Deployment', deployment.ID],
      ['Evaluation', failed.body.EvalID],
    ]);

    // A terminal deployment is refused, and nothing is written.
    const index = await h.scheduler.state.currentIndex();
    const again = await mgmt('PUT', `/v1/deployment/fail/${deployment.ID}`);
    expect([again.status, again.text]).toEqual([400, "can't fail terminal deployment"]);
    const pauseAgain = await mgmt('PUT', `/v1/deployment/pause/${deployment.ID}`, { Pause: true });
    expect([pauseAgain.status, pauseAgain.text]).toEqual([400, "can't pause terminal deployment"]);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    const missing = await mgmt('PUT', '/v1/deployment/fail/00000000-0000-0000-0000-000000000000');
    expect([missing.status, missing.text]).toEqual([404, 'deployment not found']);
  });
});
