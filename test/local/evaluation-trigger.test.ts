/**
 * `npm start`'s runtime (in this process, on the run's DynamoDB Local) runs evaluations from the table's stream, as
 * the evaluation trigger does in AWS: the sweep's timer is set to an hour, so nothing but the stream poller can run
 * them. A submitted job's evaluation completes, a blocked one is woken by a node with room becoming ready, a forced
 * garbage collection (`PUT /v1/system/gc`, answered at once) runs in the background, and the write that unpauses the
 * evaluation broker runs what waited.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { forcedGcKey } from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { type LocalRuntime, startLocal } from '../../packages/local/src/start-local.ts';
import { clientNode } from '../support/cluster-nodes.ts';

let work: string;
let runtime: LocalRuntime;
let management: string;

// biome-ignore lint/suspicious/noExplicitAny: the test reads Nomad's JSON as it comes
async function api(method: string, url: string, body?: unknown, token = management): Promise<any> {
  const response = await fetch(`${runtime.schedulerUrl}/v1/${url}`, {
    method,
    headers: { 'X-Nomad-Token': token, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Polls `read` until `done` holds of its answer (the stream poller's pace), at most 20 s. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s (last: ${JSON.stringify(value)})`);
    await sleep(100);
  }
}

/** The nodes registered, by ID. */
const nodeSecrets = new Map<string, string>();

/** A node registered through the client protocol and reported ready. */
async function readyNode(overrides: Record<string, unknown> = {}) {
  const node = clientNode(overrides);
  nodeSecrets.set(node.ID, node.SecretID);
  const intro = (await api('PUT', 'acl/identity/client-introduction-token', {})).JWT as string;
  await api('POST', 'client/register', { Node: node }, intro);
  await api('PUT', `client/node/${node.ID}/status`, { Status: 'ready' }, node.SecretID);
  return node;
}

const job = (id: string, cpu: number) => ({
  ID: id,
  TaskGroups: [
    {
      Name: 'web',
      Count: 1,
      Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: cpu } }],
    },
  ],
});

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'keyhaven-evaluation-trigger-'));
  runtime = await startLocal({
    dataDir: path.join(work, 'service'),
    dynamoDbEndpoint: inject('dynamoEndpoint'),
    tableName: `evaluation-trigger-${randomBytes(6).toString('hex')}`,
    secretsPort: 0,
    schedulerPort: 0,
    // The sweep (and with it the evaluation queue's backstop) would run only after an hour.
    sweepIntervalMs: 3_600_000,
    log: { info() {}, error() {} },
  });
  management = (await api('POST', 'acl/bootstrap', undefined, '')).SecretID as string;
});

afterAll(async () => {
  await runtime?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('npm start runs evaluations from the table stream', () => {
  it('a submitted job: its evaluation completes and its allocation is placed, with no sweep', async () => {
    const node = await readyNode();
    const submitted = await api('PUT', 'jobs', { Job: job('streamed', 500) });
    const evaluation = await until(
      () => api('GET', `evaluation/${submitted.EvalID}`),
      (found) => found.Status !== 'pending',
      'the evaluation',
    );
    expect(evaluation).toMatchObject({ Status: 'complete', QueuedAllocations: { web: 0 } });
    const allocs = await api('GET', 'job/streamed/allocations');
    expect(allocs.map((alloc: { NodeID: string }) => alloc.NodeID)).toEqual([node.ID]);
  });

  it('a job that fits no node blocks, and runs once a node with room becomes ready', async () => {
    const submitted = await api('PUT', 'jobs', { Job: job('big', 3800) });
    await until(
      () => api('GET', `evaluation/${submitted.EvalID}`),
      (found) => found.Status === 'complete',
      'the first evaluation',
    );
    const [blocked] = await until(
      async () => (await api('GET', 'job/big/evaluations')).filter((e: { Status: string }) => e.Status === 'blocked'),
      (found) => found.length === 1,
      'the blocked evaluation',
    );
    const roomy = await readyNode();
    const woken = await until(
      () => api('GET', `evaluation/${blocked.ID}`),
      (found) => found.Status !== 'blocked',
      'the blocked evaluation woken',
    );
    expect(woken.Status).toBe('complete');
    const allocs = await api('GET', 'job/big/allocations');
    expect(allocs.map((alloc: { NodeID: string }) => alloc.NodeID)).toEqual([roomy.ID]);
  });

  it('PUT /v1/system/gc answers at once; the stream runs the collection, and a finished batch job is reaped', async () => {
    const submitted = await api('PUT', 'jobs', { Job: { ...job('finished', 100), Type: 'batch' } });
    await until(
      () => api('GET', `evaluation/${submitted.EvalID}`),
      (found) => found.Status === 'complete',
      'the batch evaluation',
    );
    const [alloc] = await api('GET', 'job/finished/allocations');
    const report = { Allocs: [{ ID: alloc.ID, ClientStatus: 'complete' }] };
    await api('PUT', `client/node/${alloc.NodeID}/allocations`, report, nodeSecrets.get(alloc.NodeID));
    expect((await api('GET', 'job/finished')).Status).toBe('dead');
    expect(await api('PUT', 'system/gc')).toBeUndefined();
    await until(
      () => runtime.core.store.get(forcedGcKey.pk, forcedGcKey.sk),
      (request) => request === undefined,
      'the forced collection',
    );
    const gone = await fetch(`${runtime.schedulerUrl}/v1/job/finished`, { headers: { 'X-Nomad-Token': management } });
    expect(gone.status).toBe(404);
  });

  it('a paused broker holds a submitted evaluation; the write that unpauses it runs it, with no sweep', async () => {
    await api('PUT', 'operator/scheduler/configuration', { PauseEvalBroker: true });
    const submitted = await api('PUT', 'jobs', { Job: job('held', 100) });
    // A barrier: a forced collection requested after the evaluation is written has run once the stream's consumer
    // has been given the evaluation (the table's records arrive in order).
    await api('PUT', 'system/gc');
    await until(
      () => runtime.core.store.get(forcedGcKey.pk, forcedGcKey.sk),
      (request) => request === undefined,
      'the forced collection',
    );
    expect((await api('GET', `evaluation/${submitted.EvalID}`)).Status).toBe('pending');
    expect(await api('GET', 'job/held/allocations')).toEqual([]);
    await api('PUT', 'operator/scheduler/configuration', { PauseEvalBroker: false });
    const evaluation = await until(
      () => api('GET', `evaluation/${submitted.EvalID}`),
      (found) => found.Status !== 'pending',
      'the evaluation after unpausing',
    );
    expect(evaluation).toMatchObject({ Status: 'complete', QueuedAllocations: { web: 0 } });
    expect(await api('GET', 'job/held/allocations')).toHaveLength(1);
  });
});
