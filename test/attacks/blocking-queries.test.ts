/**
 * Issue 39 §2: in Lambda, waiting is a resource that is paid for and rationed. A blocking query
 * (`?index=N&wait=…`) holds a function instance for as long as it waits; the scheduler's API function shares one
 * reserved concurrency among all its callers. An anonymous `GET /v1/acl/auth-methods?index=18446744073709551615` held
 * an instance for the full 25 s and read the table every 100 ms, so about two such requests a second throttled every
 * other scheduler call, logins included. And the buffered API function answered the encoded spelling
 * `/v1/event/%73tream`, streaming into a buffer until its timeout.
 *
 * What each caller may do now (`scheduler/http/blocking.ts`):
 * - anonymous: a wait of at most 1 s on the service's clock, whatever `wait` asks;
 * - a token: at most 4 blocked queries at once across every process (places in the table), each for the route's
 *   full wait; the next waits as anonymous, and a place is given back when its wait ends;
 * - however many queries a process has blocked, it reads each watched table's index item once per poll;
 * - the buffered function refuses the event stream however its path is spelled.
 * The service's clock is moved; nothing is timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { indexWatch } from '../../packages/core/src/scheduler/http/blocking.ts';
import { schedulerFront, streamNotServedHere } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import {
  type SchedulerCallResult,
  type SchedulerService,
  startSchedulerInMemory,
} from '../support/scheduler-harness.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { gatewayEvent } from './lambda-event.ts';

const huge = '18446744073709551615';
const indexOf = (answer: SchedulerCallResult) => Number(answer.headers.get('X-Nomad-Index'));

describe('blocking queries are rationed', () => {
  let h: SchedulerService;
  let management: string;
  let reader: { secret: string; accessor: string };
  const watch = () => indexWatch(h.scheduler.state, 50);

  /** Resolves once `count` queries of this process are blocked (the requests are in flight, not yet waiting, before). */
  async function blocked(count: number): Promise<void> {
    while (watch().waiting !== count) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** Resolves once the watcher has checked twice more (so once after anything done before this call). */
  async function polled(): Promise<void> {
    const from = watch().checks;
    while (watch().checks < from + 2) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** A request whose settling is observable. */
  function inFlight(path: string, token?: string) {
    const state = { settled: false };
    const answer = h.call('GET', path, token ? { token } : {}).then((out) => {
      state.settled = true;
      return out;
    });
    return { state, answer };
  }

  beforeAll(async () => {
    h = await startSchedulerInMemory({ maxQueryWaitSeconds: 25 });
    management = await h.bootstrap();
    const policy = await h.call('POST', '/v1/acl/policy/reader', {
      token: management,
      body: { Rules: 'node { policy = "read" }' },
    });
    expect(policy.status).toBe(200);
    const token = await h.call('POST', '/v1/acl/token', {
      token: management,
      body: { Type: 'client', Policies: ['reader'] },
    });
    reader = { secret: token.body.SecretID, accessor: token.body.AccessorID };
  });
  afterAll(() => h.close());

  it('an anonymous caller waits at most a second, whatever it asks', async () => {
    for (const query of [`index=${huge}`, `index=${huge}&wait=5m`, `index=${huge}&wait=1h`]) {
      const request = inFlight(`/v1/acl/auth-methods?${query}`);
      await blocked(1);
      // Past the anonymous second (and its 1/16 jitter) on the service's clock: answered with the data as it is.
      h.clock.advance(1.1);
      const answer = await request.answer;
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual([]);
      expect(indexOf(answer)).toBeGreaterThan(0);
      await blocked(0);
    }
    // Anonymous callers take no place in the table.
    expect((await h.core.store.scan()).filter((item) => item.pk.startsWith('sched#wait#'))).toEqual([]);
  });

  it('a token holds at most four long waits at once; the fifth waits as anonymous, and a freed place is taken again', async () => {
    const current = indexOf(await h.call('GET', '/v1/acl/policies', { token: reader.secret }));
    // Node-readers may list policies they hold: the list is the blocking read here.
    const path = `/v1/acl/policies?index=${current}&wait=5m`;
    const long = [0, 1, 2, 3].map(() => inFlight(path, reader.secret));
    await blocked(4);
    const places = (await h.core.store.scan()).filter((item) => item.pk === `sched#wait#${reader.accessor}`);
    expect(places.map((item) => item.sk).sort()).toEqual(['slot#0', 'slot#1', 'slot#2', 'slot#3']);

    const fifth = inFlight(path, reader.secret);
    await blocked(5);
    h.clock.advance(1.1);
    const short = await fifth.answer;
    expect(short.status).toBe(200);
    expect(indexOf(short)).toBe(current);
    await blocked(4);
    expect(long.map((request) => request.state.settled)).toEqual([false, false, false, false]);

    // A write to their table wakes the four; their places are given back.
    const write = await h.call('POST', '/v1/acl/policy/woken', {
      token: management,
      body: { Rules: 'node { policy = "read" }' },
    });
    expect(write.status).toBe(200);
    const answers = await Promise.all(long.map((request) => request.answer));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map(indexOf)).toEqual(answers.map(() => indexOf(answers[0] as SchedulerCallResult)));
    expect(indexOf(answers[0] as SchedulerCallResult)).toBeGreaterThan(current);
    expect((await h.core.store.scan()).filter((item) => item.pk.startsWith('sched#wait#'))).toEqual([]);

    // The places are free again: a long wait is granted (it outlasts the anonymous second).
    const again = inFlight(
      `/v1/acl/policies?index=${indexOf(answers[0] as SchedulerCallResult)}&wait=5m`,
      reader.secret,
    );
    await blocked(1);
    h.clock.advance(1.1);
    await polled();
    expect(watch().waiting).toBe(1);
    expect(again.state.settled).toBe(false);
    h.clock.advance(25 * (1 + 1 / 16));
    expect((await again.answer).status).toBe(200);
  });

  it("however many queries wait in a process, each poll reads each watched table's index item once", async () => {
    const current = indexOf(await h.call('GET', '/v1/acl/auth-methods'));
    const tokens = [management, reader.secret];
    const requests = [
      ...Array.from({ length: 12 }, () => inFlight(`/v1/acl/auth-methods?index=${current}`)),
      ...tokens.flatMap((token) => [0, 1, 2, 3].map(() => inFlight(`/v1/acl/policies?index=${huge}&wait=5m`, token))),
    ];
    await blocked(requests.length);
    const before = { checks: watch().checks, reads: watch().reads };
    // Let the watcher poll a few times while all 20 wait.
    while (watch().checks < before.checks + 5) await new Promise((resolve) => setTimeout(resolve, 10));
    const checks = watch().checks - before.checks;
    const reads = watch().reads - before.reads;
    // Two tables are watched (auth methods, policies): two index items a check, not twenty.
    expect(reads).toBeLessThanOrEqual(2 * checks);
    h.clock.advance(25 * (1 + 1 / 16));
    expect(
      (await Promise.all(requests.map((request) => request.answer))).every((answer) => answer.status === 200),
    ).toBe(true);
  });
});

