/**
 * Attack class: reaching jobs and evaluations past what a token's namespace rules grant (Nomad's
 * `nomad/job_endpoint.go`, `nomad/eval_endpoint.go`, `nomad/event_endpoint.go`).
 *
 * Attackers: a `read-job` token (namespace `read` policy) submitting; a token of namespace `team-a` (write) reaching
 * `team-b`; a `list-jobs`-only token reading a job; an anonymous caller; a token whose job names another namespace
 * than its query; oversized and malformed jobs.
 * They try: registering, stopping and purging jobs outside their rights, registering into another namespace through
 * the job's own Namespace field, reading, listing (`namespace=*` and `team-b`), reading an evaluation by ID, and
 * streaming `Job`/`Evaluation` events of another namespace.
 * They must never reach: a job, version or evaluation item written, another namespace's job or evaluation in any
 * answer, or its event. Each refusal is a 403 `Permission denied` (or a 400 for bad input) with the index unmoved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPk } from '../../packages/core/src/scheduler/keys.ts';
import { attackCalls, teamsHarness } from '../support/cluster-attacks.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

const job = (id: string, overrides: Record<string, unknown> = {}) => ({
  ID: id,
  TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec' }] }],
  ...overrides,
});

describe('attack: jobs and evaluations past their namespace rules', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let teamA: string;
  let lister: string;
  let secretEval: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    ({ h, root } = await teamsHarness());
    const secret = await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('secret-job') });
    expect(secret.status).toBe(200);
    secretEval = secret.body.EvalID;
    reader = await tokenWith('namespace "team-a" { policy = "read" }');
    teamA = await tokenWith('namespace "team-a" { policy = "write" }');
    lister = await tokenWith('namespace "team-a" { capabilities = ["list-jobs"] }');
  });
  afterAll(() => h.close());

  it('a read-job token cannot submit, stop or purge; anonymous cannot either', async () => {
    await refused(as(reader)('PUT', '/v1/jobs?namespace=team-a', { Job: job('mine') }));
    await refused(as(reader)('POST', '/v1/job/mine?namespace=team-a', { Job: job('mine') }));
    await refused(as(undefined)('PUT', '/v1/jobs', { Job: job('anon') }));
    expect((await as(teamA)('PUT', '/v1/jobs?namespace=team-a', { Job: job('a-job') })).status).toBe(200);
    await refused(as(reader)('DELETE', '/v1/job/a-job?namespace=team-a'));
    await refused(as(reader)('DELETE', '/v1/job/a-job?namespace=team-a&purge=true'));
    expect(await h.core.store.get(jobPk('team-a'), 'mine')).toBeUndefined();
    expect(await h.core.store.get(jobPk('default'), 'anon')).toBeUndefined();
    expect((await h.core.store.get(jobPk('team-a'), 'a-job'))?.Stop).toBe(false);
  });

  it('a namespace A token cannot write into namespace B, by query or by the job’s own Namespace', async () => {
    await refused(as(teamA)('PUT', '/v1/jobs?namespace=team-b', { Job: job('x') }));
    await refused(as(teamA)('PUT', '/v1/jobs?namespace=team-a', { Job: job('x', { Namespace: 'team-b' }) }));
    await refused(as(teamA)('PUT', '/v1/jobs', { Job: job('x'), Namespace: 'team-b' }));
    await refused(as(teamA)('DELETE', '/v1/job/secret-job?namespace=team-b&purge=true'));
    expect(await h.core.store.get(jobPk('team-b'), 'x')).toBeUndefined();
    expect(await h.core.store.get(jobPk('team-b'), 'secret-job')).toBeDefined();
  });

  it('a namespace A token cannot read, list or find namespace B’s jobs and evaluations', async () => {
    const read = as(teamA);
    for (const path of [
      '/v1/job/secret-job?namespace=team-b',
      '/v1/job/secret-job/versions?namespace=team-b',
      '/v1/job/secret-job/evaluations?namespace=team-b',
      '/v1/job/secret-job/allocations?namespace=team-b',
      '/v1/job/secret-job/summary?namespace=team-b',
      '/v1/jobs?namespace=team-b',
      '/v1/evaluations?namespace=team-b',
      `/v1/evaluation/${secretEval}`,
      `/v1/evaluation/${secretEval}/allocations`,
    ])
      await refused(read('GET', path));
    const all = await read('GET', '/v1/jobs?namespace=*');
    expect(all.status).toBe(200);
    expect(all.body.map((stub: { ID: string }) => stub.ID)).toEqual(['a-job']);
    const evals = await read('GET', '/v1/evaluations?namespace=*');
    expect(evals.body.every((evaluation: { Namespace: string }) => evaluation.Namespace === 'team-a')).toBe(true);
    expect(JSON.stringify(evals.body)).not.toContain('secret-job');
    // list-jobs alone lists but does not read.
    expect((await as(lister)('GET', '/v1/jobs?namespace=team-a')).status).toBe(200);
    await refused(as(lister)('GET', '/v1/job/a-job?namespace=team-a'));
  });

  it('a namespace A token cannot stream namespace B’s Job or Evaluation events', async () => {
    expect((await h.stream('/v1/event/stream?topic=Job&namespace=team-b', teamA)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=Evaluation&namespace=*', teamA)).status).toBe(403);
    const index = await h.scheduler.state.currentIndex();
    const stream = await h.open(`/v1/event/stream?topic=Job&topic=Evaluation&namespace=team-a&index=${index}`, teamA);
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('b-2') })).status).toBe(200);
    expect((await as(teamA)('PUT', '/v1/jobs?namespace=team-a', { Job: job('a-2') })).status).toBe(200);
    const events = await stream.nextEvents();
    expect(events.Index).toBe(index + 2);
    expect(events.Events.every((event: { Namespace: string }) => event.Namespace === 'team-a')).toBe(true);
    await stream.close();
  });

  it('oversized, malformed and invalid jobs are 400s and write nothing', async () => {
    const write = as(teamA);
    await refused(
      write('PUT', '/v1/jobs?namespace=team-a', { Job: job('big', { Meta: { x: 'y'.repeat(400_000) } }) }),
      400,
    );
    await refused(write('PUT', '/v1/jobs?namespace=team-a', { Job: job('neg', { Priority: -5 }) }), 400);
    await refused(write('PUT', '/v1/jobs?namespace=team-a', { Job: job('bad', { TaskGroups: 'nope' }) }), 400);
    await refused(write('PUT', '/v1/jobs?namespace=team-a', { Job: job('t', { Type: 7 }) }), 400);
    await refused(write('PUT', '/v1/jobs?namespace=team-a', '{"Job": {"ID": "half"'), 400);
    await refused(write('PUT', '/v1/jobs?namespace=team-a', { Job: job('a/../b') }), 400);
    // A number DynamoDB or JavaScript cannot keep exactly is named, not a 500.
    const huge = await write('PUT', '/v1/jobs?namespace=team-a', {
      Job: job('huge', { TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', KillTimeout: 1e300 }] }] }),
    });
    expect(huge.status).toBe(400);
    expect(huge.text).toContain('Job.TaskGroups[0].Tasks[0].KillTimeout is not a number');
    for (const id of ['big', 'neg', 'bad', 't', 'half', 'huge'])
      expect(await h.core.store.get(jobPk('team-a'), id)).toBeUndefined();
  });
});
