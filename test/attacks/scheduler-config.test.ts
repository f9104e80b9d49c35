/**
 * Attack class: changing how the scheduler places work, or using placement to evict others' work, past what a token
 * grants. The scheduler configuration (`/v1/operator/scheduler/configuration`) decides which job types may preempt:
 * reading it needs `operator:read`, changing it `operator:write` (Nomad's). A job's priority decides whom it may
 * preempt: Nomad bounds it to 1..100 and preempts only allocations of jobs at least 10 below.
 *
 * Attackers: an anonymous caller, a token with `operator { policy = "read" }`, a namespace writer (`submit-job`).
 * They try: to turn service preemption on (so their service jobs evict others) or pause the evaluation broker, with
 * and without `?cas=`; to register or dispatch jobs while an operator rejects registrations; to submit a job above
 * the priority bound; and, as a namespace writer of `team-b` at the highest allowed priority, to evict a `team-a`
 * allocation whose priority is within 10 of it, or a `team-a` allocation holding a device (GPU) they ask for: within
 * 10, with a service job while service preemption is off, with a device request whose constraints are not evaluated,
 * or by asking for more instances than the node has.
 * With the broker paused by an operator, they try to unpause it (with and without `?cas=`), and hand the stream's
 * consumer a record that claims an unpausing while the stored configuration still pauses (a forged or stale image).
 * They must never reach: a stored configuration, a job registered or dispatched while registrations are rejected, a
 * job above priority 100, an eviction Nomad's rules do not allow, an evaluation run while the broker is paused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK, jobPk } from '../../packages/core/src/scheduler/keys.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready } from '../support/cluster-allocations.ts';
import { attackCalls, teamsHarness } from '../support/cluster-attacks.ts';
import { gpuResources, registerNode } from '../support/cluster-nodes.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

const configPath = '/v1/operator/scheduler/configuration';
const enableAll = {
  PreemptionConfig: {
    SystemSchedulerEnabled: true,
    SysBatchSchedulerEnabled: true,
    BatchSchedulerEnabled: true,
    ServiceSchedulerEnabled: true,
  },
};

const job = (id: string, type: string, priority: number, cpu: number, extra: Record<string, unknown> = {}) => ({
  ...extra,
  ID: id,
  Type: type,
  Priority: priority,
  TaskGroups: [
    {
      Name: 'g',
      Count: 1,
      Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'sleep' }, Resources: { CPU: cpu, MemoryMB: 128 } }],
    },
  ],
});

describe('attack: the scheduler configuration and preemption past a token’s rights', () => {
  let h: SchedulerService;
  let root: string;
  let operatorReader: string;
  let teamB: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));
  /** The management token turns the rejection of job registrations on or off (system preemption as before). */
  const rejectRegistrations = async (reject: boolean) =>
    expect(
      (
        await as(root)('PUT', configPath, {
          RejectJobRegistration: reject,
          PreemptionConfig: { SystemSchedulerEnabled: true },
        })
      ).body.Updated,
    ).toBe(true);

  beforeAll(async () => {
    ({ h, root } = await teamsHarness());
    operatorReader = await tokenWith('operator { policy = "read" }');
    teamB = await tokenWith('namespace "team-b" { policy = "write" }');
  });
  afterAll(() => h.close());

  it('without operator:write nobody changes the configuration: 403, nothing stored', async () => {
    for (const token of [undefined, operatorReader, teamB]) {
      await refused(as(token)('PUT', configPath, enableAll));
      await refused(as(token)('POST', `${configPath}?cas=1`, enableAll));
      await refused(as(token)('PUT', configPath, { PauseEvalBroker: true }));
    }
    expect(await h.core.store.get(SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK)).toBeUndefined();
    expect((await h.scheduler.schedulerConfig.get()).PreemptionConfig.ServiceSchedulerEnabled).toBe(false);
  });

  it('reading it needs operator:read', async () => {
    await refused(as(undefined)('GET', configPath));
    await refused(as(teamB)('GET', configPath));
    const read = await as(operatorReader)('GET', configPath);
    expect(read.status).toBe(200);
    expect(read.body.SchedulerConfig.PreemptionConfig.ServiceSchedulerEnabled).toBe(false);
  });

  it('while registrations are rejected, a namespace writer registers and dispatches nothing; management still can', async () => {
    const parameterized = { ...job('param', 'batch', 50, 100), ParameterizedJob: {} };
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: parameterized })).status).toBe(200);
    await rejectRegistrations(true);
    const disabled = 'Job registration, dispatch, and scale are disabled by the scheduler configuration';
    await refused(
      as(teamB)('PUT', '/v1/jobs?namespace=team-b', { Job: job('blocked', 'service', 50, 100) }),
      403,
      disabled,
    );
    await refused(
      as(teamB)('POST', '/v1/job/blocked?namespace=team-b', { Job: job('blocked', 'service', 50, 100) }),
      403,
      disabled,
    );
    await refused(as(teamB)('PUT', '/v1/job/param/dispatch?namespace=team-b', {}), 403, disabled);
    expect(await h.core.store.get(jobPk('team-b'), 'blocked')).toBeUndefined();
    // The capability is checked first: a token without it still reads `Permission denied`.
    await refused(as(operatorReader)('PUT', '/v1/jobs?namespace=team-b', { Job: job('blocked', 'service', 50, 100) }));
    const management = await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('allowed', 'service', 50, 100) });
    expect(management.status).toBe(200);
    await rejectRegistrations(false);
    expect(
      (await as(teamB)('PUT', '/v1/jobs?namespace=team-b', { Job: job('later', 'service', 50, 100) })).status,
    ).toBe(200);
    // Purged, so that they hold no room in the eviction test below.
    for (const id of ['allowed', 'later', 'param'])
      expect((await as(root)('DELETE', `/v1/job/${id}?namespace=team-b&purge=true`)).status).toBe(200);
  });

  it('a submit-job token cannot set a priority outside 1..100', async () => {
    for (const priority of [101, 1000, -1, 2.5]) {
      const text = await refused(
        as(teamB)('PUT', '/v1/jobs?namespace=team-b', { Job: job(`p${priority}`, 'system', priority, 100) }),
        400,
      );
      expect(text).toContain('job priority must be between [1, 100]');
      expect(await h.core.store.get(jobPk('team-b'), `p${priority}`)).toBeUndefined();
    }
  });

  it('a team-b writer at priority 100 cannot evict a team-a allocation of priority 91 (a gap under 10)', async () => {
    const writer = await tokenWith('node { policy = "write" }');
    const { node } = await registerNode(h, writer);
    await ready(h, node);
    const worker = new EvaluationWorker(h.scheduler);
    // team-a's job fills the node (3800 of 3900 MHz) at priority 91.
    const kept = await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('kept', 'service', 91, 3800) });
    expect((await worker.runDue()).get(kept.body.EvalID)).toBe('complete');
    const [victim] = await h.scheduler.allocations.ofJob('team-a', 'kept');
    expect(victim?.NodeID).toBe(node.ID);
    // team-b's system job at the highest priority a job may have: preemption is on for system jobs by default.
    const out = await as(teamB)('PUT', '/v1/jobs?namespace=team-b', { Job: job('greedy', 'system', 100, 500) });
    expect(out.status).toBe(200);
    await worker.runDue();
    expect(await h.scheduler.allocations.ofJob('team-b', 'greedy')).toEqual([]);
    const evaluation = await h.scheduler.evaluations.get(out.body.EvalID);
    expect(evaluation?.FailedTGAllocs?.g).toMatchObject({ NodesExhausted: 1, DimensionExhausted: { cpu: 1 } });
    expect((await h.scheduler.allocations.get(victim?.ID as string))?.DesiredStatus).toBe('run');
    // The control: at priority 90 the same allocation is 10 below another team's job, which evicts it, as Nomad.
    await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('kept', 'service', 90, 3800) });
    await worker.runDue();
    await as(teamB)('PUT', '/v1/jobs?namespace=team-b', {
      Job: job('greedy', 'system', 100, 500, { Meta: { n: '2' } }),
    });
    await worker.runDue();
    const [placed] = await h.scheduler.allocations.ofJob('team-b', 'greedy');
    expect(placed?.PreemptedAllocations).toHaveLength(1);
  });
  it('a team-b writer cannot take a team-a allocation’s GPU past Nomad’s rules; only the allowed eviction happens', async () => {
    const writer = await tokenWith('node { policy = "write" }');
    const { node } = await registerNode(h, writer, { NodePool: 'gpu', NodeResources: gpuResources() });
    await ready(h, node);
    const worker = new EvaluationWorker(h.scheduler);
    const withGpu = (device: Record<string, unknown>) => (spec: ReturnType<typeof job>) => {
      const [group] = spec.TaskGroups;
      const [task] = group?.Tasks ?? [];
      if (task) (task.Resources as Record<string, unknown>).Devices = [device];
      return { ...spec, NodePool: 'gpu' };
    };
    const both = withGpu({ Name: 'nvidia/gpu', Count: 2 });
    const one = withGpu({ Name: 'nvidia/gpu', Count: 1 });
    // team-a's job holds both GPUs (little CPU) at priority 50.
    const kept = await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: both(job('gpu-kept', 'service', 50, 100)) });
    expect((await worker.runDue()).get(kept.body.EvalID)).toBe('complete');
    const [victim] = await h.scheduler.allocations.ofJob('team-a', 'gpu-kept');
    expect(victim?.NodeID).toBe(node.ID);
    const victimRuns = async () => (await h.scheduler.allocations.get(victim?.ID as string))?.DesiredStatus;
    const attempt = async (spec: Record<string, unknown>) => {
      const out = await as(teamB)('PUT', '/v1/jobs?namespace=team-b', { Job: spec });
      expect(out.status, out.text).toBe(200);
      await worker.runDue();
      return h.scheduler.evaluations.get(out.body.EvalID);
    };
    // A system job at priority 59: 9 above, under Nomad's gap of 10.
    const close = await attempt(one(job('gpu-close', 'system', 59, 100)));
    expect(close?.FailedTGAllocs?.g).toMatchObject({ DimensionExhausted: { 'devices: no devices match request': 1 } });
    expect(await h.scheduler.allocations.ofJob('team-b', 'gpu-close')).toEqual([]);
    expect(await victimRuns()).toBe('run');
    // A service job at 100 may not evict: service preemption is off by default.
    await attempt(one(job('gpu-service', 'service', 100, 100)));
    expect(await h.scheduler.allocations.ofJob('team-b', 'gpu-service')).toEqual([]);
    expect(await victimRuns()).toBe('run');
    // A request with device constraints (not evaluated here: it matches no device) evicts nothing.
    const constrained = withGpu({
      Name: 'nvidia/gpu',
      Count: 1,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation, sent as a job spec writes it
      Constraints: [{ LTarget: '${device.attr.memory}', RTarget: '1 GiB', Operand: '>=' }],
    });
    await attempt(constrained(job('gpu-constrained', 'system', 100, 100)));
    expect(await h.scheduler.allocations.ofJob('team-b', 'gpu-constrained')).toEqual([]);
    // More instances than the node has: nothing is evicted for a request that cannot be met.
    await attempt(withGpu({ Name: 'nvidia/gpu', Count: 3 })(job('gpu-three', 'system', 100, 100)));
    expect(await h.scheduler.allocations.ofJob('team-b', 'gpu-three')).toEqual([]);
    expect(await victimRuns()).toBe('run');
    // The control: a system job 50 above evicts it, as Nomad's PreemptForDevice does.
    await attempt(one(job('gpu-greedy', 'system', 100, 100)));
    const [placed] = await h.scheduler.allocations.ofJob('team-b', 'gpu-greedy');
    expect(placed?.PreemptedAllocations).toEqual([victim?.ID]);
    expect(await victimRuns()).toBe('evict');
  });

  it('with the broker paused, nobody without operator:write unpauses it, and a forged unpausing runs nothing', async () => {
    const writer = await tokenWith('node { policy = "write" }');
    const { node } = await registerNode(h, writer, { NodePool: 'held' });
    await ready(h, node);
    const pause = { PauseEvalBroker: true, PreemptionConfig: { SystemSchedulerEnabled: true } };
    expect((await as(root)('PUT', configPath, pause)).body.Updated).toBe(true);
    const paused = (await h.core.store.get(SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK)) as Record<string, unknown>;
    const out = await as(root)('PUT', '/v1/jobs?namespace=team-b', {
      Job: job('waits', 'service', 50, 100, { NodePool: 'held' }),
    });
    const evalId = out.body.EvalID as string;
    const unpause = { PauseEvalBroker: false, PreemptionConfig: { SystemSchedulerEnabled: true } };
    for (const token of [undefined, operatorReader, teamB]) {
      await refused(as(token)('PUT', configPath, unpause));
      await refused(as(token)('POST', `${configPath}?cas=${paused.ModifyIndex}`, unpause));
    }
    expect(await h.core.store.get(SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK)).toEqual(paused);
    // A record claiming the broker was unpaused: the consumer reads the configuration again and takes nothing.
    const forged = { eventName: 'MODIFY' as const, oldImage: paused, newImage: { ...paused, PauseEvalBroker: false } };
    // (What earlier tests left pending is due too: none of it is taken either.)
    const whilePaused = (await runTriggeredEvaluations(h.core, [forged])).outcomes;
    expect(whilePaused.get(evalId)).toBe('paused');
    expect(new Set(whilePaused.values())).toEqual(new Set(['paused']));
    expect((await h.scheduler.evaluations.get(evalId))?.Status).toBe('pending');
    expect(await h.scheduler.allocations.ofJob('team-b', 'waits')).toEqual([]);
    // The operator's unpausing runs it at once, from its own record.
    expect((await as(root)('PUT', configPath, unpause)).body.Updated).toBe(true);
    const unpaused = (await h.core.store.get(SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK)) as Record<string, unknown>;
    const record = { eventName: 'MODIFY' as const, oldImage: paused, newImage: unpaused };
    expect((await runTriggeredEvaluations(h.core, [record])).outcomes.get(evalId)).toBe('complete');
    expect((await h.scheduler.evaluations.get(evalId))?.Status).toBe('complete');
    expect(await h.scheduler.allocations.ofJob('team-b', 'waits')).toHaveLength(1);
  });
});
