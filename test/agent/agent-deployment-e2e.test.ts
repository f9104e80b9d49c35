import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentService,
  startRawExecAgent,
  startServiceForAgent,
  stopServiceForAgent,
  untilWithin,
} from '../support/agent-service.ts';
import { START_TIMEOUT_MS, type Started } from '../support/npm-start.ts';

let work: string;
let service: Started;
let api: AgentService['api'];
let management: string;

beforeAll(async () => {
  ({ work, service, api, management } = await startServiceForAgent('agent-deploy'));
}, START_TIMEOUT_MS);

afterAll(() => stopServiceForAgent(work));

const until = untilWithin(90_000, 250);

/** The job at `seconds` of sleep: a new number is a destructive change. */
const job = (seconds: number) => ({
  Job: {
    ID: 'canaried',
    Type: 'service',
    Datacenters: ['dc1'],
    TaskGroups: [
      {
        Name: 'web',
        Count: 2,
        Update: {
          MaxParallel: 1,
          Canary: 1,
          AutoPromote: false,
          HealthCheck: 'task_states',
          MinHealthyTime: 1e9,
          HealthyDeadline: 30e9,
          ProgressDeadline: 60e9,
        },
        Tasks: [
          {
            Name: 'sleeper',
            Driver: 'raw_exec',
            Config: { command: 'sleep', args: [String(seconds)] },
            Resources: { CPU: 50, MemoryMB: 32 },
          },
        ],
      },
    ],
  },
});

interface StreamedEvent {
  Topic: string;
  Type: string;
  Key: string;
  Index: number;
  Payload: { Deployment: { ID: string; Status: string; StatusDescription: string; JobVersion: number } };
}

/** Reads the Deployment topic into `into` until `stop` aborts it. */
async function follow(into: StreamedEvent[], stop: AbortSignal): Promise<void> {
  const response = await fetch(`${service.scheduler}/v1/event/stream?topic=Deployment`, {
    headers: { 'X-Nomad-Token': management },
    signal: stop,
  });
  expect(response.status).toBe(200);
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line !== '' && line !== '{}') into.push(...((JSON.parse(line).Events ?? []) as StreamedEvent[]));
        newline = buffered.indexOf('\n');
      }
    }
  } catch (error) {
    if (!stop.aborted) throw error;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: Nomad's JSON as it comes
type Json = any;

describe('a canary deployment on the real agent', () => {
  it('places a canary, promotes it, rolls the rest and succeeds, with the Deployment events', {
    timeout: 300_000,
  }, async () => {
    const { agent, log } = await startRawExecAgent({ work, service, api }, until);
    const events: StreamedEvent[] = [];
    const stop = new AbortController();
    const streaming = follow(events, stop.signal);

    const deploymentOf = async (version: number): Promise<Json | undefined> => {
      const latest = (await api('GET', '/v1/job/canaried/deployment')).body;
      return latest && latest.JobVersion === version ? latest : undefined;
    };
    const succeeded = (version: number) => async () => {
      const deployment = await deploymentOf(version);
      return deployment?.Status === 'successful' ? deployment : undefined;
    };

    expect((await api('PUT', '/v1/jobs', job(600))).status).toBe(200);
    const first = await until('version 0 to roll out', succeeded(0), log);
    expect(first.TaskGroups.web).toMatchObject({ DesiredTotal: 2, HealthyAllocs: 2 });

    expect((await api('PUT', '/v1/job/canaried', job(601))).status).toBe(200);
    const waiting = await until(
      'the canary to be healthy',
      async () => {
        const deployment = await deploymentOf(1);
        return deployment?.TaskGroups.web.HealthyAllocs === 1 ? deployment : undefined;
      },
      log,
    );
    expect(waiting).toMatchObject({
      Status: 'running',
      StatusDescription: 'Deployment is running but requires manual promotion',
      TaskGroups: { web: expect.objectContaining({ DesiredCanaries: 1, Promoted: false }) },
    });
    expect(waiting.TaskGroups.web.PlacedCanaries).toHaveLength(1);
    const live = async (version: number) =>
      ((await api('GET', '/v1/job/canaried/allocations')).body as Json[]).filter(
        (alloc) => alloc.JobVersion === version && alloc.DesiredStatus === 'run',
      );
    // Not promoted, nothing else moves: the two old allocations run beside the canary.
    expect(await live(0)).toHaveLength(2);
    expect(await live(1)).toHaveLength(1);

    const promoted = await api('PUT', `/v1/deployment/promote/${waiting.ID}`, { DeploymentID: waiting.ID, All: true });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ RevertedJobVersion: null, DeploymentModifyIndex: promoted.body.Index });

    const done = await until('version 1 to roll out', succeeded(1), log);
    expect(done).toMatchObject({
      StatusDescription: 'Deployment completed successfully',
      TaskGroups: { web: expect.objectContaining({ Promoted: true, HealthyAllocs: 2, DesiredTotal: 2 }) },
    });
    expect(await live(0)).toHaveLength(0);
    expect((await live(1)).map((alloc) => alloc.ClientStatus)).toEqual(['running', 'running']);
    const versions = (await api('GET', '/v1/job/canaried/versions')).body.Versions as Json[];
    expect(versions.map((version) => [version.Version, version.Stable])).toEqual([
      [1, true],
      [0, true],
    ]);

    // The stream told each step of the second deployment, in order.
    await until(
      'the last event to arrive',
      async () =>
        events.some((e) => e.Payload.Deployment.Status === 'successful' && e.Key === done.ID) ? true : undefined,
      log,
    );
    stop.abort();
    await streaming;
    const ofDone = events.filter((event) => event.Key === done.ID);
    expect(ofDone.every((event) => event.Topic === 'Deployment')).toBe(true);
    const types = ofDone.map((event) => event.Type);
    expect(types[0]).toBe('PlanResult');
    expect(types).toContain('AllocationUpdated');
    const promotion = types.indexOf('DeploymentPromotion');
    expect(promotion).toBeGreaterThan(types.indexOf('AllocationUpdated'));
    expect(ofDone.at(-1)?.Payload.Deployment).toMatchObject({
      Status: 'successful',
      StatusDescription: 'Deployment completed successfully',
    });
    const indexes = ofDone.map((event) => event.Index);
    expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);

    expect((await api('DELETE', '/v1/job/canaried')).status).toBe(200);
    await until(
      'every allocation to complete',
      async () => {
        const allocs = (await api('GET', '/v1/job/canaried/allocations')).body as Json[];
        return allocs.every((alloc) => alloc.ClientStatus === 'complete') ? true : undefined;
      },
      log,
    );
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  });
});
