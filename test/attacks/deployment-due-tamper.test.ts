/**
 * Attack class: moving a deployment on the deployment watcher's due queue (`cluster/deployments/store.ts` `put`).
 *
 * Attacker: whoever can write the table (storage is untrusted, `docs/security.md`).
 * They try, on an active deployment's item, keeping its `mac`: moving its `dueSk` past its progress deadline (so the
 * sweep does not fail it there), taking it off the queue (removing `duePk`/`dueSk`), moving it to another queue
 * partition, and adding a forged item due now to the queue.
 * They must never reach: a deployment the service reads with a due time it did not write. Each altered item reads as
 * absent (its MAC covers the due time), by the API and by the sweep; the forged one is never checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployments } from '../../packages/core/src/scheduler/cluster/deployments/store.ts';
import { DEPLOYMENT_DUE } from '../../packages/core/src/scheduler/keys.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { dueKey, shardedQueue } from '../../packages/core/src/storage/due.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attack: a table writer moves a deployment on the watcher’s due queue', () => {
  let h: SchedulerService;
  let root: string;
  let worker: EvaluationWorker;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node as unknown as { ID: string; SecretID: string });
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  /** A fresh active deployment, checked once (due at its progress deadline), and its raw item. */
  async function deployed(id: string) {
    const job = webJob(id, {
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Update: { MaxParallel: 1, ProgressDeadline: 600e9, HealthyDeadline: 30e9, MinHealthyTime: 1e9 },
          Tasks: [
            { Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 20, MemoryMB: 16 } },
          ],
        },
      ],
    });
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect(out.status).toBe(200);
    await worker.runDue();
    const deployment = await h.scheduler.deployments.latest('default', id);
    if (!deployment) throw new Error('no deployment');
    await h.scheduler.deploymentWatcher.checkDue();
    const key = Deployments.key(deployment.ID);
    const item = await h.core.store.get(key.pk, key.sk);
    if (!item) throw new Error('no item');
    expect(item.dueSk).toBe(
      dueKey(Math.ceil(Date.parse(deployment.TaskGroups.web?.RequireProgressBy ?? '') / 1000), deployment.ID),
    );
    return { deployment, item };
  }

  const alterations: Array<[string, (item: Item) => Item]> = [
    ['moves its due time a year on', (item) => ({ ...item, dueSk: dueKey(2_000_000_000, item.sk as string) })],
    ['moves it due now', (item) => ({ ...item, dueSk: dueKey(0, item.sk as string) })],
    [
      'takes it off the queue',
      (item) => {
        const { duePk: _duePk, dueSk: _dueSk, ...rest } = item;
        return rest as Item;
      },
    ],
    ['moves it to another queue partition', (item) => ({ ...item, duePk: `${DEPLOYMENT_DUE}#99` })],
  ];

  for (const [name, alter] of alterations)
    it(`${name}: the deployment reads as absent, by the API and the sweep`, async () => {
      const { deployment, item } = await deployed(`tamper-${alterations.findIndex(([other]) => other === name)}`);
      await h.core.store.put(alter(item));
      expect(await h.scheduler.deployments.get(deployment.ID)).toBeUndefined();
      const read = await h.call('GET', `/v1/deployment/${deployment.ID}`, { token: root });
      expect(read.status).toBe(404);
      // The sweep reads no altered item as due, even one moved to now.
      const checked = await h.scheduler.deploymentWatcher.checkDue();
      expect(checked.has(deployment.ID)).toBe(false);
      expect((await h.scheduler.deployments.due(100)).map((queued) => queued.deployment.ID)).not.toContain(
        deployment.ID,
      );
    });

  it('a forged item due now on the queue is never checked', async () => {
    const forged = {
      pk: 'sched#deployment#00',
      sk: 'forged-deployment',
      ID: 'forged-deployment',
      Status: 'running',
      duePk: shardedQueue(DEPLOYMENT_DUE, 'forged-deployment'),
      dueSk: dueKey(0, 'forged-deployment'),
      mac: 'v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    };
    await h.core.store.put(forged);
    const before = await h.scheduler.state.currentIndex();
    expect((await h.scheduler.deploymentWatcher.checkDue()).has('forged-deployment')).toBe(false);
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await h.scheduler.deployments.get('forged-deployment')).toBeUndefined();
  });
});
