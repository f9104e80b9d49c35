import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerCallResult, type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** How many writers race for one object: the figure. */
const writers = 20;
/**
 * How many writers create objects of their own at once (each commits, and every scheduler write takes the next
 * index in turn, so this is kept small to keep the test fast).
 */
const creators = 6;

const jwtMethod = (name: string, extra: Record<string, unknown> = {}) => ({
  Name: name,
  Type: 'JWT',
  TokenLocality: 'local',
  MaxTokenTTL: '1h',
  Config: { JWKSURL: 'http://127.0.0.1:1/jwks', ClaimMappings: { sub: 'user' } },
  ...extra,
});

describe('concurrent writers of one scheduler object: one winner, one event, no 5xx', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  /** `writers` copies of one request (or one per index), all in flight at once. */
  const race = (request: (n: number) => Promise<SchedulerCallResult>, count = writers) =>
    Promise.all(Array.from({ length: count }, (_, n) => request(n)));
  const statuses = (results: SchedulerCallResult[]) => {
    const counts: Record<number, number> = {};
    for (const result of results) counts[result.status] = (counts[result.status] ?? 0) + 1;
    return counts;
  };
  /** The events of a type (and key) published after `index`, read from the buffer every stream serves. */
  const eventsSince = async (index: number, type: string, key?: string) =>
    (await h.scheduler.state.eventsAfter(index))
      .flatMap((batch) => batch.events)
      .filter((event) => event.Type === type && (key === undefined || event.Key === key));
  const now = () => h.scheduler.state.currentIndex();

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    expect((await mgmt('POST', '/v1/acl/policy/base', { Rules: 'node { policy = "read" }' })).status).toBe(200);
  });
  afterAll(() => h.close());

  describe('policies', () => {
    it('identical creates of one name: all 200, one ACLPolicyUpserted', async () => {
      const start = await now();
      const results = await race(() =>
        mgmt('PUT', '/v1/acl/policy/raced', { Description: 'same', Rules: 'node { policy = "read" }' }),
      );
      expect(statuses(results)).toEqual({ 200: writers });
      expect(await eventsSince(start, 'ACLPolicyUpserted', 'raced')).toHaveLength(1);
      expect((await mgmt('GET', '/v1/acl/policy/raced')).body).toMatchObject({ Name: 'raced', Description: 'same' });
    });

    it('deletes of one policy: one deletes and publishes ACLPolicyDeleted; the others are 200 no-ops, as Nomad deletes a missing policy', async () => {
      expect((await mgmt('PUT', '/v1/acl/policy/doomed', { Rules: 'node { policy = "read" }' })).status).toBe(200);
      const start = await now();
      const results = await race(() => mgmt('DELETE', '/v1/acl/policy/doomed'));
      expect(statuses(results)).toEqual({ 200: writers });
      expect(await eventsSince(start, 'ACLPolicyDeleted', 'doomed')).toHaveLength(1);
      expect((await mgmt('GET', '/v1/acl/policy/doomed')).status).toBe(404);
      const late = await mgmt('DELETE', '/v1/acl/policy/doomed');
      expect(late.status).toBe(200);
      expect(await eventsSince(start, 'ACLPolicyDeleted', 'doomed')).toHaveLength(1);
    });
  });

  describe('tokens', () => {
    it('creates: every create is its own token with its own event', async () => {
      const start = await now();
      const results = await race(
        (n) => mgmt('POST', '/v1/acl/token', { Name: `t${n}`, Type: 'client', Policies: ['base'] }),
        creators,
      );
      expect(statuses(results)).toEqual({ 200: creators });
      const accessors = new Set(results.map((result) => result.body.AccessorID));
      expect(accessors.size).toBe(creators);
      const events = await eventsSince(start, 'ACLTokenUpserted');
      expect(new Set(events.map((event) => event.Key))).toEqual(accessors);
      expect(events).toHaveLength(creators);
    });

    it('identical renames of one token: all 200 with the new name, one ACLTokenUpserted', async () => {
      const token = (await mgmt('POST', '/v1/acl/token', { Name: 'before', Type: 'client', Policies: ['base'] })).body;
      const start = await now();
      const results = await race(() =>
        mgmt('POST', `/v1/acl/token/${token.AccessorID}`, { Name: 'after', Type: 'client', Policies: ['base'] }),
      );
      expect(statuses(results)).toEqual({ 200: writers });
      expect(new Set(results.map((result) => result.body.Name))).toEqual(new Set(['after']));
      expect(await eventsSince(start, 'ACLTokenUpserted', token.AccessorID)).toHaveLength(1);
    });

    it('deletes of one token: one 200 and one ACLTokenDeleted; the others get what a late delete gets (400, nonexistent)', async () => {
      const token = (await mgmt('POST', '/v1/acl/token', { Name: 'doomed', Type: 'client', Policies: ['base'] })).body;
      const start = await now();
      const results = await race(() => mgmt('DELETE', `/v1/acl/token/${token.AccessorID}`));
      const late = await mgmt('DELETE', `/v1/acl/token/${token.AccessorID}`);
      expect(late).toMatchObject({ status: 400, text: `Cannot delete nonexistent tokens: ${token.AccessorID}` });
      expect(statuses(results)).toEqual({ 200: 1, 400: writers - 1 });
      for (const loser of results.filter((result) => result.status !== 200)) expect(loser.text).toBe(late.text);
      expect(await eventsSince(start, 'ACLTokenDeleted', token.AccessorID)).toHaveLength(1);
      // The secret went with the token.
      expect((await h.call('GET', '/v1/acl/token/self', { token: token.SecretID })).status).toBe(403);
    });
  });

  describe('roles', () => {
    it('creates of one name: one 200 and one ACLRoleUpserted; the others 400, the name is taken', async () => {
      const start = await now();
      const results = await race((n) =>
        mgmt('POST', '/v1/acl/role', { Name: 'raced-role', Description: `writer ${n}`, Policies: [{ Name: 'base' }] }),
      );
      expect(statuses(results)).toEqual({ 200: 1, 400: writers - 1 });
      for (const loser of results.filter((result) => result.status !== 200))
        expect(loser.text).toBe('role with name raced-role already exists');
      const winner = results.find((result) => result.status === 200)?.body;
      expect((await mgmt('GET', '/v1/acl/role/name/raced-role')).body).toEqual(winner);
      const events = await eventsSince(start, 'ACLRoleUpserted');
      expect(events.map((event) => event.Key)).toEqual([winner.ID]);
      expect(
        (await mgmt('GET', '/v1/acl/roles')).body.filter((role: { Name: string }) => role.Name === 'raced-role'),
      ).toHaveLength(1);
    });

    it('renames of different roles to one name: one takes it, the others keep their names', async () => {
      const roles = await Promise.all(
        Array.from(
          { length: creators },
          async (_, n) =>
            (await mgmt('POST', '/v1/acl/role', { Name: `rename-${n}`, Policies: [{ Name: 'base' }] })).body,
        ),
      );
      const start = await now();
      const results = await race(
        (n) =>
          mgmt('POST', `/v1/acl/role/${roles[n].ID}`, {
            ID: roles[n].ID,
            Name: 'renamed',
            Policies: [{ Name: 'base' }],
          }),
        creators,
      );
      expect(statuses(results)).toEqual({ 200: 1, 400: creators - 1 });
      for (const loser of results.filter((result) => result.status !== 200))
        expect(loser.text).toBe('role with name renamed already exists');
      const winner = results.find((result) => result.status === 200)?.body;
      expect((await eventsSince(start, 'ACLRoleUpserted')).map((event) => event.Key)).toEqual([winner.ID]);
      const names = ((await mgmt('GET', '/v1/acl/roles')).body as Array<{ ID: string; Name: string }>).filter((role) =>
        roles.some((r) => r.ID === role.ID),
      );
      expect(names.filter((role) => role.Name === 'renamed')).toEqual([expect.objectContaining({ ID: winner.ID })]);
      expect(names).toHaveLength(creators);
    });

    it('identical renames of one role: all 200, one ACLRoleUpserted, the old name freed once', async () => {
      const role = (await mgmt('POST', '/v1/acl/role', { Name: 'old-name', Policies: [{ Name: 'base' }] })).body;
      const start = await now();
      const results = await race(() =>
        mgmt('POST', `/v1/acl/role/${role.ID}`, { ID: role.ID, Name: 'new-name', Policies: [{ Name: 'base' }] }),
      );
      expect(statuses(results)).toEqual({ 200: writers });
      expect(await eventsSince(start, 'ACLRoleUpserted', role.ID)).toHaveLength(1);
      expect((await mgmt('GET', '/v1/acl/role/name/old-name')).status).toBe(404);
      expect((await mgmt('GET', '/v1/acl/role/name/new-name')).body.ID).toBe(role.ID);
    });

    it('deletes of one role: one 200 and one ACLRoleDeleted; the others get what a late delete gets (404)', async () => {
      const role = (await mgmt('POST', '/v1/acl/role', { Name: 'doomed-role', Policies: [{ Name: 'base' }] })).body;
      const start = await now();
      const results = await race(() => mgmt('DELETE', `/v1/acl/role/${role.ID}`));
      const late = await mgmt('DELETE', `/v1/acl/role/${role.ID}`);
      expect(late).toMatchObject({ status: 404, text: 'ACL role not found' });
      expect(statuses(results)).toEqual({ 200: 1, 404: writers - 1 });
      for (const loser of results.filter((result) => result.status !== 200)) expect(loser.text).toBe(late.text);
      expect(await eventsSince(start, 'ACLRoleDeleted', role.ID)).toHaveLength(1);
      // The name is free again.
      expect((await mgmt('POST', '/v1/acl/role', { Name: 'doomed-role', Policies: [{ Name: 'base' }] })).status).toBe(
        200,
      );
    });
  });

  describe('auth methods', () => {
    it('creates of one name: one 200 and one ACLAuthMethodUpserted; the others 400, it exists', async () => {
      const start = await now();
      const results = await race(() => mgmt('POST', '/v1/acl/auth-method', jwtMethod('raced-method')));
      expect(statuses(results)).toEqual({ 200: 1, 400: writers - 1 });
      for (const loser of results.filter((result) => result.status !== 200))
        expect(loser.text).toBe('auth method raced-method already exists');
      expect(await eventsSince(start, 'ACLAuthMethodUpserted', 'raced-method')).toHaveLength(1);
    });

    it('identical updates of one method: all 200, one ACLAuthMethodUpserted', async () => {
      expect((await mgmt('POST', '/v1/acl/auth-method', jwtMethod('updated-method'))).status).toBe(200);
      const start = await now();
      const results = await race(() =>
        mgmt('POST', '/v1/acl/auth-method/updated-method', jwtMethod('updated-method', { MaxTokenTTL: '2h' })),
      );
      expect(statuses(results)).toEqual({ 200: writers });
      expect(new Set(results.map((result) => result.body.MaxTokenTTL))).toEqual(new Set(['2h0m0s']));
      expect(await eventsSince(start, 'ACLAuthMethodUpserted', 'updated-method')).toHaveLength(1);
    });

    it('deletes of one method: one 200, one ACLAuthMethodDeleted and one ACLBindingRuleDeleted per rule; the others 404', async () => {
      expect((await mgmt('POST', '/v1/acl/auth-method', jwtMethod('doomed-method'))).status).toBe(200);
      const rules = await Promise.all(
        [0, 1, 2].map(
          async () =>
            (
              await mgmt('POST', '/v1/acl/binding-rule', {
                AuthMethod: 'doomed-method',
                BindType: 'policy',
                BindName: 'base',
              })
            ).body,
        ),
      );
      const start = await now();
      // The method's deletes race with deletes of its rules: each rule is still deleted once.
      const results = await race((n) =>
        n < 3
          ? mgmt('DELETE', `/v1/acl/binding-rule/${rules[n].ID}`)
          : mgmt('DELETE', '/v1/acl/auth-method/doomed-method'),
      );
      const methodDeletes = results.slice(3);
      const late = await mgmt('DELETE', '/v1/acl/auth-method/doomed-method');
      expect(late).toMatchObject({ status: 404, text: 'ACL auth-method not found' });
      expect(statuses(methodDeletes)).toEqual({ 200: 1, 404: writers - 4 });
      expect(results.every((result) => result.status < 500)).toBe(true);
      expect(await eventsSince(start, 'ACLAuthMethodDeleted', 'doomed-method')).toHaveLength(1);
      for (const rule of rules) {
        expect(await eventsSince(start, 'ACLBindingRuleDeleted', rule.ID)).toHaveLength(1);
        expect((await mgmt('GET', `/v1/acl/binding-rule/${rule.ID}`)).status).toBe(404);
      }
    });
  });

  describe('binding rules', () => {
    beforeAll(async () => {
      expect((await mgmt('POST', '/v1/acl/auth-method', jwtMethod('rules-method'))).status).toBe(200);
    });
    const rule = (extra: Record<string, unknown> = {}) => ({
      AuthMethod: 'rules-method',
      BindType: 'policy',
      BindName: 'base',
      ...extra,
    });

    it('creates: every create is its own rule with its own event', async () => {
      const start = await now();
      const results = await race(() => mgmt('POST', '/v1/acl/binding-rule', rule()), creators);
      expect(statuses(results)).toEqual({ 200: creators });
      const ids = new Set(results.map((result) => result.body.ID));
      expect(ids.size).toBe(creators);
      const events = await eventsSince(start, 'ACLBindingRuleUpserted');
      expect(events).toHaveLength(creators);
      expect(new Set(events.map((event) => event.Key))).toEqual(ids);
    });

    it('identical updates of one rule: all 200, one ACLBindingRuleUpserted', async () => {
      const created = (await mgmt('POST', '/v1/acl/binding-rule', rule())).body;
      const start = await now();
      const results = await race(() =>
        mgmt('POST', `/v1/acl/binding-rule/${created.ID}`, rule({ Description: 'changed once' })),
      );
      expect(statuses(results)).toEqual({ 200: writers });
      expect(await eventsSince(start, 'ACLBindingRuleUpserted', created.ID)).toHaveLength(1);
    });

    it('deletes of one rule: one 200 and one ACLBindingRuleDeleted; the others get what a late delete gets (404)', async () => {
      const created = (await mgmt('POST', '/v1/acl/binding-rule', rule())).body;
      const start = await now();
      const results = await race(() => mgmt('DELETE', `/v1/acl/binding-rule/${created.ID}`));
      const late = await mgmt('DELETE', `/v1/acl/binding-rule/${created.ID}`);
      expect(late).toMatchObject({ status: 404, text: 'ACL binding rule not found' });
      expect(statuses(results)).toEqual({ 200: 1, 404: writers - 1 });
      expect(await eventsSince(start, 'ACLBindingRuleDeleted', created.ID)).toHaveLength(1);
    });
  });
});
