/**
 * Issue 39, before the cluster publishes namespaced events: a `namespace=*` stream is not a grant of every namespace.
 *
 * Attacker: a client token whose policy reads every namespace but one, `namespace "*" { policy = "read" }` with an
 * explicit deny on `prod` (or a glob that covers `prod`). It may subscribe to `topic=Job&namespace=*` (the wildcard
 * rule allows it), and must still never receive an event of `prod`: each event is checked against the token's rules
 * for its own namespace, as Nomad's subscription filter does. A stream for `namespace=prod` itself is refused (403).
 * The events are the ones the cluster will publish (Job, Allocation, Evaluation, Deployment, Service, by namespace),
 * written into the buffer with the publish API the cluster's writes use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import type { PendingEvent } from '../../packages/core/src/scheduler/state.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const event = (topic: string, key: string, namespace: string): PendingEvent => ({
  Topic: topic,
  Type: `${topic}Registered`,
  Key: key,
  Namespace: namespace,
  FilterKeys: null,
  Payload: { [topic]: { ID: key, Namespace: namespace } },
});

describe('a namespace=* event stream checks each event against its own namespace', () => {
  let h: SchedulerService;
  let management: string;
  const tokens: Record<string, string> = {};

  async function tokenWith(name: string, rules: string): Promise<string> {
    const policy = await h.call('POST', `/v1/acl/policy/${name}`, { token: management, body: { Rules: rules } });
    expect(policy.status).toBe(200);
    const token = await h.call('POST', '/v1/acl/token', {
      token: management,
      body: { Type: 'client', Policies: [name] },
    });
    expect(token.status).toBe(200);
    return token.body.SecretID as string;
  }

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    management = await h.bootstrap();
    tokens.denyProd = await tokenWith(
      'all-but-prod',
      'namespace "*" { policy = "read" }\nnamespace "prod" { policy = "deny" }',
    );
    tokens.denyGlob = await tokenWith(
      'all-but-prod-glob',
      'namespace "*" { policy = "read" }\nnamespace "prod*" { policy = "deny" }',
    );
  });
  afterAll(() => h.close());

  for (const [name, denied] of [
    ['denyProd', ['prod']],
    ['denyGlob', ['prod', 'prod-eu']],
  ] as const) {
    it(`${name}: receives every other namespace's events, never ${denied.join(' or ')}'s`, async () => {
      const token = tokens[name] as string;
      for (const namespace of denied) {
        const refused = await h.stream(`/v1/event/stream?topic=Job&namespace=${namespace}`, token);
        expect(refused.status).toBe(403);
      }
      // From now: the buffer's earlier batches (another case's) are not this case's.
      const from = await h.scheduler.state.currentIndex();
      const reader = await h.open(
        `/v1/event/stream?topic=Job&topic=Allocation&topic=Evaluation&topic=Deployment&topic=Service&namespace=*&index=${from}`,
        token,
      );
      try {
        expect(await reader.next()).toEqual({});
        const secret = denied.flatMap((namespace) =>
          ['Job', 'Allocation', 'Evaluation', 'Deployment', 'Service'].map((topic) =>
            event(topic, 'payroll', namespace),
          ),
        );
        // Each batch mixes a denied namespace's events with allowed ones; one batch is only denied events.
        const first = await publishEvents(h.core, [event('Job', 'web', 'dev'), ...secret]);
        await publishEvents(h.core, secret);
        const last = await publishEvents(h.core, [event('Allocation', 'web-1', 'default'), ...secret]);
        const seen: Array<{ Index: number; Events: PendingEvent[] }> = [];
        while (seen.at(-1)?.Index !== last) seen.push(await reader.nextEvents());
        expect(seen.map((batch) => batch.Index)).toEqual([first, last]);
        expect(seen.flatMap((batch) => batch.Events.map((e) => [e.Topic, e.Key, e.Namespace]))).toEqual([
          ['Job', 'web', 'dev'],
          ['Allocation', 'web-1', 'default'],
        ]);
      } finally {
        await reader.close();
      }
    });
  }

  it('a management token still receives every namespace on namespace=*', async () => {
    const from = await h.scheduler.state.currentIndex();
    const reader = await h.open(`/v1/event/stream?topic=Job&namespace=*&index=${from}`, management);
    try {
      expect(await reader.next()).toEqual({});
      const index = await publishEvents(h.core, [event('Job', 'payroll', 'prod'), event('Job', 'web', 'dev')]);
      const batch = await reader.nextEvents();
      expect(batch.Index).toBe(index);
      expect(batch.Events.map((e: PendingEvent) => e.Namespace)).toEqual(['prod', 'dev']);
    } finally {
      await reader.close();
    }
  });
});
