import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { webJob, withReadyNode } from '../support/cluster-allocations.ts';
import { hostNetworkResources, type registerNode } from '../support/cluster-nodes.ts';
import { serviceRegistrationFields } from '../support/nomad-fields.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

type Json = Record<string, unknown>;
const keys = (value: unknown) => Object.keys(value as Json).sort();

/**
 * Nomad encodes `structs.Allocation`, `structs.Evaluation`, `NetworkResource`, `Port` and `AllocatedPortMapping` with
 * `_struct codec:",omitempty"` (go-msgpack's JSON handle leaves their empty fields out, in the HTTP API and in the
 * event stream); `Deployment`, `DeploymentState`, `ServiceRegistration` and `Job` have no omitempty and send every
 * field. Each case asserts the exact key set of a representative object, on every route that shows it.
 */
describe('Nomad’s omitted-empty JSON fields', () => {
  let h: SchedulerService;
  let root: string;
  let worker: EvaluationWorker;
  let node: Awaited<ReturnType<typeof registerNode>>['node'];
  let evalId: string;
  const get = async (path: string) => {
    const out = await h.call('GET', path, { token: root });
    expect(out.status).toBe(200);
    return out.body;
  };

  beforeAll(async () => {
    ({ h, root, worker, node } = await withReadyNode(await startSchedulerInMemory(), {
      NodeResources: hostNetworkResources(),
    }));
    const job = webJob('omit', {
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Update: { MaxParallel: 1 },
          Networks: [{ DynamicPorts: [{ Label: 'http' }] }],
          Tasks: [
            { Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } },
          ],
        },
      ],
    });
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect(out.status).toBe(200);
    evalId = out.body.EvalID;
    expect((await worker.runDue()).get(evalId)).toBe('complete');
  });
  afterAll(() => h.close());

  const allocationKeys = [
    'AllocModifyIndex',
    'AllocatedResources',
    'ClientStatus',
    'CreateIndex',
    'CreateTime',
    'DeploymentID',
    'DesiredStatus',
    'EvalID',
    'ID',
    'Job',
    'JobID',
    'JobVersion',
    'Metrics',
    'ModifyIndex',
    'ModifyTime',
    'Name',
    'Namespace',
    'NodeID',
    'NodeName',
    'TaskGroup',
  ];

  it('a new allocation: its empty fields are left out, on the read, the node’s list and the event', async () => {
    const [stored] = await h.scheduler.allocations.ofJob('default', 'omit');
    if (!stored) throw new Error('not placed');
    // The store holds every field, empty ones too: the shaping is the response's.
    expect(stored).toMatchObject({
      DesiredDescription: '',
      ClientDescription: '',
      PreviousAllocation: '',
      NextAllocation: '',
      FollowupEvalID: '',
      TaskStates: null,
      RescheduleTracker: null,
      DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
    });

    const read = await get(`/v1/allocation/${stored.ID}`);
    expect(keys(read)).toEqual(allocationKeys);
    expect(read).toMatchObject({ ID: stored.ID, DesiredStatus: 'run', ClientStatus: 'pending', JobVersion: 0 });
    // The job rehydrated is a `structs.Job` (no omitempty): its empty fields stay.
    expect(read.Job).toMatchObject({ ID: 'omit', ParentID: '', Stop: false });

    // The granted network: `NetworkResource` and its `Port`, and the `AllocatedPortMapping`, without empty fields.
    const shared = read.AllocatedResources.Shared;
    expect(shared.Networks).toHaveLength(1);
    expect(keys(shared.Networks[0])).toEqual(['DynamicPorts', 'IP', 'Mode']);
    const [port] = shared.Networks[0].DynamicPorts;
    expect(keys(port)).toEqual(['HostNetwork', 'Label', 'Value']);
    expect(port).toMatchObject({ Label: 'http', HostNetwork: 'default' });
    expect(port.Value).toBeGreaterThan(0);
    expect(shared.Ports.map(keys)).toEqual([['HostIP', 'Label', 'Value']]);

    const [listed] = await get(`/v1/node/${node.ID}/allocations`);
    expect(listed).toEqual(read);

    // The list stub (`AllocListStub`, no omitempty but `AllocatedResources`) keeps its empty fields.
    const [stub] = await get('/v1/job/omit/allocations');
    expect(stub).toMatchObject({ DesiredDescription: '', FollowupEvalID: '', NextAllocation: '' });
    expect(stub).not.toHaveProperty('AllocatedResources');
    const [withResources] = await get('/v1/allocations?resources=true');
    expect(withResources.AllocatedResources).toEqual(read.AllocatedResources);

    // The event (Nomad's events leave the job out): the same fields but `Job`.
    const events = (await h.scheduler.state.eventsAfter(0)).flatMap((batch) => batch.events);
    const event = events.find((e) => e.Topic === 'Allocation' && e.Key === stored.ID);
    if (!event) throw new Error('no Allocation event');
    const payload = (event.Payload as { Allocation: Json }).Allocation;
    expect(keys(payload)).toEqual(allocationKeys.filter((key) => key !== 'Job'));
  });

  it('an allocation the client ran and reported: its set fields appear, the still-empty ones do not', async () => {
    const [stored] = await h.scheduler.allocations.ofJob('default', 'omit');
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: stored?.ID, ClientStatus: 'running', ClientDescription: 'Tasks are running' }] },
    });
    expect(out.status).toBe(200);
    const read = await get(`/v1/allocation/${stored?.ID}`);
    expect(keys(read)).toEqual([...allocationKeys, 'ClientDescription'].sort());
    expect(read).toMatchObject({ ClientStatus: 'running', ClientDescription: 'Tasks are running' });
  });

  it('an evaluation: its empty fields are left out, on every route and the event', async () => {
    const expected = [
      'CreateIndex',
      'CreateTime',
      'ID',
      'JobID',
      'JobModifyIndex',
      'ModifyIndex',
      'ModifyTime',
      'Namespace',
      'Priority',
      'QueuedAllocations',
      'SnapshotIndex',
      'Status',
      'TriggeredBy',
      'Type',
    ];
    const stored = await h.scheduler.evaluations.get(evalId);
    // Stored in full: WaitUntil null (Nomad's zero time), the empty strings, maps and flags.
    expect(stored).toMatchObject({
      WaitUntil: null,
      NodeID: '',
      BlockedEval: '',
      FailedTGAllocs: null,
      AnnotatePlan: false,
    });

    const read = await get(`/v1/evaluation/${evalId}`);
    expect(keys(read)).toEqual(expected);
    expect(read).toMatchObject({
      ID: evalId,
      Status: 'complete',
      TriggeredBy: 'job-register',
      QueuedAllocations: { web: 0 },
    });
    expect((await get('/v1/evaluations')).find((e: Json) => e.ID === evalId)).toEqual(read);
    expect((await get('/v1/job/omit/evaluations')).find((e: Json) => e.ID === evalId)).toEqual(read);

    const events = (await h.scheduler.state.eventsAfter(0)).flatMap((batch) => batch.events);
    const registered = events.find((e) => e.Topic === 'Evaluation' && e.Key === evalId && e.Type === 'JobRegistered');
    // Written pending by the registration: no status description, deployment, snapshot or queue yet.
    if (!registered) throw new Error('no JobRegistered Evaluation event');
    expect(keys((registered.Payload as { Evaluation: Json }).Evaluation)).toEqual(
      ['CreateIndex', 'CreateTime', 'ID', 'JobID', 'JobModifyIndex', 'ModifyIndex', 'ModifyTime', 'Namespace']
        .concat(['Priority', 'Status', 'TriggeredBy', 'Type'])
        .sort(),
    );
  });

  it('a blocked evaluation keeps what it holds: the failures, the classes and its links', async () => {
    const out = await h.call('PUT', '/v1/jobs', {
      token: root,
      body: {
        Job: webJob('huge', {
          TaskGroups: [
            {
              Name: 'web',
              Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 10 ** 6 } }],
            },
          ],
        }),
      },
    });
    expect(out.status).toBe(200);
    // The worker reports the run as blocked: it completed and created the blocked evaluation.
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('blocked');
    const failed = await get(`/v1/evaluation/${out.body.EvalID}`);
    expect(failed).toHaveProperty('BlockedEval');
    expect(failed).toHaveProperty('FailedTGAllocs.web');
    const blocked = await get(`/v1/evaluation/${failed.BlockedEval}`);
    expect(blocked).toMatchObject({ Status: 'blocked', PreviousEval: out.body.EvalID });
    expect(keys(blocked)).toContain('ClassEligibility');
    expect(keys(blocked)).not.toContain('WaitUntil');
    expect(keys(blocked)).not.toContain('NextEval');
    expect(keys(blocked)).not.toContain('EscapedComputedClass');
  });

  it('deployments and their groups send every field (no omitempty in Nomad’s Deployment and DeploymentState)', async () => {
    const [deployment] = await get('/v1/job/omit/deployments');
    expect(keys(deployment)).toEqual(
      [
        'ID',
        'Namespace',
        'JobID',
        'JobVersion',
        'JobModifyIndex',
        'JobSpecModifyIndex',
        'JobCreateIndex',
        'IsMultiregion',
        'TaskGroups',
        'Status',
        'StatusDescription',
        'EvalPriority',
        'CreateIndex',
        'ModifyIndex',
        'CreateTime',
        'ModifyTime',
      ].sort(),
    );
    expect(deployment.JobVersion).toBe(0);
    expect(deployment.IsMultiregion).toBe(false);
    expect(keys(deployment.TaskGroups.web)).toEqual(
      [
        'AutoRevert',
        'AutoPromote',
        'ProgressDeadline',
        'RequireProgressBy',
        'Promoted',
        'PlacedCanaries',
        'DesiredCanaries',
        'DesiredTotal',
        'PlacedAllocs',
        'HealthyAllocs',
        'UnhealthyAllocs',
      ].sort(),
    );
  });

  it('a service registration sends every field (no omitempty in Nomad’s ServiceRegistration)', async () => {
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'omit');
    const registered = await h.call('PUT', '/v1/client/services', {
      token: node.SecretID,
      body: {
        Services: [
          {
            ID: `_nomad-task-${alloc?.ID}-group-web-api-http`,
            ServiceName: 'api',
            Namespace: 'default',
            NodeID: node.ID,
            Datacenter: 'dc1',
            JobID: 'omit',
            AllocID: alloc?.ID,
            Tags: [],
            Address: '127.0.0.1',
            Port: 0,
          },
        ],
      },
    });
    expect(registered.status).toBe(200);
    const [service] = await get('/v1/service/api');
    expect(keys(service)).toEqual(serviceRegistrationFields);
    expect(service).toMatchObject({ Port: 0, Tags: [] });
  });
});
