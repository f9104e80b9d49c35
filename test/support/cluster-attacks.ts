import { expect } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from './scheduler-harness.ts';

type Answer = Awaited<ReturnType<SchedulerService['call']>>;

/**
 * What the scheduler's attack tests call on their harness: the API as one token (or none), a client token of a
 * policy with `rules` (made by the root token), and a refusal that writes nothing. The harness and root token are
 * read when called, as the tests make them in `beforeAll`.
 */
export function attackCalls(session: () => { h: SchedulerService; root: string }) {
  const harness = () => session().h;
  const rootToken = () => session().root;
  const as = (token: string | undefined) => (method: string, path: string, body?: unknown) =>
    harness().call(method, path, { ...(token ? { token } : {}), ...(body === undefined ? {} : { body }) });

  async function tokenWith(rules: string): Promise<string> {
    const name = `p-${Math.random().toString(36).slice(2, 10)}`;
    expect((await as(rootToken())('POST', `/v1/acl/policy/${name}`, { Rules: rules })).status).toBe(200);
    return (await as(rootToken())('POST', '/v1/acl/token', { Type: 'client', Policies: [name] })).body
      .SecretID as string;
  }

  /**
   * `call` (a call under way, or one to make) answers `status` (403 unless given) and, for a 403, `text`
   * (`Permission denied` unless given); the scheduler's index does not move. Answers the refusal's text.
   */
  async function refused(
    call: Promise<Answer> | (() => Promise<Answer>),
    status = 403,
    text = 'Permission denied',
  ): Promise<string> {
    const before = await harness().scheduler.state.currentIndex();
    const out = await (typeof call === 'function' ? call() : call);
    expect(out.status).toBe(status);
    if (status === 403) expect(out.text).toBe(text);
    expect(await harness().scheduler.state.currentIndex()).toBe(before);
    return out.text;
  }

  return { as, tokenWith, refused };
}

/** A scheduler in memory with its ACL bootstrapped and the namespaces `team-a` and `team-b`, for the namespace attacks. */
export async function teamsHarness(): Promise<{ h: SchedulerService; root: string }> {
  const h = await startSchedulerInMemory();
  const root = await h.bootstrap();
  for (const name of ['team-a', 'team-b'])
    expect((await h.call('PUT', '/v1/namespace', { token: root, body: { Name: name } })).status).toBe(200);
  return { h, root };
}
