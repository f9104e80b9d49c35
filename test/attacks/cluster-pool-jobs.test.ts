/**
 * Attack class: listing another namespace's jobs through a node pool (`GET /v1/node/pool/:name/jobs`, Nomad's
 * `nomad/node_pool_endpoint.go` ListJobs: the pool's `read`, then `list-jobs` in each namespace listed).
 *
 * Attackers: a token with `read` on the `default` pool and on namespace `team-a` only; a token with the pool's `read`
 * and no namespace; a token of `team-a` without the pool; anonymous.
 * They try: the pool's jobs in `team-b`, in `*`, with a filter naming `team-b`, and in their own namespace.
 * They must never reach: a job of `team-b` (its ID, its namespace) in any answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attackCalls, teamsHarness } from '../support/cluster-attacks.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

const job = (id: string) => ({
  ID: id,
  TaskGroups: [
    {
      Name: 'web',
      Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } }],
    },
  ],
});

describe('attack: another namespace’s jobs through a node pool', () => {
  let h: SchedulerService;
  let root: string;
  let poolAndA: string;
  let poolOnly: string;
  let aOnly: string;
  const { as, tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    ({ h, root } = await teamsHarness());
    for (const [namespace, id] of [
      ['team-a', 'app'],
      ['team-b', 'secret'],
    ] as const)
      expect((await as(root)('PUT', `/v1/jobs?namespace=${namespace}`, { Job: job(id) })).status).toBe(200);
    poolAndA = await tokenWith('node_pool "default" { policy = "read" }\nnamespace "team-a" { policy = "read" }');
    poolOnly = await tokenWith('node_pool "default" { policy = "read" }');
    aOnly = await tokenWith('namespace "team-a" { policy = "read" }');
  });
  afterAll(() => h.close());

  it('the management token sees both jobs (the attack has something to find)', async () => {
    const all = await as(root)('GET', '/v1/node/pool/default/jobs?namespace=*');
    expect(all.status).toBe(200);
    expect(all.body.map((stub: { ID: string }) => stub.ID).sort()).toEqual(['app', 'secret']);
  });

  it('a team-a reader lists team-a’s job only: by namespace, by `*`, and by a filter naming team-b', async () => {
    const own = await as(poolAndA)('GET', '/v1/node/pool/default/jobs?namespace=team-a');
    expect(own.status).toBe(200);
    expect(own.body.map((stub: { ID: string; Namespace: string }) => [stub.Namespace, stub.ID])).toEqual([
      ['team-a', 'app'],
    ]);
    for (const query of [
      'namespace=team-b',
      'namespace=*',
      `namespace=*&filter=${encodeURIComponent('Namespace == "team-b"')}`,
      `namespace=team-b&filter=${encodeURIComponent('ID == "secret"')}`,
    ]) {
      const out = await as(poolAndA)('GET', `/v1/node/pool/default/jobs?${query}`);
      expect(out.status, query).toBe(200);
      expect(out.text, query).not.toContain('secret');
      expect(out.text, query).not.toContain('team-b');
    }
  });

  it('the pool’s read without a namespace lists nothing; a namespace without the pool, or no token, is refused', async () => {
    const out = await as(poolOnly)('GET', '/v1/node/pool/default/jobs?namespace=*');
    expect(out.status).toBe(200);
    expect(out.body).toEqual([]);
    await refused(as(aOnly)('GET', '/v1/node/pool/default/jobs?namespace=team-a'));
    await refused(as(undefined)('GET', '/v1/node/pool/default/jobs?namespace=team-b'));
  });
});
