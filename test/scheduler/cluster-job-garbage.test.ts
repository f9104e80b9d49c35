import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * Issue 41: "an invalid job … is a 400 or a FailedTGAllocs explanation as Nomad gives, never a 500". Jobs whose
 * placement fields are of the wrong type or out of range, sent to register and to plan: each answer is a 400 that
 * writes nothing, or a 200 whose evaluation runs to an outcome (never a 500, never a worker error).
 */
const task = (extra: Record<string, unknown> = {}) => ({
  Name: 't',
  Driver: 'raw_exec',
  Config: { command: 'true' },
  Resources: { CPU: 100, MemoryMB: 64 },
  ...extra,
});
/** Nomad's interpolation of `name`, as a job spec writes it. */
const ref = (name: string) => `\${${name}}`;
const groupWith = (extra: Record<string, unknown>, taskExtra: Record<string, unknown> = {}) => ({
  TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task(taskExtra)], ...extra }],
});

const specs: Array<[string, Record<string, unknown>]> = [
  ['count as text', groupWith({ Count: 'three' })],
  ['count fractional', groupWith({ Count: 1.5 })],
  ['count at the bound', groupWith({ Count: 100_000 })],
  ['negative CPU', groupWith({}, { Resources: { CPU: -5, MemoryMB: 64 } })],
  ['memory as text', groupWith({}, { Resources: { CPU: 100, MemoryMB: 'lots' } })],
  ['resources null', groupWith({}, { Resources: null })],
  [
    'constraint of an unknown operand',
    { Constraints: [{ LTarget: ref('attr.kernel.name'), RTarget: 'x', Operand: '~~' }], ...groupWith({}) },
  ],
  ['constraint not a list', { Constraints: { LTarget: 'a' }, ...groupWith({}) }],
  ['constraint with numbers', { Constraints: [{ LTarget: 7, RTarget: 8, Operand: '=' }], ...groupWith({}) }],
  [
    'regexp that does not compile',
    { Constraints: [{ LTarget: ref('node.unique.name'), RTarget: '(', Operand: 'regexp' }], ...groupWith({}) },
  ],
  [
    'version constraint that does not parse',
    { Constraints: [{ LTarget: ref('attr.nomad.version'), RTarget: '>>> 1', Operand: 'version' }], ...groupWith({}) },
  ],
  [
    'affinity weight out of range',
    { Affinities: [{ LTarget: ref('node.datacenter'), RTarget: 'dc1', Operand: '=', Weight: 500 }], ...groupWith({}) },
  ],
  ['spread of no attribute', { Spreads: [{ Attribute: '', Weight: 50 }], ...groupWith({}) }],
  [
    'spread targets over 100 percent',
    {
      Spreads: [{ Attribute: ref('node.datacenter'), Weight: 50, SpreadTarget: [{ Value: 'dc1', Percent: 150 }] }],
      ...groupWith({}),
    },
  ],
  ['network of a negative static port', groupWith({ Networks: [{ ReservedPorts: [{ Label: 'http', Value: -1 }] }] })],
  ['network of a port past 65535', groupWith({ Networks: [{ ReservedPorts: [{ Label: 'http', Value: 70_000 }] }] })],
  ['dynamic ports as text', groupWith({ Networks: [{ DynamicPorts: 'http' }] })],
  ['datacenters not a list', { Datacenters: 'dc1', ...groupWith({}) }],
  ['update max_parallel negative', groupWith({ Update: { MaxParallel: -1 } })],
  ['canaries over count', groupWith({ Count: 1, Update: { MaxParallel: 1, Canary: 5 } })],
  ['restart attempts as text', groupWith({ RestartPolicy: { Attempts: 'many', Mode: 'fail' } })],
  ['tasks of one name twice', { TaskGroups: [{ Name: 'web', Tasks: [task(), task()] }] }],
];

describe('jobs of wrong types or out of range: a 400 or an outcome, never a 500', () => {
  let h: SchedulerService;
  let root: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
  });
  afterAll(() => h.close());

  it('a count past the bound (10^12 ran placement out of memory) is a 400 naming it, to plan and to register', async () => {
    const spec = webJob('huge', groupWith({ Count: 1e12 }));
    const before = await h.scheduler.state.currentIndex();
    for (const path of ['/v1/job/huge/plan', '/v1/jobs']) {
      const out = await h.call('PUT', path, { token: root, body: { Job: spec } });
      expect(out.status, path).toBe(400);
      expect(out.text).toContain('Task group count must be at most 100000');
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  for (const [what, spec] of specs) {
    it(what, async () => {
      const id = what.replace(/\W+/g, '-');
      const plan = await h.call('PUT', `/v1/job/${id}/plan`, { token: root, body: { Job: webJob(id, spec) } });
      expect([200, 400], `plan: ${plan.text.slice(0, 200)}`).toContain(plan.status);
      const before = await h.scheduler.state.currentIndex();
      const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob(id, spec) } });
      expect([200, 400], `register: ${out.text.slice(0, 200)}`).toContain(out.status);
      if (out.status === 400) {
        expect(out.text.length).toBeGreaterThan(0);
        expect(await h.scheduler.state.currentIndex()).toBe(before);
        return;
      }
      const outcome = (await new EvaluationWorker(h.scheduler).runDue()).get(out.body.EvalID);
      expect(['complete', 'blocked']).toContain(outcome);
    });
  }
});
