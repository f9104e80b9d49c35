import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/**
 * Issue 41, "Bad input and faults": jobs that no node can take are an explanation (FailedTGAllocs and a blocked
 * evaluation, as Nomad's), never a 500; two concurrent submits of one job are both versions, one evaluation of the
 * job runs at a time, and what runs is the later version.
 */
const group = (task: Record<string, unknown>, extra: Record<string, unknown> = {}) => [
  {
    Name: 'web',
    Count: 1,
    Tasks: [
      {
        Name: 'server',
        Driver: 'raw_exec',
        Config: { command: 'python3' },
        Resources: { CPU: 100, MemoryMB: 64 },
        ...task,
      },
    ],
    ...extra,
  },
];

describe('jobs no node can take, and concurrent submits of one job (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startScheduler();
    ({ root, writer } = await nodeTokens(h));
    const { node } = await registerNode(h, writer);
    await ready(h, node);
  });
  afterAll(() => h.close());

  /** Each job, and the explanation Nomad's metrics give for it (`AllocMetric` of the failed group). */
  const impossible: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    [
      'an unknown driver',
      { TaskGroups: group({ Driver: 'warp-drive' }) },
      { NodesFiltered: 1, ConstraintFiltered: { 'missing drivers': 1 }, NodesExhausted: 0 },
    ],
    [
      'an impossible constraint',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
      { Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: 'plan9', Operand: '=' }], TaskGroups: group({}) },
      { NodesFiltered: 1, ConstraintFiltered: { '${attr.kernel.name} = plan9': 1 }, NodesExhausted: 0 },
    ],
    [
      'more memory than any node has',
      { TaskGroups: group({ Resources: { CPU: 100, MemoryMB: 10_000_000 } }) },
      { NodesFiltered: 0, NodesExhausted: 1, DimensionExhausted: { memory: 1 } },
    ],
    [
      'more CPU than any node has',
      { TaskGroups: group({ Resources: { CPU: 10_000_000, MemoryMB: 64 } }) },
      { NodesFiltered: 0, NodesExhausted: 1, DimensionExhausted: { cpu: 1 } },
    ],
  ];

  for (const [what, spec, explanation] of impossible) {
    it(`${what}: the plan and the run explain it in FailedTGAllocs, and the job blocks`, async () => {
      const id = `x-${what.replace(/\W+/g, '-')}`;
      const plan = await mgmt('PUT', `/v1/job/${id}/plan`, { Job: webJob(id, spec) });
      expect(plan.status, plan.text).toBe(200);
      expect(plan.body.FailedTGAllocs.web).toMatchObject({ NodesEvaluated: 1, CoalescedFailures: 0, ...explanation });
      expect(await h.scheduler.allocations.ofJob('default', id)).toEqual([]);

      const submitted = await mgmt('PUT', '/v1/jobs', { Job: webJob(id, spec) });
      expect(submitted.status, submitted.text).toBe(200);
      expect((await new EvaluationWorker(h.scheduler).runDue()).get(submitted.body.EvalID)).toBe('blocked');
      const evaluation = (await mgmt('GET', `/v1/evaluation/${submitted.body.EvalID}`)).body;
      const { AllocationTime: _ran, ...explained } = evaluation.FailedTGAllocs.web;
      const { AllocationTime: _planned, ...planned } = plan.body.FailedTGAllocs.web;
      expect(explained).toEqual(planned);
      expect((await mgmt('GET', `/v1/evaluation/${evaluation.BlockedEval}`)).body.Status).toBe('blocked');
      expect(await h.scheduler.allocations.ofJob('default', id)).toEqual([]);
      expect((await mgmt('GET', `/v1/job/${id}`)).body.Status).toBe('pending');
    });
  }

  it('two concurrent submits of one job: both versions kept, one evaluation at a time, the later version runs', async () => {
    const spec = (n: string) => webJob('twice', { Meta: { n }, TaskGroups: group({}, { Count: 2 }) });
    const [a, b] = await Promise.all([
      mgmt('PUT', '/v1/job/twice', { Job: spec('a') }),
      mgmt('PUT', '/v1/job/twice', { Job: spec('b') }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const [first, later] = [a, b].sort((x, y) => x.body.JobModifyIndex - y.body.JobModifyIndex) as [typeof a, typeof b];
    expect(later.body.JobModifyIndex).toBeGreaterThan(first.body.JobModifyIndex);
    const versions = (await mgmt('GET', '/v1/job/twice/versions')).body.Versions as Array<{
      Version: number;
      Meta: Record<string, string>;
    }>;
    expect(versions.map((v) => v.Version)).toEqual([1, 0]);
    const laterMeta = versions[0]?.Meta.n as string;
    expect(['a', 'b']).toContain(laterMeta);
    expect((await mgmt('GET', '/v1/job/twice')).body).toMatchObject({ Version: 1, Meta: { n: laterMeta } });

    // Two workers take both evaluations at once: the job's lease lets one run; the other is busy, run later.
    const evaluations = await Promise.all(
      [first.body.EvalID, later.body.EvalID].map(async (id) => (await h.scheduler.evaluations.get(id)) as never),
    );
    const outcomes = await Promise.all(
      evaluations.map((evaluation) => new EvaluationWorker(h.scheduler).run(evaluation)),
    );
    expect([...outcomes].sort()).toEqual(['busy', 'complete']);
    await new EvaluationWorker(h.scheduler).runDue();
    const live = (await h.scheduler.allocations.ofJob('default', 'twice')).filter((x) => x.DesiredStatus === 'run');
    expect(live).toHaveLength(2);
    expect(live.every((alloc) => alloc.JobVersion === 1)).toBe(true);
    // What runs is the later spec, rehydrated from its version.
    const rehydrated = await h.scheduler.allocations.withJob(live[0] as (typeof live)[number]);
    expect(rehydrated.Job?.Meta).toEqual({ n: laterMeta });
    expect((await mgmt('GET', `/v1/evaluation/${later.body.EvalID}`)).body.Status).toBe('complete');
  });
});
