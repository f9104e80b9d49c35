import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const sized = (id: string, count: number, task: Record<string, unknown> = {}) => {
  const job = webJob(id) as { TaskGroups: Array<Record<string, unknown> & { Tasks: Array<Record<string, unknown>> }> };
  const [group] = job.TaskGroups;
  if (!group) throw new Error('no group');
  group.Count = count;
  group.Tasks = group.Tasks.map((t) => ({ ...t, ...task }));
  return job as Record<string, unknown>;
};

describe('PUT /v1/job/:id/plan: a dry run through reconcile and placement (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  /** Every item of the table, as DynamoDB holds it (sorted), to show a plan wrote nothing. */
  const table = async () => {
    const items: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await h.client.send(
        new ScanCommand({ TableName: h.tableName, ...(start ? { ExclusiveStartKey: start as never } : {}) }),
      );
      for (const item of page.Items ?? []) items.push(JSON.stringify(item));
      start = page.LastEvaluatedKey;
    } while (start);
    return items.sort();
  };

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    for (let n = 0; n < 2; n++) {
      const { node } = await registerNode(h, tokens.writer);
      await ready(h, node);
    }
  });
  afterAll(() => h.close());

  it('plans a new job: three placements, an Added diff annotated "create", and nothing written', async () => {
    const before = await table();
    const out = await mgmt('PUT', '/v1/job/web/plan', { Job: sized('web', 3), Diff: true });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({
      Annotations: { DesiredTGUpdates: { web: { Place: 3, Ignore: 0, Stop: 0, DestructiveUpdate: 0 } } },
      FailedTGAllocs: null,
      JobModifyIndex: 0,
      CreatedEvals: null,
      NextPeriodicLaunch: '0001-01-01T00:00:00Z',
      Warnings: '',
      Index: 0,
    });
    const diff = out.body.Diff;
    expect(diff).toMatchObject({ Type: 'Added', ID: 'web' });
    expect(diff.Fields).toContainEqual({ Type: 'Added', Name: 'Priority', Old: '', New: '50', Annotations: null });
    expect(diff.Objects).toContainEqual({
      Type: 'Added',
      Name: 'Datacenters',
      Fields: [{ Type: 'Added', Name: 'Datacenters', Old: '', New: '*', Annotations: null }],
      Objects: null,
    });
    const [group] = diff.TaskGroups;
    expect(group).toMatchObject({ Type: 'Added', Name: 'web', Updates: { create: 3 } });
    expect(group.Fields).toContainEqual({ Type: 'Added', Name: 'Count', Old: '', New: '3', Annotations: null });
    expect(group.Tasks).toEqual([
      expect.objectContaining({ Type: 'Added', Name: 'server', Annotations: ['forces create'] }),
    ]);
    expect(await table()).toEqual(before);
    expect(await h.scheduler.jobs.get('default', 'web')).toBeUndefined();
  });

  it('plans a registered job’s changes against what runs: a count change, a destructive task change', async () => {
    const registered = await mgmt('PUT', '/v1/jobs', { Job: sized('api', 2) });
    expect(registered.status).toBe(200);
    await new EvaluationWorker(h.scheduler).runDue();
    expect((await h.scheduler.allocations.ofJob('default', 'api')).length).toBe(2);
    const modifyIndex = registered.body.JobModifyIndex;

    const before = await table();
    const scaled = await mgmt('POST', '/v1/job/api/plan', { Job: sized('api', 5), Diff: true });
    expect(scaled.status).toBe(200);
    expect(scaled.body.JobModifyIndex).toBe(modifyIndex);
    expect(scaled.body.Index).toBe(modifyIndex);
    expect(scaled.headers.get('X-Nomad-Index')).toBe(String(modifyIndex));
    // Scaling changes the job's version: the two running allocations are updated in place (Nomad's plan says so too).
    expect(scaled.body.Annotations.DesiredTGUpdates.web).toMatchObject({ Place: 3, InPlaceUpdate: 2, Ignore: 0 });
    expect(scaled.body.Diff.Type).toBe('Edited');
    const [group] = scaled.body.Diff.TaskGroups;
    expect(group).toMatchObject({ Type: 'Edited', Name: 'web', Updates: { create: 3, 'in-place update': 2 } });
    expect(group.Fields).toContainEqual({
      Type: 'Edited',
      Name: 'Count',
      Old: '2',
      New: '5',
      Annotations: ['forces create'],
    });
    expect(scaled.body.Diff.Fields).toContainEqual({
      Type: 'None',
      Name: 'Priority',
      Old: '50',
      New: '50',
      Annotations: null,
    });
    expect(group.Tasks[0]).toMatchObject({ Type: 'None', Name: 'server', Annotations: null });

    const changed = await mgmt('PUT', '/v1/job/api/plan', {
      Job: sized('api', 2, { Env: { MODE: 'blue' } }),
      Diff: true,
    });
    expect(changed.status).toBe(200);
    const updates = changed.body.Annotations.DesiredTGUpdates.web;
    expect(updates.DestructiveUpdate + updates.Ignore).toBe(2);
    expect(updates.DestructiveUpdate).toBeGreaterThan(0);
    const [task] = changed.body.Diff.TaskGroups[0].Tasks;
    expect(task).toMatchObject({ Type: 'Edited', Name: 'server', Annotations: ['forces create/destroy update'] });
    expect(task.Fields).toContainEqual({ Type: 'Added', Name: 'Env[MODE]', Old: '', New: 'blue', Annotations: null });

    const same = await mgmt('PUT', '/v1/job/api/plan', { Job: sized('api', 2), Diff: true });
    expect(same.status).toBe(200);
    expect(same.body.Diff.Type).toBe('None');
    expect(same.body.Annotations.DesiredTGUpdates.web).toMatchObject({ Ignore: 2, Place: 0 });
    expect(await table()).toEqual(before);
  });

  it('a job that does not fit: FailedTGAllocs with Nomad’s metrics and the blocked evaluation it would create', async () => {
    const before = await table();
    const out = await mgmt('PUT', '/v1/job/huge/plan', {
      Job: sized('huge', 1, { Resources: { CPU: 100, MemoryMB: 10_000_000 } }),
    });
    expect(out.status).toBe(200);
    expect(out.body.Diff).toBeNull();
    expect(out.body.FailedTGAllocs.web).toMatchObject({ NodesEvaluated: 2, CoalescedFailures: 0 });
    expect(out.body.FailedTGAllocs.web.DimensionExhausted).toEqual({ memory: 2 });
    expect(out.body.CreatedEvals).toEqual([
      expect.objectContaining({
        Status: 'blocked',
        JobID: 'huge',
        TriggeredBy: 'job-register',
        StatusDescription: 'created to place remaining allocations',
        QueuedAllocations: { web: 1 },
      }),
    ]);
    expect(await table()).toEqual(before);
  });

  it('a periodic job: its next launch from the clock', async () => {
    // The next quarter hour after the clock's now (the spec is `*/15 * * * *`, UTC).
    const quarter = 15 * 60_000;
    const expected = new Date(Math.floor(h.clock.now() / quarter) * quarter + quarter).toISOString();
    const out = await mgmt('PUT', '/v1/job/cron/plan', {
      Job: { ...sized('cron', 1), Type: 'batch', Periodic: { Enabled: true, SpecType: 'cron', Spec: '*/15 * * * *' } },
    });
    expect(out.status).toBe(200);
    expect(out.body.NextPeriodicLaunch).toBe(expected.replace('.000Z', 'Z'));
  });

  it('bad input is a 400 naming the problem, with nothing written', async () => {
    const before = await table();
    const cases: Array<[unknown, string, string]> = [
      [{}, '/v1/job/web/plan', 'Job must be specified'],
      [{ Job: { TaskGroups: [] } }, '/v1/job/web/plan', 'Job must have a valid ID'],
      [{ Job: sized('other', 1) }, '/v1/job/web/plan', 'Job ID does not match'],
      [{ Job: sized('web', -1) }, '/v1/job/web/plan', 'count'],
      [{ Job: { ...sized('web', 1), Namespace: 'nowhere' } }, '/v1/job/web/plan', 'nonexistent namespace'],
    ];
    for (const [body, path, message] of cases) {
      const out = await mgmt('PUT', path, body);
      expect(out.status, JSON.stringify(body)).toBe(400);
      expect(out.text).toContain(message);
    }
    expect(await table()).toEqual(before);
  });

  it('GET /v1/job/:id/versions?diffs=true: each version diffed from the one before, newest first', async () => {
    expect((await mgmt('PUT', '/v1/jobs', { Job: sized('ver', 1) })).status).toBe(200);
    expect((await mgmt('PUT', '/v1/jobs', { Job: sized('ver', 4) })).status).toBe(200);
    const one = await mgmt('GET', '/v1/job/ver/versions');
    expect(one.body.Diffs).toBeNull();
    const out = await mgmt('GET', '/v1/job/ver/versions?diffs=true');
    expect(out.status).toBe(200);
    expect(out.body.Versions.map((version: { Version: number }) => version.Version)).toEqual([1, 0]);
    expect(out.body.Diffs).toHaveLength(1);
    expect(out.body.Diffs[0]).toMatchObject({ Type: 'Edited', ID: 'ver' });
    expect(out.body.Diffs[0].TaskGroups[0].Fields).toContainEqual({
      Type: 'Edited',
      Name: 'Count',
      Old: '1',
      New: '4',
      Annotations: null,
    });
  });
});
