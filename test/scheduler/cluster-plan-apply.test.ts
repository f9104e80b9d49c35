import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker, evalLeaseKey } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, ready, reportAllocs } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

/** A job of `count` allocations of `cpu` MHz and `memory` MB each, in group `web`. */
const sizedJob = (id: string, count: number, cpu = 500, memory = 256, overrides: Record<string, unknown> = {}) =>
  groupJob(id, { count, cpu, memoryMB: memory }, overrides);

describe('the evaluation worker and plan apply, end to end (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const nodes: Registered[] = [];
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const live = async (job: string, namespace = 'default') =>
    (await h.scheduler.allocations.ofJob(namespace, job)).filter(
      (alloc) => alloc.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(alloc.ClientStatus),
    );
  const eventsAt = async (from: number) => (await h.scheduler.state.eventsAfter(from)).flatMap((batch) => batch.events);

  beforeAll(async () => {
    h = await startScheduler();
    ({ root, writer } = await nodeTokens(h));
    for (let n = 0; n < 2; n++) {
      const { node } = await registerNode(h, writer);
      await ready(h, node);
      nodes.push(node);
    }
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  it('places a submitted job: allocations on the nodes, the evaluation complete, the job running, the events', async () => {
    const before = await h.scheduler.state.currentIndex();
    const submitted = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('web', 3) });
    expect(submitted.status).toBe(200);
    const outcomes = await worker.runDue();
    expect(outcomes.get(submitted.body.EvalID)).toBe('complete');

    const allocs = await live('web');
    expect(allocs).toHaveLength(3);
    expect(allocs.map((alloc) => alloc.Name).sort()).toEqual(['web.web[0]', 'web.web[1]', 'web.web[2]']);
    for (const alloc of allocs) {
      expect(nodes.map((node) => node.ID)).toContain(alloc.NodeID);
      expect(alloc).toMatchObject({ EvalID: submitted.body.EvalID, JobVersion: 0, ClientStatus: 'pending' });
      expect(alloc.AllocatedResources.Tasks.server?.Cpu.CpuShares).toBe(500);
    }
    const evaluation = (await mgmt('GET', `/v1/evaluation/${submitted.body.EvalID}`)).body;
    expect(evaluation).toMatchObject({ Status: 'complete', QueuedAllocations: { web: 0 } });
    // No failures: Nomad's Evaluation (omitempty) leaves FailedTGAllocs out.
    expect(evaluation).not.toHaveProperty('FailedTGAllocs');
    expect((await mgmt('GET', '/v1/job/web')).body.Status).toBe('running');
    expect((await mgmt('GET', `/v1/evaluation/${submitted.body.EvalID}/allocations`)).body).toHaveLength(3);
    expect((await mgmt('GET', '/v1/job/web/summary')).body.Summary).toEqual({
      web: { Queued: 0, Complete: 0, Failed: 0, Running: 0, Starting: 3, Lost: 0, Unknown: 0 },
    });

    // Each node's map and AllocIndex announce its placements.
    for (const node of nodes) {
      const mine = allocs.filter((alloc) => alloc.NodeID === node.ID);
      const map = await h.call('GET', `/v1/client/node/${node.ID}/allocations`, { token: node.SecretID });
      expect(Object.keys(map.body.Allocs).sort()).toEqual(mine.map((alloc) => alloc.ID).sort());
      if (mine.length > 0) expect((await h.scheduler.nodes.beat(node.ID))?.allocIndex).toBeGreaterThan(before);
    }

    const events = await eventsAt(before + 1);
    const planResults = events.filter((event) => event.Type === 'PlanResult');
    // The job's update block (Nomad's default) makes a deployment: written, with its event, in the same plan.
    expect(planResults.map((event) => event.Topic)).toEqual(['Allocation', 'Allocation', 'Allocation', 'Deployment']);
    const allocResults = planResults.filter((event) => event.Topic === 'Allocation');
    // Nomad's Allocation events carry no job (nil, left out by the omitempty encoding).
    expect(allocResults.every((event) => !('Job' in (event.Payload.Allocation as object)))).toBe(true);
    const deployment = await h.scheduler.deployments.latest('default', 'web');
    expect(planResults[3]).toMatchObject({ Key: deployment?.ID, FilterKeys: ['web'] });
    expect(allocs.every((alloc) => alloc.DeploymentID === deployment?.ID)).toBe(true);
    const updated = events.filter((event) => event.Type === 'EvaluationUpdated');
    expect(updated.map((event) => [event.Topic, event.Key])).toEqual([
      ['Evaluation', submitted.body.EvalID],
      ['Job', 'web'],
    ]);
    expect(updated[1]?.Payload.Job).toMatchObject({ Status: 'running' });
  });

  it('scales down: the highest-numbered allocations stop', async () => {
    const out = await mgmt('PUT', '/v1/job/web', { Job: sizedJob('web', 1) });
    expect(await worker.runDue()).toEqual(new Map([[out.body.EvalID, 'complete']]));
    const allocs = await h.scheduler.allocations.ofJob('default', 'web');
    expect((await live('web')).map((alloc) => alloc.Name)).toEqual(['web.web[0]']);
    const stopped = allocs.filter((alloc) => alloc.DesiredStatus === 'stop');
    expect(stopped.map((alloc) => alloc.Name).sort()).toEqual(['web.web[1]', 'web.web[2]']);
    expect(stopped[0]?.DesiredDescription).not.toBe('');
    // A stopped allocation stays in its node's map until the agent reports it stopped.
    const node = nodes.find((candidate) => candidate.ID === stopped[0]?.NodeID) as Registered;
    const map = await h.call('GET', `/v1/client/node/${node.ID}/allocations`, { token: node.SecretID });
    expect(map.body.Allocs[stopped[0]?.ID as string]).toBe(stopped[0]?.AllocModifyIndex);
  });

  it('stops one allocation through the API: it is stopped and replaced', async () => {
    const [alloc] = await live('web');
    const out = await mgmt('PUT', `/v1/allocation/${alloc?.ID}/stop`);
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const stopped = await h.scheduler.allocations.get(alloc?.ID as string);
    expect(stopped?.DesiredStatus).toBe('stop');
    const [replacement] = await live('web');
    expect(replacement?.ID).not.toBe(alloc?.ID);
    expect(replacement).toMatchObject({ Name: 'web.web[0]', EvalID: out.body.EvalID });
  });

  it('runs only the newest pending evaluation of a job and cancels the older ones', async () => {
    const first = await mgmt('PUT', '/v1/job/web', { Job: sizedJob('web', 2) });
    const second = await mgmt('PUT', '/v1/job/web', { Job: sizedJob('web', 2, 500, 256, { Meta: { n: '2' } }) });
    const outcomes = await worker.runDue();
    expect(outcomes.get(second.body.EvalID)).toBe('complete');
    expect(outcomes.has(first.body.EvalID)).toBe(false);
    const older = (await mgmt('GET', `/v1/evaluation/${first.body.EvalID}`)).body;
    expect(older.Status).toBe('canceled');
    expect(older.StatusDescription).toContain(second.body.EvalID);
    expect(await live('web')).toHaveLength(2);
  });

  it('blocks a job that fits no node, and places it when a node with room registers', async () => {
    const big = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('big', 1, 500, 8000) });
    expect((await worker.runDue()).get(big.body.EvalID)).toBe('blocked');
    const evaluation = (await mgmt('GET', `/v1/evaluation/${big.body.EvalID}`)).body;
    expect(evaluation.Status).toBe('complete');
    expect(evaluation.FailedTGAllocs.web).toMatchObject({ NodesEvaluated: expect.any(Number) });
    expect(evaluation.QueuedAllocations).toEqual({ web: 1 });
    const blocked = (await mgmt('GET', `/v1/evaluation/${evaluation.BlockedEval}`)).body;
    expect(blocked).toMatchObject({ Status: 'blocked', PreviousEval: big.body.EvalID, JobID: 'big' });
    expect((await mgmt('GET', '/v1/job/big')).body.Status).toBe('pending');
    expect((await mgmt('GET', '/v1/job/big/summary')).body.Summary.web).toMatchObject({ Queued: 1, Starting: 0 });

    // Nothing changed: the blocked evaluation is not run again.
    expect((await worker.runDue()).size).toBe(0);

    const { node } = await registerNode(h, writer, {
      NodeResources: {
        Cpu: { CpuShares: 8000, TotalCpuCores: 4, ReservableCpuCores: [0, 1, 2, 3] },
        Memory: { MemoryMB: 16_384 },
        Disk: { DiskMB: 50_000 },
        Networks: [],
        NodeNetworks: [],
        Devices: [],
        MinDynamicPort: 20_000,
        MaxDynamicPort: 32_000,
      },
    });
    await ready(h, node);
    nodes.push(node);
    expect((await worker.runDue()).get(blocked.ID)).toBe('complete');
    const [placed] = await live('big');
    expect(placed?.NodeID).toBe(node.ID);
    expect((await mgmt('GET', `/v1/evaluation/${blocked.ID}`)).body.Status).toBe('complete');
    expect((await mgmt('GET', '/v1/job/big')).body.Status).toBe('running');
  });

  it('deregistering a job stops its allocations and the job is dead once they are', async () => {
    const out = await mgmt('DELETE', '/v1/job/big');
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    expect(await live('big')).toEqual([]);
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'big');
    expect(alloc?.DesiredStatus).toBe('stop');
    expect((await mgmt('GET', '/v1/job/big')).body.Status).toBe('dead');
  });

  it('two evaluations at once never over-commit a node', async () => {
    // Room on the big node for one of the two 6,000 MHz jobs only (the small ones have no room at all).
    const a = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('race-a', 1, 6000, 256) });
    const b = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('race-b', 1, 6000, 256) });
    const evaluations = await Promise.all(
      [a.body.EvalID, b.body.EvalID].map(async (id) => (await h.scheduler.evaluations.get(id)) as never),
    );
    const outcomes = await Promise.all(
      evaluations.map((evaluation) => new EvaluationWorker(h.scheduler).run(evaluation)),
    );
    expect(outcomes.sort()).toEqual(['blocked', 'complete']);
    const placed = [...(await live('race-a')), ...(await live('race-b'))];
    expect(placed).toHaveLength(1);
    const onBig = (await h.scheduler.allocations.onNode(nodes[2]?.ID as string)).filter(
      (alloc) => alloc.DesiredStatus === 'run' && alloc.ClientStatus !== 'complete',
    );
    const cpu = onBig.reduce((sum, alloc) => sum + (alloc.AllocatedResources.Tasks.server?.Cpu.CpuShares ?? 0), 0);
    expect(cpu).toBeLessThanOrEqual(8000 - 100);
  });

  it('a node that misses its heartbeat: its allocations are lost and replaced, by the sweep', async () => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('svc', 3) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const placed = await live('svc');
    const gone = nodes.find((node) => placed.some((alloc) => alloc.NodeID === node.ID)) as Registered;
    const lostIds = placed.filter((alloc) => alloc.NodeID === gone.ID).map((alloc) => alloc.ID);
    // One of them registered a service: it goes when the allocation is lost.
    const service = await h.call('PUT', '/v1/client/services', {
      token: gone.SecretID,
      body: {
        Services: [
          {
            ID: `_nomad-task-${lostIds[0]}-server-svc-http`,
            ServiceName: 'svc',
            Namespace: 'default',
            NodeID: gone.ID,
            Datacenter: '',
            JobID: 'svc',
            AllocID: lostIds[0],
            Tags: [],
            Address: '10.0.0.9',
            Port: 21_000,
          },
        ],
      },
    });
    expect(service.status).toBe(200);
    const before = await h.scheduler.state.currentIndex();
    // Its deadline passes (the others' not: they beat on time).
    await h.scheduler.state.store.update(ClusterNodes.beatKey(gone.ID), { set: { deadline: 0 } });
    await sweepScheduler(h.core);

    expect((await h.scheduler.nodes.get(gone.ID))?.Status).toBe('down');
    for (const id of lostIds)
      expect(await h.scheduler.allocations.get(id)).toMatchObject({ DesiredStatus: 'stop', ClientStatus: 'lost' });
    expect((await mgmt('GET', '/v1/service/svc')).body).toEqual([]);
    const now = await live('svc');
    expect(now).toHaveLength(3);
    expect(now.some((alloc) => alloc.NodeID === gone.ID)).toBe(false);
    const events = await eventsAt(before);
    const nodeUpdate = events.find(
      (event) =>
        event.Topic === 'Evaluation' &&
        event.Key !== undefined &&
        (event.Payload.Evaluation as { TriggeredBy: string; JobID: string }).TriggeredBy === 'node-update' &&
        (event.Payload.Evaluation as { JobID: string }).JobID === 'svc',
    );
    expect(nodeUpdate).toMatchObject({
      Type: 'EvaluationUpdated',
      Payload: { Evaluation: { NodeID: gone.ID, JobID: 'svc' } },
    });
    const downAt = events.find((event) => event.Topic === 'Node' && event.Key === gone.ID)?.Index;
    expect(nodeUpdate?.Index).toBe(downAt);
  });

  it('a drain that starts evaluates the jobs on the node and migrates their allocations', async () => {
    // Room for the migrated allocation: a fresh node.
    const { node: fresh } = await registerNode(h, writer);
    await ready(h, fresh);
    nodes.push(fresh);
    // The agents report the allocations running and healthy: a drain moves an allocation only while the others are.
    const running = await live('svc');
    for (const node of nodes) {
      const mine = running.filter((candidate) => candidate.NodeID === node.ID);
      if (mine.length === 0) continue;
      const report = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
        token: node.SecretID,
        body: {
          Allocs: mine.map((candidate) => ({
            ID: candidate.ID,
            ClientStatus: 'running',
            DeploymentStatus: { Healthy: true },
          })),
        },
      });
      expect(report.status).toBe(200);
    }
    const [alloc] = running.filter((candidate) => candidate.NodeID !== nodes[2]?.ID);
    const drained = nodes.find((node) => node.ID === alloc?.NodeID) as Registered;
    const out = await mgmt('PUT', `/v1/node/${drained.ID}/drain`, { DrainSpec: { Deadline: 3600e9 } });
    expect(out.status).toBe(200);
    const evaluation = (await h.scheduler.evaluations.ofJob('default', 'svc')).find(
      (candidate) => candidate.TriggeredBy === 'node-drain',
    );
    expect(evaluation).toMatchObject({ Status: 'pending', NodeID: drained.ID });
    expect((await worker.runDue()).get(evaluation?.ID as string)).toBe('complete');
    const migrated = await h.scheduler.allocations.get(alloc?.ID as string);
    expect(migrated?.DesiredStatus).toBe('stop');
    expect((await live('svc')).some((candidate) => candidate.PreviousAllocation === alloc?.ID)).toBe(true);
  });

  it('a drain moves a job’s allocations one at a time, the next when the one moved before is healthy', async () => {
    const report = (node: Registered, ids: string[]) =>
      reportAllocs(
        h,
        node,
        ids.map((ID) => ({ ID, ClientStatus: 'running' })),
      );
    const { node: first } = await registerNode(h, writer, { NodePool: 'drainpool' });
    await ready(h, first);
    const out = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('mover', 2, 100, 64, { NodePool: 'drainpool' }) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const placed = await live('mover');
    expect(placed.map((alloc) => alloc.NodeID)).toEqual([first.ID, first.ID]);
    await report(
      first,
      placed.map((alloc) => alloc.ID),
    );
    const { node: second } = await registerNode(h, writer, { NodePool: 'drainpool' });
    await ready(h, second);
    nodes.push(first, second);

    expect((await mgmt('PUT', `/v1/node/${first.ID}/drain`, { DrainSpec: { Deadline: 3600e9 } })).status).toBe(200);
    await worker.runDue();
    const moved = (await live('mover')).filter((alloc) => alloc.NodeID === second.ID);
    expect(moved).toHaveLength(1);
    expect((await live('mover')).filter((alloc) => alloc.NodeID === first.ID)).toHaveLength(1);

    // The replacement runs: the job is evaluated again and the last one moves.
    await report(
      second,
      moved.map((alloc) => alloc.ID),
    );
    const next = (await h.scheduler.evaluations.ofJob('default', 'mover')).find(
      (evaluation) => evaluation.TriggeredBy === 'node-drain' && evaluation.Status === 'pending',
    );
    expect(next).toBeDefined();
    expect((await worker.runDue()).get(next?.ID as string)).toBe('complete');
    const after = await live('mover');
    expect(after.map((alloc) => alloc.NodeID)).toEqual([second.ID, second.ID]);
  });

  it('a system job runs on every ready node, and on a node that becomes ready', async () => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('agent', 1, 20, 16, { Type: 'system' }) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const takers = (await h.scheduler.nodes.list()).filter(
      (node) =>
        node.NodePool === 'default' &&
        node.Status === 'ready' &&
        node.SchedulingEligibility === 'eligible' &&
        !node.DrainStrategy,
    );
    expect((await live('agent')).map((alloc) => alloc.NodeID).sort()).toEqual(takers.map((node) => node.ID).sort());

    const { node } = await registerNode(h, writer);
    await ready(h, node);
    const evaluation = (await h.scheduler.evaluations.ofJob('default', 'agent')).find(
      (candidate) => candidate.TriggeredBy === 'node-update' && candidate.NodeID === node.ID,
    );
    expect(evaluation?.Status).toBe('pending');
    expect((await worker.runDue()).get(evaluation?.ID as string)).toBe('complete');
    expect((await live('agent')).filter((alloc) => alloc.NodeID === node.ID)).toHaveLength(1);
  });

  it('an evaluation past the delivery limit is failed', async () => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: sizedJob('doomed', 1) });
    // Three earlier deliveries that never finished (a worker killed each time): the lease says so.
    const key = evalLeaseKey('default', 'doomed');
    await h.scheduler.state.store.put({ ...key, evalId: out.body.EvalID, holder: 'gone', until: 0, attempts: 3 });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('failed');
    const evaluation = (await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).body;
    expect(evaluation).toMatchObject({ Status: 'failed', StatusDescription: 'evaluation reached delivery limit (3)' });
    expect(await h.scheduler.allocations.ofJob('default', 'doomed')).toEqual([]);
    expect(await h.scheduler.state.store.get(key.pk, key.sk)).toBeUndefined();
  });
});
