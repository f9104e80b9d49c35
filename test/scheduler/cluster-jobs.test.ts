import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { EVAL_PK, jobPk, jobVersionPk } from '../../packages/core/src/scheduler/keys.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** A minimal JSON job as a user sends it: everything else is Nomad's default. */
function webJob(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ID: id,
    TaskGroups: [{ Name: 'web', Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'python3' } }] }],
    ...overrides,
  };
}

describe('cluster jobs and evaluations: registration, versions, reads, deregistration (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    expect((await mgmt('PUT', '/v1/namespace', { Name: 'prod' })).status).toBe(200);
  });
  afterAll(() => h.close());

  it('registers a job with Nomad’s defaults, its pending evaluation and both events at one index', async () => {
    const before = await h.scheduler.state.currentIndex();
    const out = await mgmt('PUT', '/v1/jobs', { Job: webJob('web') });
    expect(out.status).toBe(200);
    const index = before + 1;
    expect(out.headers.get('X-Nomad-Index')).toBe(String(index));
    expect(out.body).toEqual({
      EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      EvalCreateIndex: index,
      JobModifyIndex: index,
      Warnings: '',
      // Nomad's JobRegisterResponse embeds QueryMeta: Go's encoder flattens it into the body.
      Index: index,
      LastContact: 0,
      KnownLeader: false,
      NextToken: '',
    });

    const job = await mgmt('GET', '/v1/job/web');
    expect(job.status).toBe(200);
    expect(job.body).toMatchObject({
      ID: 'web',
      Name: 'web',
      Namespace: 'default',
      Region: 'global',
      Type: 'service',
      Priority: 50,
      NodePool: 'default',
      Datacenters: ['*'],
      Stop: false,
      Status: 'pending',
      Version: 0,
      CreateIndex: index,
      ModifyIndex: index,
      JobModifyIndex: index,
      Update: { MaxParallel: 1, Stagger: 30e9, HealthCheck: 'checks', MinHealthyTime: 10e9, Canary: 0 },
    });
    const [group] = job.body.TaskGroups;
    expect(group).toMatchObject({
      Name: 'web',
      Count: 1,
      EphemeralDisk: { SizeMB: 300, Sticky: false, Migrate: false },
      Update: { MaxParallel: 1, HealthyDeadline: 300e9, ProgressDeadline: 600e9 },
      ReschedulePolicy: { Unlimited: true, DelayFunction: 'exponential', Delay: 30e9, MaxDelay: 3600e9 },
      RestartPolicy: { Attempts: 2, Interval: 1800e9, Delay: 15e9, Mode: 'fail' },
    });
    expect(group.Tasks[0]).toMatchObject({
      Name: 'server',
      Driver: 'raw_exec',
      Config: { command: 'python3' },
      Resources: { CPU: 100, MemoryMB: 300 },
      KillTimeout: 5e9,
      LogConfig: { MaxFiles: 10, MaxFileSizeMB: 10 },
    });

    const evaluation = await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`);
    expect(evaluation.status).toBe(200);
    expect(evaluation.body).toMatchObject({
      ID: out.body.EvalID,
      Namespace: 'default',
      Priority: 50,
      Type: 'service',
      TriggeredBy: 'job-register',
      JobID: 'web',
      JobModifyIndex: index,
      Status: 'pending',
      CreateIndex: index,
      ModifyIndex: index,
      // Nomad's nanoseconds, kept through DynamoDB.
      CreateTime: h.clock.now() * 1e6,
    });
    expect(job.body.SubmitTime).toBe(h.clock.now() * 1e6);

    const [batch] = await h.scheduler.state.eventsAfter(before);
    expect(batch?.index).toBe(index);
    expect(
      batch?.events.map((event) => [event.Topic, event.Type, event.Key, event.Namespace, event.FilterKeys]),
    ).toEqual([
      ['Job', 'JobRegistered', 'web', 'default', null],
      ['Evaluation', 'JobRegistered', out.body.EvalID, 'default', ['web', '']],
    ]);
    expect(batch?.events[0]?.Payload.Job).toMatchObject({ Version: 0 });
    // The store holds the job item, one version item and the evaluation.
    expect(await h.core.store.get(jobPk('default'), 'web')).toMatchObject({ ID: 'web', Status: 'pending' });
    expect(await h.core.store.list(jobVersionPk('default', 'web'))).toHaveLength(1);
    const key = Evaluations.key(out.body.EvalID);
    expect(key.pk.startsWith(EVAL_PK)).toBe(true);
    expect(await h.core.store.get(key.pk, key.sk)).toMatchObject({ Status: 'pending' });
  });

  it('keeps the version when nothing changed, adds one when the spec changed, and serves the versions', async () => {
    await mgmt('PUT', '/v1/job/versioned', { Job: webJob('versioned') });
    const again = await mgmt('PUT', '/v1/job/versioned', { Job: webJob('versioned') });
    expect(again.status).toBe(200);
    expect((await mgmt('GET', '/v1/job/versioned')).body.Version).toBe(0);
    const changed = await mgmt('PUT', '/v1/job/versioned', { Job: webJob('versioned', { Priority: 70 }) });
    expect(changed.status).toBe(200);
    const read = await mgmt('GET', '/v1/job/versioned');
    expect(read.body).toMatchObject({ Version: 1, Priority: 70, JobModifyIndex: changed.body.JobModifyIndex });
    const versions = await mgmt('GET', '/v1/job/versioned/versions');
    expect(versions.status).toBe(200);
    expect(versions.body.Versions.map((job: { Version: number }) => job.Version)).toEqual([1, 0]);
    expect(versions.body.Diffs).toBeNull();
    const evaluations = await mgmt('GET', '/v1/job/versioned/evaluations');
    expect(evaluations.body).toHaveLength(3);
    expect(
      evaluations.body.every((evaluation: { TriggeredBy: string }) => evaluation.TriggeredBy === 'job-register'),
    ).toBe(true);
    // Only the last six versions are kept, as Nomad's JobTrackedVersions.
    for (let priority = 1; priority <= 7; priority++)
      expect((await mgmt('PUT', '/v1/jobs', { Job: webJob('versioned', { Priority: priority }) })).status).toBe(200);
    const kept = await mgmt('GET', '/v1/job/versioned/versions');
    expect(kept.body.Versions.map((job: { Version: number }) => job.Version)).toEqual([8, 7, 6, 5, 4, 3]);
    expect(await h.core.store.list(jobVersionPk('default', 'versioned'))).toHaveLength(6);
  });

  it('takes a job back as GET /v1/job/:id shows it (nomad job inspect, then run): the same version, SubmitTime the server’s', async () => {
    expect((await mgmt('PUT', '/v1/job/inspected', { Job: webJob('inspected') })).status).toBe(200);
    const shown = (await mgmt('GET', '/v1/job/inspected')).body;
    expect(shown.SubmitTime).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    const again = await mgmt('PUT', '/v1/job/inspected', { Job: shown });
    expect(again.status).toBe(200);
    const read = (await mgmt('GET', '/v1/job/inspected')).body;
    expect(read).toMatchObject({ Version: 0, JobModifyIndex: shown.JobModifyIndex });
    const changed = await mgmt('PUT', '/v1/job/inspected', { Job: { ...shown, Priority: 60 } });
    expect(changed.status).toBe(200);
    expect((await mgmt('GET', '/v1/job/inspected')).body).toMatchObject({ Version: 1, Priority: 60 });
  });

  it('enforces the job modify index and preserves counts when asked', async () => {
    const created = await mgmt('PUT', '/v1/jobs', { Job: webJob('enforced'), EnforceIndex: true, JobModifyIndex: 0 });
    expect(created.status).toBe(200);
    const exists = await mgmt('PUT', '/v1/jobs', { Job: webJob('enforced'), EnforceIndex: true, JobModifyIndex: 0 });
    expect(exists.status).toBe(409);
    expect(exists.text).toBe('Enforcing job modify index 0: job already exists');
    const stale = await mgmt('PUT', '/v1/jobs', { Job: webJob('enforced'), EnforceIndex: true, JobModifyIndex: 1 });
    expect(stale.status).toBe(409);
    expect(stale.text).toBe(
      `Enforcing job modify index 1: job exists with conflicting job modify index: ${created.body.JobModifyIndex}`,
    );
    const scaled = webJob('enforced');
    (scaled.TaskGroups as Array<Record<string, unknown>>)[0] = {
      ...(scaled.TaskGroups as Array<Record<string, unknown>>)[0],
      Count: 5,
    };
    const right = await mgmt('PUT', '/v1/jobs', {
      Job: { ...scaled, Meta: { owner: 'ops' } },
      EnforceIndex: true,
      JobModifyIndex: created.body.JobModifyIndex,
      PreserveCounts: true,
    });
    expect(right.status).toBe(200);
    const read = (await mgmt('GET', '/v1/job/enforced')).body;
    expect(read.TaskGroups[0].Count).toBe(1);
    expect(read.Meta).toEqual({ owner: 'ops' });
    expect(
      (await mgmt('PUT', '/v1/jobs', { Job: webJob('missing'), EnforceIndex: true, JobModifyIndex: 9 })).text,
    ).toBe('Enforcing job modify index 9: job does not exist');
    expect((await mgmt('GET', '/v1/job/missing')).status).toBe(404);
  });

  it('refuses invalid jobs with a 400 naming the problem, and writes nothing', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['PUT /v1/jobs', {}, /^Job must be specified$/],
      ['PUT /v1/jobs', { Job: { Name: 'x' } }, /^Job ID hasn't been provided$/],
      ['PUT /v1/job/other', { Job: webJob('web') }, /^Job ID does not match name$/],
      ['PUT /v1/jobs', { Job: webJob('') }, /Missing job ID/],
      ['PUT /v1/jobs', { Job: webJob('has space') }, /Job ID contains a space/],
      ['PUT /v1/jobs', { Job: { ID: 'empty', TaskGroups: [] } }, /Missing job task groups/],
      ['PUT /v1/jobs', { Job: webJob('kind', { Type: 'daemon' }) }, /Invalid job type: "daemon"/],
      ['PUT /v1/jobs', { Job: webJob('prio', { Priority: 500 }) }, /job priority must be between \[1, 100\]/],
      [
        'PUT /v1/jobs',
        { Job: webJob('neg', { TaskGroups: [{ Name: 'g', Count: -1, Tasks: [{ Name: 't', Driver: 'raw_exec' }] }] }) },
        /Task group g validation failed: Task group count can't be negative/,
      ],
      [
        'PUT /v1/jobs',
        { Job: webJob('nodriver', { TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't' }] }] }) },
        /Missing task driver/,
      ],
      [
        'PUT /v1/jobs',
        { Job: webJob('notasks', { TaskGroups: [{ Name: 'g' }, { Name: 'g', Tasks: [] }] }) },
        /Missing tasks for task group[\s\S]*redefines 'g' from group 1/,
      ],
      [
        'PUT /v1/jobs',
        { Job: webJob('sys', { Type: 'service', Periodic: { Spec: '* * * * *' } }) },
        /Periodic can only/,
      ],
      ['PUT /v1/jobs', { Job: webJob('ghost', { Namespace: 'ghost' }) }, /nonexistent namespace "ghost"/],
      ['PUT /v1/jobs', { Job: webJob('pool', { NodePool: 'nowhere' }) }, /nonexistent node pool "nowhere"/],
      ['PUT /v1/jobs', { Job: webJob('eval'), EvalPriority: 101 }, /Eval priority must be between 1 and 100/],
      ['PUT /v1/jobs', { Job: webJob('big', { Meta: { blob: 'x'.repeat(300_000) } }) }, /at most 262144 are accepted/],
      ['PUT /v1/jobs', { Job: 'not an object' }, /Job/],
    ];
    for (const [route, body, problem] of cases) {
      const [method, path] = route.split(' ') as [string, string];
      const before = await h.scheduler.state.currentIndex();
      const out = await mgmt(method, path, body);
      expect(out.status, `${route} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(out.text).toMatch(problem);
      expect(await h.scheduler.state.currentIndex()).toBe(before);
    }
    expect(await h.core.store.get(jobPk('default'), 'big')).toBeUndefined();
  });

  it('lists jobs by namespace, prefix, filter and `*`, with stubs and summaries', async () => {
    expect((await mgmt('PUT', '/v1/jobs?namespace=prod', { Job: webJob('api', { Type: 'batch' }) })).status).toBe(200);
    expect((await mgmt('PUT', '/v1/jobs', { Job: webJob('web-2', { Namespace: 'prod' }) })).status).toBe(200);
    const prod = await mgmt('GET', '/v1/jobs?namespace=prod');
    expect(prod.status).toBe(200);
    expect(Number(prod.headers.get('X-Nomad-Index'))).toBeGreaterThan(0);
    expect(prod.body.map((stub: { ID: string }) => stub.ID)).toEqual(['api', 'web-2']);
    expect(prod.body[0]).toMatchObject({
      ID: 'api',
      Namespace: 'prod',
      Type: 'batch',
      Status: 'pending',
      Periodic: false,
      ParameterizedJob: false,
      JobSummary: { JobID: 'api', Summary: { web: { Queued: 0, Running: 0 } } },
    });
    expect(prod.body[0].Meta).toBeUndefined();
    // `?meta=true` adds Meta, omitted (`omitempty`) for a job without any, as Nomad's JobListStub.
    expect(
      (await mgmt('PUT', '/v1/jobs', { Job: webJob('tagged', { Namespace: 'prod', Meta: { team: 'a' } }) })).status,
    ).toBe(200);
    const withMeta = await mgmt('GET', '/v1/jobs?namespace=prod&meta=true');
    expect(withMeta.body.map((stub: { ID: string; Meta?: unknown }) => [stub.ID, stub.Meta])).toEqual([
      ['api', undefined],
      ['tagged', { team: 'a' }],
      ['web-2', undefined],
    ]);
    expect((await mgmt('DELETE', '/v1/job/tagged?namespace=prod&purge=true')).status).toBe(200);
    const batchJob = await mgmt('GET', '/v1/job/api?namespace=prod');
    expect(batchJob.body.Update).toBeNull();
    expect(batchJob.body.TaskGroups[0].ReschedulePolicy).toMatchObject({ Attempts: 1, Unlimited: false });
    const all = await mgmt('GET', '/v1/jobs?namespace=*&prefix=web');
    expect(all.body.map((stub: { ID: string; Namespace: string }) => `${stub.Namespace}/${stub.ID}`)).toEqual([
      'default/web',
      'prod/web-2',
    ]);
    const first = await mgmt('GET', '/v1/jobs?namespace=prod&per_page=1');
    expect(first.body.map((stub: { ID: string }) => stub.ID)).toEqual(['api']);
    expect(first.headers.get('X-Nomad-NextToken')).toBe('prod.web-2');
    const second = await mgmt('GET', '/v1/jobs?namespace=prod&per_page=1&next_token=prod.web-2');
    expect(second.body.map((stub: { ID: string }) => stub.ID)).toEqual(['web-2']);
    expect(second.headers.get('X-Nomad-NextToken')).toBeNull();
    const filtered = await mgmt('GET', `/v1/jobs?namespace=*&filter=${encodeURIComponent('Type == "batch"')}`);
    expect(filtered.body.map((stub: { ID: string }) => stub.ID)).toEqual(['api']);
    expect((await mgmt('GET', '/v1/jobs?filter=%3D%3D')).status).toBe(400);
    const summary = await mgmt('GET', '/v1/job/api/summary?namespace=prod');
    expect(summary.body).toMatchObject({ JobID: 'api', Namespace: 'prod', Children: { Pending: 0 } });
    expect((await mgmt('GET', '/v1/job/api/allocations?namespace=prod')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/job/api/summary')).status).toBe(404);
  });

  it('lists evaluations by status and job, and answers an evaluation’s allocations', async () => {
    const all = await mgmt('GET', '/v1/evaluations?namespace=*');
    expect(all.status).toBe(200);
    expect(all.body.length).toBeGreaterThan(3);
    const ofApi = await mgmt('GET', '/v1/evaluations?namespace=prod&job=api');
    expect(ofApi.body).toHaveLength(1);
    expect(ofApi.body[0]).toMatchObject({ JobID: 'api', Type: 'batch', Namespace: 'prod' });
    expect((await mgmt('GET', '/v1/evaluations?status=complete&namespace=*')).body).toEqual([]);
    expect((await mgmt('GET', `/v1/evaluation/${ofApi.body[0].ID}/allocations`)).body).toEqual([]);
    expect((await mgmt('GET', '/v1/evaluation/00000000-0000-0000-0000-000000000000')).status).toBe(404);
  });

  it('stops a job as a new version, purges it with its versions, each with its evaluation and events', async () => {
    await mgmt('PUT', '/v1/jobs', { Job: webJob('doomed') });
    const before = await h.scheduler.state.currentIndex();
    const stop = await mgmt('DELETE', '/v1/job/doomed');
    expect(stop.status).toBe(200);
    // Nomad's JobDeregisterResponse: its volume evaluation fields and the flattened QueryMeta.
    expect(stop.body).toEqual({
      EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      EvalCreateIndex: before + 1,
      JobModifyIndex: before + 1,
      VolumeEvalID: '',
      VolumeEvalIndex: 0,
      Index: before + 1,
      LastContact: 0,
      KnownLeader: false,
      NextToken: '',
    });
    const stopped = await mgmt('GET', '/v1/job/doomed');
    expect(stopped.body).toMatchObject({ Stop: true, Version: 1, Status: 'pending' });
    const evaluation = (await mgmt('GET', `/v1/evaluation/${stop.body.EvalID}`)).body;
    expect(evaluation).toMatchObject({ TriggeredBy: 'job-deregister', Type: 'service', JobID: 'doomed' });

    const purge = await mgmt('DELETE', '/v1/job/doomed?purge=true');
    expect(purge.status).toBe(200);
    expect((await mgmt('GET', '/v1/job/doomed')).status).toBe(404);
    expect(await h.core.store.list(jobVersionPk('default', 'doomed'))).toEqual([]);
    const batches = await h.scheduler.state.eventsAfter(before);
    // Nomad's events.go: Job keyed by ID in its namespace, no filter keys; Evaluation [JobID, DeploymentID].
    const purgeEval = batches[1]?.events[1]?.Key;
    expect(
      batches.map((batch) =>
        batch.events.map((event) => [event.Topic, event.Type, event.Key, event.Namespace, event.FilterKeys]),
      ),
    ).toEqual([
      [
        ['Job', 'JobDeregistered', 'doomed', 'default', null],
        ['Evaluation', 'JobDeregistered', stop.body.EvalID, 'default', ['doomed', '']],
      ],
      [
        ['Job', 'JobDeregistered', 'doomed', 'default', null],
        ['Evaluation', 'JobDeregistered', purgeEval, 'default', ['doomed', '']],
      ],
    ]);
    expect(batches[1]?.events[0]?.Payload).toMatchObject({ Deleted: true, Job: { ID: 'doomed' } });
    expect(batches[0]?.events[0]?.Payload.Deleted).toBeUndefined();
    // A job that does not exist: Nomad's empty answer, nothing written.
    const index = await h.scheduler.state.currentIndex();
    const gone = await mgmt('DELETE', '/v1/job/doomed?purge=1');
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ EvalID: '', EvalCreateIndex: 0, JobModifyIndex: 0 });
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    expect((await mgmt('DELETE', '/v1/job/doomed?purge=maybe')).status).toBe(400);
  });

  it('a namespace with a live job cannot be deleted, and can once the job is purged', async () => {
    expect((await mgmt('PUT', '/v1/namespace', { Name: 'temp' })).status).toBe(200);
    expect((await mgmt('PUT', '/v1/jobs?namespace=temp', { Job: webJob('t') })).status).toBe(200);
    const refused = await mgmt('DELETE', '/v1/namespace/temp');
    expect(refused.status).toBe(409);
    expect(refused.text).toMatch(/non-terminal job "t"/);
    expect((await mgmt('DELETE', '/v1/job/t?namespace=temp&purge=true')).status).toBe(200);
    expect((await mgmt('DELETE', '/v1/namespace/temp')).status).toBe(200);
  });

  it('a blocking job read wakes on a registration and streams Job:<id> events', async () => {
    const index = await h.scheduler.state.currentIndex();
    const stream = await h.open(`/v1/event/stream?topic=Job:streamed&topic=Evaluation:streamed&index=${index}`, root);
    const waiting = mgmt('GET', `/v1/jobs?index=${index}&wait=5s`);
    await mgmt('PUT', '/v1/jobs', { Job: webJob('streamed') });
    const woke = await waiting;
    expect(Number(woke.headers.get('X-Nomad-Index'))).toBe(index + 1);
    const events = await stream.nextEvents();
    expect(events.Index).toBe(index + 1);
    expect(events.Events.map((event: { Topic: string; Key: string }) => [event.Topic, event.Key])).toEqual([
      ['Job', 'streamed'],
      ['Evaluation', expect.any(String)],
    ]);
    expect(events.Events[0].Payload.Job.ID).toBe('streamed');
    await stream.close();
  });
});
