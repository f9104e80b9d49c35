/**
 * Attack class: forcing the garbage collection, or rewriting every job's summary, without a management token
 * (Nomad's `System.GarbageCollect` and `System.ReconcileJobSummaries`: `aclObj.IsManagement()` or permission denied).
 *
 * Attackers: anonymous (with an anonymous policy as wide as a namespace policy goes); a token holding `write` on
 * every namespace and `operator`/`node` write; a token scoped to namespace `default`; a node presenting its SecretID.
 * They try: `PUT /v1/system/gc` and `PUT /v1/system/reconcile/summaries`; the same paths with another method; a
 * threshold in the query or the body (thresholds are operator configuration only).
 * They also forge the forced collection's request item in the table (`sched#gc` / `forced`) with a lease a year ahead.
 * They must never reach: a finished job reaped early, a forced collection requested, a summary rewritten, or the
 * collection held off. Each refusal is a 403 (`Permission denied`; `ACL token not found` for the node's secret) that
 * writes nothing (no request is recorded); the finished job and its summary stay until a management token requests the
 * run, which then runs (a forged lease does not hold it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forcedGcKey, forcedGcPending } from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { runRequestedGc, sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { webJob, withReadyNode } from '../support/cluster-allocations.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attack: the garbage collection and summary reconciliation without management', () => {
  let h: SchedulerService;
  let root: string;
  let wide: string;
  let scoped: string;
  let node: { ID: string; SecretID: string };
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  const jobThere = async () => (await as(root)('GET', '/v1/job/done')).status === 200;

  beforeAll(async () => {
    ({ h, root, node } = await withReadyNode(await startSchedulerInMemory()));
    const job = webJob('done', {
      Type: 'batch',
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 20, MemoryMB: 16 } }],
        },
      ],
    });
    expect((await as(root)('PUT', '/v1/jobs', { Job: job })).status).toBe(200);
    await new EvaluationWorker(h.scheduler).runDue();
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'done');
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc?.ID, ClientStatus: 'complete' }] },
    });
    expect(out.status).toBe(200);
    expect((await as(root)('GET', '/v1/job/done')).body.Status).toBe('dead');
    wide = await tokenWith(
      'namespace "*" { policy = "write" }\nnode { policy = "write" }\noperator { policy = "write" }\nagent { policy = "write" }',
    );
    scoped = await tokenWith('namespace "default" { policy = "write" capabilities = ["submit-job", "purge-job"] }');
    expect(
      (
        await h.call('POST', '/v1/acl/policy/anonymous', {
          token: root,
          body: { Rules: 'namespace "*" { policy = "write" }\noperator { policy = "write" }' },
        })
      ).status,
    ).toBe(200);
  });
  afterAll(() => h.close());

  it('no token but management forces the collection or reconciles summaries; nothing is written', async () => {
    const summary = await h.scheduler.jobs.summaries.get('default', 'done');
    expect(summary).toBeDefined();
    for (const token of [undefined, wide, scoped, node.SecretID]) {
      for (const path of ['/v1/system/gc', '/v1/system/reconcile/summaries']) {
        // A node's SecretID is no ACL token at all.
        const text = token === node.SecretID ? 'ACL token not found' : 'Permission denied';
        await refused(() => as(token)('PUT', path), 403, text);
        expect(await forcedGcPending(h.core.store)).toBe(false);
      }
    }
    expect(await jobThere()).toBe(true);
    expect(await h.scheduler.jobs.summaries.get('default', 'done')).toEqual(summary);
  });

  it('another method or a threshold in the request reaps nothing early', async () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const before = await h.scheduler.state.currentIndex();
      const out = await as(wide)(method, '/v1/system/gc');
      expect(out.status).not.toBe(200);
      expect(await h.scheduler.state.currentIndex()).toBe(before);
      expect(await forcedGcPending(h.core.store)).toBe(false);
    }
    // The minute sweep under Nomad's thresholds: the job finished moments ago stays, whatever a caller sent.
    await as(wide)('PUT', '/v1/system/gc?threshold=0', { JobGCThreshold: '0s' });
    await sweepScheduler(h.core);
    expect(await jobThere()).toBe(true);
  });

  it('the management token requests it, and it runs though a forged lease claims it for a year', async () => {
    const out = await as(root)('PUT', '/v1/system/gc');
    expect([out.status, out.text]).toEqual([200, '']);
    // Queued, as Nomad's: answered before the run.
    expect(await jobThere()).toBe(true);
    await h.core.store.update(forcedGcKey, {
      set: { holder: 'attacker', until: h.core.clock.now() + 365 * 86_400_000 },
    });
    expect(await runRequestedGc(h.core)).toBe(1);
    expect(await forcedGcPending(h.core.store)).toBe(false);
    expect(await jobThere()).toBe(false);
    expect(await h.scheduler.jobs.summaries.get('default', 'done')).toBeUndefined();
  });
});
