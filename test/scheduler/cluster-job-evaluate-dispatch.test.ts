import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const parameterized = (id: string, parameters: Record<string, unknown>) => ({
  ...webJob(id),
  Type: 'batch',
  ParameterizedJob: parameters,
});

describe('PUT /v1/job/:id/evaluate and …/dispatch (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let worker: EvaluationWorker;
  let nodeId: string;
  let nodeSecret: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  /** A call that must be refused with `status` and `message`, the index unmoved. */
  const refused = async (method: string, path: string, body: unknown, status: number, message: string) => {
    const before = await h.scheduler.state.currentIndex();
    const out = await mgmt(method, path, body);
    expect(out.status, `${path} ${JSON.stringify(body)}`).toBe(status);
    expect(out.text).toContain(message);
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  };

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
    nodeId = node.ID;
    nodeSecret = node.SecretID;
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  it('evaluate: a new pending evaluation of the stored job; ForceReschedule marks the failed allocation', async () => {
    // A batch job: no update block, so no deployment. As Nomad's reconciler, a failed allocation of an active
    // deployment is not rescheduled, forced or not, until the deployment ends.
    expect((await mgmt('PUT', '/v1/jobs', { Job: webJob('web', { Type: 'batch' }) })).status).toBe(200);
    await worker.runDue();
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'web');
    if (!alloc) throw new Error('not placed');
    // The allocation fails on its node.
    await h.scheduler.state.commit(async (index) => ({
      items: [h.scheduler.allocations.updated({ ...alloc, ClientStatus: 'failed', ModifyIndex: index }, alloc)],
      tables: ['allocs'],
    }));
    const job = await h.scheduler.jobs.get('default', 'web');

    const plain = await mgmt('PUT', '/v1/job/web/evaluate');
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({
      EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      EvalCreateIndex: plain.body.Index,
      JobModifyIndex: job?.ModifyIndex,
      // Nomad's JobRegisterResponse, its QueryMeta flattened into the body.
      Warnings: '',
      Index: plain.body.Index,
      LastContact: 0,
      KnownLeader: false,
      NextToken: '',
    });
    expect(plain.headers.get('X-Nomad-Index')).toBe(String(plain.body.Index));
    expect(await h.scheduler.evaluations.get(plain.body.EvalID)).toMatchObject({
      Status: 'pending',
      TriggeredBy: 'job-register',
      JobID: 'web',
      CreateIndex: plain.body.Index,
    });
    expect((await h.scheduler.allocations.get(alloc.ID))?.DesiredTransition.ForceReschedule).toBeNull();
    // Nomad's Job.Evaluate is one AllocUpdateDesiredTransition message: its evaluation's event has that type.
    const [plainBatch] = await h.scheduler.state.eventsAfter(plain.body.Index - 1);
    expect(plainBatch?.events.map((event) => [event.Topic, event.Type, event.Key, event.FilterKeys])).toEqual([
      ['Evaluation', 'AllocationUpdateDesiredStatus', plain.body.EvalID, ['web', '']],
    ]);

    const forced = await mgmt('POST', '/v1/job/web/evaluate', { JobID: 'web', EvalOptions: { ForceReschedule: true } });
    expect(forced.status).toBe(200);
    const marked = await h.scheduler.allocations.get(alloc.ID);
    expect(marked?.DesiredTransition.ForceReschedule).toBe(true);
    expect(marked?.ModifyIndex).toBe(forced.body.Index);
    const [forcedBatch] = await h.scheduler.state.eventsAfter(forced.body.Index - 1);
    expect(forcedBatch?.events.map((event) => [event.Topic, event.Type, event.Key, event.FilterKeys])).toEqual([
      ['Allocation', 'AllocationUpdateDesiredStatus', alloc.ID, ['web', '']],
      ['Evaluation', 'AllocationUpdateDesiredStatus', forced.body.EvalID, ['web', '']],
    ]);
    // The worker reschedules it now (its policy's 30 s delay is not waited for).
    await worker.runDue();
    const allocs = await h.scheduler.allocations.ofJob('default', 'web');
    expect(allocs.find((other) => other.PreviousAllocation === alloc.ID)).toMatchObject({ DesiredStatus: 'run' });
  });

  it('evaluate: bad input and jobs that cannot be evaluated are refused, nothing written', async () => {
    await refused('PUT', '/v1/job/web/evaluate', { JobID: 'other' }, 400, 'JobID not same as job name');
    await refused('PUT', '/v1/job/web/evaluate', { EvalOptions: {} }, 400, 'Job ID must be specified');
    await refused('PUT', '/v1/job/missing/evaluate', { JobID: 'missing' }, 404, 'job not found');
    const periodic = {
      ...webJob('cron'),
      Type: 'batch',
      Periodic: { Enabled: true, SpecType: 'cron', Spec: '@daily' },
    };
    expect((await mgmt('PUT', '/v1/jobs', { Job: periodic })).status).toBe(200);
    await refused('PUT', '/v1/job/cron/evaluate', { JobID: 'cron' }, 400, "can't evaluate periodic job");
    expect((await mgmt('PUT', '/v1/jobs', { Job: parameterized('param', {}) })).status).toBe(200);
    await refused('PUT', '/v1/job/param/evaluate', { JobID: 'param' }, 400, "can't evaluate parameterized job");
  });

  it('dispatch: a child job with ParentID, Dispatched, the meta and payload, and its evaluation, placed', async () => {
    const parent = parameterized('report', {
      Payload: 'required',
      MetaRequired: ['customer'],
      MetaOptional: ['region'],
    });
    expect((await mgmt('PUT', '/v1/jobs', { Job: { ...parent, Meta: { team: 'ops' } } })).status).toBe(200);
    const payload = Buffer.from('hello report').toString('base64');
    const out = await mgmt('POST', '/v1/job/report/dispatch', { Payload: payload, Meta: { customer: 'acme' } });
    expect(out.status).toBe(200);
    const unix = Math.floor(h.clock.now() / 1000);
    expect(out.body).toEqual({
      DispatchedJobID: expect.stringMatching(new RegExp(`^report/dispatch-${unix}-[0-9a-f]{8}$`)),
      EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      EvalCreateIndex: out.body.Index,
      JobCreateIndex: out.body.Index,
      Index: out.body.Index,
    });
    const childId = out.body.DispatchedJobID;
    // Its `/` is spelt %2F in a path, as Nomad's api package escapes it.
    const child = await mgmt('GET', `/v1/job/${encodeURIComponent(childId)}`);
    expect(child.status).toBe(200);
    expect(child.body).toMatchObject({
      ID: childId,
      Name: childId,
      ParentID: 'report',
      Dispatched: true,
      Type: 'batch',
      Status: 'pending',
      Meta: { team: 'ops', customer: 'acme' },
      Payload: payload,
      Version: 0,
      CreateIndex: out.body.Index,
    });
    expect(await h.scheduler.evaluations.get(out.body.EvalID)).toMatchObject({
      JobID: childId,
      Status: 'pending',
      TriggeredBy: 'job-register',
    });
    // The parent is unchanged; the child runs as a batch job.
    expect((await h.scheduler.jobs.get('default', 'report'))?.Meta).toEqual({ team: 'ops' });
    await worker.runDue();
    expect((await h.scheduler.allocations.ofJob('default', childId)).length).toBe(1);
    // A second dispatch is a second child.
    const again = await mgmt('PUT', '/v1/job/report/dispatch', {
      JobID: 'report',
      Payload: payload,
      Meta: { customer: 'b', region: 'eu' },
    });
    expect(again.status).toBe(200);
    expect(again.body.DispatchedJobID).not.toBe(childId);
    // A retry with an idempotency token answers the child it created, and writes nothing.
    const first = await mgmt('PUT', '/v1/job/report/dispatch', {
      Payload: payload,
      Meta: { customer: 'c' },
      IdempotencyToken: 'retry-1',
    });
    expect(first.status).toBe(200);
    expect((await h.scheduler.jobs.get('default', first.body.DispatchedJobID))?.DispatchIdempotencyToken).toBe(
      'retry-1',
    );
    const before = await h.scheduler.state.currentIndex();
    const retry = await mgmt('PUT', '/v1/job/report/dispatch', {
      Payload: payload,
      Meta: { customer: 'c' },
      IdempotencyToken: 'retry-1',
    });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({
      DispatchedJobID: first.body.DispatchedJobID,
      EvalID: '',
      EvalCreateIndex: 0,
      JobCreateIndex: first.body.JobCreateIndex,
      Index: first.body.Index,
    });
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('dispatch: the parent’s parameters are enforced, nothing written', async () => {
    const ok = Buffer.from('x').toString('base64');
    await refused(
      'PUT',
      '/v1/job/report/dispatch',
      { Meta: { customer: 'a' } },
      400,
      'Payload is not provided but required',
    );
    await refused(
      'PUT',
      '/v1/job/report/dispatch',
      { Payload: ok },
      400,
      'Dispatch did not provide required meta keys: [customer]',
    );
    await refused(
      'PUT',
      '/v1/job/report/dispatch',
      { Payload: ok, Meta: { customer: 'a', zone: 'z', host: 'h' } },
      400,
      'Dispatch request included unpermitted metadata keys: [host zone]',
    );
    const big = Buffer.alloc(16 * 1024 + 1, 1).toString('base64');
    await refused(
      'PUT',
      '/v1/job/report/dispatch',
      { Payload: big, Meta: { customer: 'a' } },
      400,
      'Payload exceeds maximum size; 16385 > 16384',
    );
    await refused('PUT', '/v1/job/report/dispatch', { Payload: 'not base64!', Meta: { customer: 'a' } }, 400, 'base64');
    await refused('PUT', '/v1/job/report/dispatch', { JobID: 'other' }, 400, 'Job ID does not match');
    await refused('PUT', '/v1/job/web/dispatch', {}, 400, 'Specified job "web" is not a parameterized job');
    await refused('PUT', '/v1/job/nothing/dispatch', {}, 404, 'parameterized job not found');
    expect((await mgmt('PUT', '/v1/jobs', { Job: parameterized('quiet', { Payload: 'forbidden' }) })).status).toBe(200);
    await refused('PUT', '/v1/job/quiet/dispatch', { Payload: ok }, 400, 'Payload is not allowed');
    expect((await mgmt('DELETE', '/v1/job/quiet')).status).toBe(200);
    await refused('PUT', '/v1/job/quiet/dispatch', {}, 400, 'Specified job "quiet" is stopped');
  });

  it('PUT /v1/node/:id/evaluate: a node-update evaluation of each job running on the node, as Nomad’s Node.Evaluate', async () => {
    const running = new Set(
      (await h.scheduler.allocations.list())
        .filter(
          (alloc) =>
            alloc.NodeID === nodeId &&
            alloc.DesiredStatus === 'run' &&
            !['complete', 'failed', 'lost'].includes(alloc.ClientStatus),
        )
        .map((alloc) => alloc.JobID),
    );
    expect(running.size).toBeGreaterThan(0);
    const out = await mgmt('PUT', `/v1/node/${nodeId}/evaluate`);
    expect(out.status).toBe(200);
    const node = await h.scheduler.nodes.get(nodeId);
    expect(out.body).toEqual({
      EvalIDs: expect.any(Array),
      EvalCreateIndex: out.body.Index,
      NodeModifyIndex: node?.ModifyIndex,
      Index: out.body.Index,
    });
    expect(out.headers.get('X-Nomad-Index')).toBe(String(out.body.Index));
    const created = await Promise.all((out.body.EvalIDs as string[]).map((id) => h.scheduler.evaluations.get(id)));
    expect(new Set(created.map((evaluation) => evaluation?.JobID))).toEqual(running);
    for (const evaluation of created)
      expect(evaluation).toMatchObject({
        Status: 'pending',
        TriggeredBy: 'node-update',
        NodeID: nodeId,
        CreateIndex: out.body.Index,
      });
    const [batch] = await h.scheduler.state.eventsAfter(out.body.Index - 1);
    expect(batch?.events.map((event) => [event.Topic, event.Type, event.Key, event.FilterKeys])).toEqual(
      created.map((evaluation) => ['Evaluation', 'EvaluationUpdated', evaluation?.ID, [evaluation?.JobID, '']]),
    );
    expect((await mgmt('PUT', `/v1/node/${crypto.randomUUID()}/evaluate`)).status).toBe(404);
  });

  it('a batch job whose allocation completes on its node is dead in the same write, with a Job event, as Nomad’s', async () => {
    const registered = await mgmt('PUT', '/v1/jobs', { Job: webJob('once', { Type: 'batch' }) });
    expect(registered.status).toBe(200);
    await worker.runDue();
    expect((await h.scheduler.jobs.get('default', 'once'))?.Status).toBe('running');
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'once');
    if (!alloc) throw new Error('not placed');
    const report = (ClientStatus: string) =>
      h.call('PUT', `/v1/client/node/${nodeId}/allocations`, {
        token: nodeSecret,
        body: { Allocs: [{ ID: alloc.ID, ClientStatus }] },
      });
    // Running changes nothing of the job's status: no Job event.
    const running = await report('running');
    expect(running.status).toBe(200);
    const [runningBatch] = await h.scheduler.state.eventsAfter(running.body.Index - 1);
    expect(runningBatch?.events.map((event) => event.Topic)).toEqual(['Allocation']);
    // The event stream, filtered by the job's ID: the allocation matches by its FilterKeys, the job by its Key.
    const stream = await h.open(
      `/v1/event/stream?topic=Job:once&topic=Allocation:once&index=${await h.scheduler.state.currentIndex()}`,
      root,
    );
    const done = await report('complete');
    expect(done.status).toBe(200);
    const streamed = await stream.nextEvents();
    await stream.close();
    expect(streamed.Index).toBe(done.body.Index);
    expect(
      streamed.Events.map((event: Record<string, unknown>) => [
        event.Topic,
        event.Type,
        event.Key,
        event.Namespace,
        event.FilterKeys,
      ]),
    ).toEqual([
      ['Allocation', 'AllocationUpdated', alloc.ID, 'default', ['once', '']],
      ['Job', 'AllocationUpdated', 'once', 'default', null],
    ]);
    expect(streamed.Events[1].Payload.Job).toMatchObject({ ID: 'once', Status: 'dead' });
    const job = await h.scheduler.jobs.get('default', 'once');
    expect(job).toMatchObject({ Status: 'dead', ModifyIndex: done.body.Index });
    expect((await mgmt('GET', '/v1/job/once')).body.Status).toBe('dead');
    const [batch] = await h.scheduler.state.eventsAfter(done.body.Index - 1);
    expect(
      batch?.events.map((event) => [event.Topic, event.Type, event.Key, event.Namespace, event.FilterKeys]),
    ).toEqual([
      ['Allocation', 'AllocationUpdated', alloc.ID, 'default', ['once', '']],
      ['Job', 'AllocationUpdated', 'once', 'default', null],
    ]);
    expect(batch?.events[1]?.Payload).toEqual({ Job: job });
  });

  it('a failed allocation rescheduled later: the follow-up evaluation, and the allocation marked with a PlanResult event', async () => {
    const registered = await mgmt('PUT', '/v1/jobs', { Job: webJob('retry', { Type: 'batch' }) });
    expect(registered.status).toBe(200);
    await worker.runDue();
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'retry');
    if (!alloc) throw new Error('not placed');
    const failed = await h.call('PUT', `/v1/client/node/${nodeId}/allocations`, {
      token: nodeSecret,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'failed', ClientDescription: 'Failed tasks' }] },
    });
    expect(failed.status).toBe(200);
    const before = await h.scheduler.state.currentIndex();
    await worker.runDue();
    const marked = await h.scheduler.allocations.get(alloc.ID);
    expect(marked?.FollowupEvalID).toMatch(/^[0-9a-f-]{36}$/);
    const followup = await h.scheduler.evaluations.get(marked?.FollowupEvalID as string);
    expect(followup).toMatchObject({ JobID: 'retry', TriggeredBy: 'alloc-reschedule', Status: 'pending' });
    expect(followup?.WaitUntil).not.toBeNull();
    // Nomad's scheduler puts the mark in its plan (the reconciler's attribute updates): a PlanResult event, and the
    // follow-up evaluation an EvaluationUpdated one.
    const events = (await h.scheduler.state.eventsAfter(before)).flatMap((batch) => batch.events);
    expect(
      events
        .filter((event) => event.Key === alloc.ID || event.Key === followup?.ID)
        .map((event) => [event.Topic, event.Type, event.Key, event.FilterKeys]),
    ).toEqual([
      ['Evaluation', 'EvaluationUpdated', followup?.ID, ['retry', '']],
      ['Allocation', 'PlanResult', alloc.ID, ['retry', '']],
    ]);
  });

  it('a node made eligible again and a purged node evaluate their jobs, as Nomad’s createNodeEvals (this node last)', async () => {
    const running = new Set(
      (await h.scheduler.allocations.list())
        .filter(
          (alloc) =>
            alloc.NodeID === nodeId &&
            alloc.DesiredStatus === 'run' &&
            !['complete', 'failed', 'lost'].includes(alloc.ClientStatus),
        )
        .map((alloc) => alloc.JobID),
    );
    expect(running.size).toBeGreaterThan(0);
    const eligibility = (Eligibility: string) => mgmt('PUT', `/v1/node/${nodeId}/eligibility`, { Eligibility });
    const off = await eligibility('ineligible');
    expect(off.body).toEqual({
      EvalIDs: null,
      EvalCreateIndex: 0,
      NodeModifyIndex: off.body.Index,
      Index: off.body.Index,
    });
    const on = await eligibility('eligible');
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ EvalCreateIndex: on.body.Index, NodeModifyIndex: on.body.Index });
    const jobsOf = async (ids: string[]) =>
      new Set((await Promise.all(ids.map((id) => h.scheduler.evaluations.get(id)))).map((e) => e?.JobID));
    expect(await jobsOf(on.body.EvalIDs)).toEqual(running);
    const [onBatch] = await h.scheduler.state.eventsAfter(on.body.Index - 1);
    expect(onBatch?.events.map((event) => [event.Topic, event.Type])).toEqual([
      ['Node', 'NodeEligibility'],
      ...on.body.EvalIDs.map(() => ['Evaluation', 'EvaluationUpdated']),
    ]);
    await worker.runDue();

    const purged = await mgmt('PUT', `/v1/node/${nodeId}/purge`);
    expect(purged.status).toBe(200);
    expect(purged.body).toMatchObject({ EvalCreateIndex: purged.body.Index, NodeModifyIndex: purged.body.Index });
    expect(await jobsOf(purged.body.EvalIDs)).toEqual(running);
    const [purgeBatch] = await h.scheduler.state.eventsAfter(purged.body.Index - 1);
    expect(purgeBatch?.events.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['Node', 'NodeDeregistration', nodeId],
      ...purged.body.EvalIDs.map((id: string) => ['Evaluation', 'EvaluationUpdated', id]),
    ]);
    for (const id of purged.body.EvalIDs)
      expect(await h.scheduler.evaluations.get(id)).toMatchObject({ TriggeredBy: 'node-update', NodeID: nodeId });
    // The scheduler finds the node gone: what ran there is stopped.
    await worker.runDue();
    for (const alloc of (await h.scheduler.allocations.list()).filter((other) => other.NodeID === nodeId))
      expect(alloc.DesiredStatus === 'stop' || ['complete', 'failed', 'lost'].includes(alloc.ClientStatus)).toBe(true);
  });
});