describe("a node's allocation poll (the cluster's blocking query) is rationed per node", () => {
  let h: SchedulerService;
  let writer: string;
  const watch = () => indexWatch(h.scheduler.state, 50);
  async function blocked(count: number): Promise<void> {
    while (watch().waiting !== count) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  beforeAll(async () => {
    h = await startSchedulerInMemory({ maxQueryWaitSeconds: 25 });
    ({ writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  it('holds the node its own places for the full wait; a stranger is refused before any wait', async () => {
    const { node } = await registerNode(h, writer);
    const path = `/v1/client/node/${node.ID}/allocations?index=${huge}&wait=5m`;
    expect((await h.call('GET', path)).status).toBe(403);
    expect((await h.call('GET', path, { token: crypto.randomUUID() })).status).toBe(403);
    expect(watch().waiting).toBe(0);

    const polls = [0, 1, 2, 3, 4].map(() => {
      const state = { settled: false };
      const answer = h.call('GET', path, { token: node.SecretID as string }).then((out) => {
        state.settled = true;
        return out;
      });
      return { state, answer };
    });
    await blocked(5);
    const places = (await h.core.store.scan()).filter((item) => item.pk === `sched#wait#node#${node.ID}`);
    expect(places.map((item) => item.sk).sort()).toEqual(['slot#0', 'slot#1', 'slot#2', 'slot#3']);
    // Past the anonymous second: the fifth (no place left) answers, the four hold on.
    h.clock.advance(1.1);
    await blocked(4);
    expect(polls.map((poll) => poll.state.settled).filter(Boolean)).toHaveLength(1);
    h.clock.advance(25 * (1 + 1 / 16));
    const answers = await Promise.all(polls.map((poll) => poll.answer));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map((answer) => answer.body)).toEqual(answers.map(() => ({ Allocs: {}, Index: 0 })));
    expect((await h.core.store.scan()).filter((item) => item.pk.startsWith('sched#wait#'))).toEqual([]);
  });
});

describe('the buffered API function refuses the event stream however its path is spelled', () => {
  let h: SchedulerService;
  let management: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    management = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('answers 400 at once to /v1/event/stream, /v1/event/%73tream and /v1/%65vent/stream', async () => {
    // As functions/scheduler/api.ts builds it.
    const buffered = lambdaHandler(schedulerFront({ core: async () => h.core, buffersAnswers: true }), []);
    for (const path of ['/v1/event/stream', '/v1/event/%73tream', '/v1/%65vent/stream', '/v1/event/%73%74ream']) {
      for (const headers of [{}, { 'x-nomad-token': management }] as Record<string, string>[]) {
        const answer = await buffered(gatewayEvent('GET', `${path}?topic=*`, headers));
        expect({ path, status: answer.statusCode }).toEqual({ path, status: 400 });
        expect(answer.body).toBe(streamNotServedHere);
      }
    }
  });

  it('the streaming function still serves it, the encoded spelling too', async () => {
    const reader = await h.open('/v1/event/%73tream?topic=*', management);
    expect(await reader.next()).toEqual({});
    await reader.close();
  });
});
