import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webJob } from '../support/cluster-allocations.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * A job ID holding a `/` (a dispatched job's `<parent>/dispatch-…`, as Nomad names it), which the job routes take
 * spelt `%2F` (`lib/request-path.ts` `segmentedPath`, the rows' `slashParams`). Attacker: anyone with a token of
 * some namespace, or none, who spells a path with `%2F`, `..` or `%2e%2e` to reach another route (a job's summary,
 * the ACL routes), another job (the parent, or one in another namespace) or a name no path could address. Must never
 * reach: any route but the one whose row takes a slash in that parameter, any job but the one named exactly, any
 * namespace but the one the request names; every such spelling is a 400 or a 404 with nothing written.
 */
describe('job IDs with a slash, spelt %2F in the path', () => {
  let h: SchedulerService;
  let root: string;
  let child: string;
  const calls = attackCalls(() => ({ h, root }));
  const mgmt = (method: string, path: string, body?: unknown) => calls.as(root)(method, path, body);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    const parent = webJob('report', { Type: 'batch', ParameterizedJob: { Payload: 'optional' } });
    expect((await mgmt('PUT', '/v1/jobs', { Job: parent })).status).toBe(200);
    expect((await mgmt('POST', '/v1/namespace/other', { Name: 'other' })).status).toBe(200);
    const secret = webJob('report', { Namespace: 'other', Meta: { secret: 'other-team' } });
    expect((await mgmt('PUT', '/v1/jobs?namespace=other', { Job: secret })).status).toBe(200);
    const dispatched = await mgmt('POST', '/v1/job/report/dispatch', {});
    expect(dispatched.status).toBe(200);
    child = dispatched.body.DispatchedJobID;
    expect(child).toMatch(/^report\/dispatch-\d+-[0-9a-f]{8}$/);
  });
  afterAll(() => h.close());

  it('the child is read, summarised and stopped by its ID spelt %2F, and only the child', async () => {
    const path = `/v1/job/${encodeURIComponent(child)}`;
    const read = await mgmt('GET', path);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ ID: child, ParentID: 'report', Dispatched: true });
    expect((await mgmt('GET', `${path}/summary`)).body.JobID).toBe(child);
    expect((await mgmt('GET', `${path}/versions`)).status).toBe(200);
    const stop = await mgmt('DELETE', path);
    expect(stop.status).toBe(200);
    expect((await h.scheduler.jobs.get('default', child))?.Stop).toBe(true);
    expect((await h.scheduler.jobs.get('default', 'report'))?.Stop).toBe(false);
  });

  it('%2F, .. and %2e%2e cannot walk out of the ID to another route or job: 400, nothing written', async () => {
    const spellings = [
      ['GET', `/v1/job/${encodeURIComponent(child)}%2F..`],
      ['GET', '/v1/job/report%2F..%2Freport'],
      ['GET', '/v1/job/report%2F%2e%2e/summary'],
      ['GET', '/v1/job/%2e%2e%2Fjobs'],
      // (A bare `%2E%2E` segment is resolved by a web Request's URL parser before the front sees it:
      // test/attacks/path-spellings.test.ts holds those spellings to the node listener and the Lambda adapter.)
      ['GET', '/v1/job/report%2F%2Fsummary'],
      ['GET', '/v1/job/%2Freport'],
      ['GET', '/v1/job/report%2F'],
      ['DELETE', '/v1/job/..%2Freport?purge=true'],
      ['PUT', '/v1/job/report%2F.%2Fdispatch'],
      ['GET', '/v1/job/report%5C..%5Creport'],
    ] as const;
    for (const [method, path] of spellings) {
      const text = await calls.refused(() => mgmt(method, path, method === 'PUT' ? {} : undefined), 400);
      expect(text, `${method} ${path}`).toMatch(/segment|backslash|empty/);
    }
    expect((await h.scheduler.jobs.get('default', 'report'))?.Stop).toBe(false);
  });

  it('an encoded slash where no row takes one is refused as before; one inside an ID names that ID alone', async () => {
    for (const path of ['/v1/job%2Freport', '/v1%2Fjobs', '/v1/acl/policy/a%2Fb', '/v1/namespace/other%2Fx']) {
      const text = await calls.refused(() => mgmt('GET', path), 400);
      expect(text, path).toMatch(/^an encoded slash \(%2F\) in the URL path is not allowed/);
    }
    // `report%2Fsummary` is the job named `report/summary` (there is none), never report's summary route.
    const named = await mgmt('GET', '/v1/job/report%2Fsummary');
    expect({ status: named.status, text: named.text }).toEqual({ status: 404, text: 'job not found' });
    // Nor the allocations route of the child, spelt as one ID.
    expect((await mgmt('GET', `/v1/job/${encodeURIComponent(`${child}/allocations`)}`)).status).toBe(404);
  });

  it('a token of one namespace cannot reach another namespace’s job through the ID', async () => {
    const reader = await calls.tokenWith('namespace "default" { policy = "read" }');
    const as = calls.as(reader);
    // `other/report` is an ID in default (none), not the job report of namespace other.
    expect((await as('GET', '/v1/job/other%2Freport')).status).toBe(404);
    await calls.refused(as('GET', '/v1/job/report%2Fx?namespace=other'));
    const own = await as('GET', `/v1/job/${encodeURIComponent(child)}`);
    expect(own.status).toBe(200);
    expect(own.body.Meta?.secret).toBeUndefined();
    // Anonymous: nothing.
    await calls.refused(calls.as(undefined)('GET', `/v1/job/${encodeURIComponent(child)}`));
  });

  it('a job ID no path could spell is refused at registration, a slash in one accepted', async () => {
    for (const id of ['a//b', 'a/../b', './a', 'a/', '/a']) {
      const text = await calls.refused(() => mgmt('PUT', '/v1/jobs', { Job: webJob(id) }), 400);
      expect(text, id).toContain('Job ID has an empty, "." or ".." part between its slashes');
    }
    const out = await mgmt('PUT', '/v1/jobs', { Job: webJob('team/web') });
    expect(out.status).toBe(200);
    expect((await mgmt('GET', '/v1/job/team%2Fweb')).body.ID).toBe('team/web');
  });
});
