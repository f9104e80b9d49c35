/**
 * Attack class: a job's actions past what a token's namespace rules grant (Nomad's `Job.Plan`, `Job.Evaluate`,
 * `Job.Dispatch`, `nomad/job_endpoint.go`).
 *
 * Attackers: a `read-job` token (namespace `read` policy); a token of namespace `team-a` (write) reaching `team-b`; an
 * anonymous caller; a `dispatch-job`-only token.
 * They try: planning a job (which would disclose another namespace's stored job through the diff, and its nodes'
 * capacity through the placement metrics), by query, by the job's own Namespace, or by the body's; evaluating and
 * dispatching another namespace's job; dispatching a job that is not parameterized, or with an oversized payload.
 * They must never reach: a plan answer about another namespace's job, any write by a plan (even when allowed), an
 * evaluation or child job they have no right to. Each refusal is a 403 `Permission denied` (400 for bad input) with
 * the index unmoved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPk } from '../../packages/core/src/scheduler/keys.ts';
import { attackCalls, teamsHarness } from '../support/cluster-attacks.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

const job = (id: string, overrides: Record<string, unknown> = {}) => ({
  ID: id,
  TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Env: { SECRET: 'b-only' } }] }],
  ...overrides,
});

describe('attack: job plan, evaluate and dispatch past their namespace rules', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let teamA: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    ({ h, root } = await teamsHarness());
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('secret-job') })).status).toBe(200);
    reader = await tokenWith('namespace "team-a" { policy = "read" }');
    teamA = await tokenWith('namespace "team-a" { policy = "write" }');
  });
  afterAll(() => h.close());

  it('a read-job token and an anonymous caller cannot plan', async () => {
    await refused(as(reader)('PUT', '/v1/job/mine/plan?namespace=team-a', { Job: job('mine'), Diff: true }));
    await refused(as(undefined)('PUT', '/v1/job/anon/plan', { Job: job('anon') }));
  });

  it('a namespace A token cannot plan into namespace B by query, by the job’s Namespace or by the body’s', async () => {
    const a = as(teamA);
    const body = { Job: job('secret-job'), Diff: true };
    for (const text of [
      await refused(a('PUT', '/v1/job/secret-job/plan?namespace=team-b', body)),
      await refused(
        a('PUT', '/v1/job/secret-job/plan?namespace=team-a', {
          ...body,
          Job: job('secret-job', { Namespace: 'team-b' }),
        }),
      ),
      await refused(a('POST', '/v1/job/secret-job/plan', { ...body, Namespace: 'team-b' })),
    ])
      expect(text).not.toContain('b-only');
  });

  it('an allowed plan writes nothing: no job, no evaluation, the index unmoved', async () => {
    const before = await h.scheduler.state.currentIndex();
    const evaluations = (await h.scheduler.evaluations.list()).length;
    const out = await as(teamA)('PUT', '/v1/job/planned/plan?namespace=team-a', { Job: job('planned'), Diff: true });
    expect(out.status).toBe(200);
    expect(out.body.Diff.Type).toBe('Added');
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await h.core.store.get(jobPk('team-a'), 'planned')).toBeUndefined();
    expect((await h.scheduler.evaluations.list()).length).toBe(evaluations);
  });

  it('a read-job token cannot evaluate or dispatch; a namespace A token cannot reach namespace B’s job', async () => {
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('a-job') })).status).toBe(200);
    const param = job('b-param', { Type: 'batch', ParameterizedJob: { Payload: 'optional' } });
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: param })).status).toBe(200);
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: { ...param, ID: 'a-param' } })).status).toBe(200);
    await refused(as(reader)('PUT', '/v1/job/a-job/evaluate?namespace=team-a', { JobID: 'a-job' }));
    await refused(as(reader)('PUT', '/v1/job/a-param/dispatch?namespace=team-a', {}));
    await refused(as(undefined)('PUT', '/v1/job/a-param/dispatch?namespace=team-a', {}));
    await refused(as(teamA)('PUT', '/v1/job/secret-job/evaluate?namespace=team-b', { JobID: 'secret-job' }));
    await refused(as(teamA)('PUT', '/v1/job/b-param/dispatch?namespace=team-b', {}));
    await refused(as(teamA)('PUT', '/v1/job/b-param/dispatch', { Namespace: 'team-b' }));
    expect((await h.scheduler.jobs.list('team-b')).map((stored) => stored.ID)).toEqual(['b-param', 'secret-job']);
    // dispatch-job alone dispatches but neither plans nor evaluates.
    const dispatcher = await tokenWith('namespace "team-a" { capabilities = ["dispatch-job"] }');
    await refused(as(dispatcher)('PUT', '/v1/job/a-job/plan?namespace=team-a', { Job: job('a-job') }));
    await refused(as(dispatcher)('PUT', '/v1/job/a-job/evaluate?namespace=team-a', {}));
    expect((await as(dispatcher)('PUT', '/v1/job/a-param/dispatch?namespace=team-a', {})).status).toBe(200);
  });

  it('dispatching a job that is not parameterized, or an oversized payload, is a 400 that writes nothing', async () => {
    const a = as(teamA);
    const jobs = (await h.scheduler.jobs.list('team-a')).length;
    expect(await refused(a('PUT', '/v1/job/a-job/dispatch?namespace=team-a', {}), 400)).toContain(
      'is not a parameterized job',
    );
    const big = Buffer.alloc(64 * 1024, 7).toString('base64');
    expect(await refused(a('PUT', '/v1/job/a-param/dispatch?namespace=team-a', { Payload: big }), 400)).toContain(
      'Payload exceeds maximum size',
    );
    expect((await h.scheduler.jobs.list('team-a')).length).toBe(jobs);
  });
});
