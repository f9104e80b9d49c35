import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('scheduler ACL bootstrap, tokens and policies', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
  });
  afterAll(() => h.close());

  it('bootstraps once with an operator-supplied secret and refuses a second bootstrap', async () => {
    expect((await h.call('POST', '/v1/acl/bootstrap', { body: { BootstrapSecret: 'not-a-uuid' } })).status).toBe(400);
    const secret = '2b778dd9-f5f1-6f29-b4b4-9a5fa948757a';
    const first = await h.call('POST', '/v1/acl/bootstrap', { body: { BootstrapSecret: secret } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ SecretID: secret, Type: 'management', Name: 'Bootstrap Token', Global: true });
    expect(first.body.CreateIndex).toBeGreaterThan(0);
    expect(first.headers.get('X-Scheduler-Index')).toBe(String(first.body.CreateIndex));
    expect(first.headers.get('X-Nomad-Index')).toBe(String(first.body.CreateIndex));
    root = secret;
    const second = await h.call('POST', '/v1/acl/bootstrap');
    expect(second.status).toBe(400);
    expect(second.text).toMatch(/^ACL bootstrap already done \(reset index: \d+\)$/);
    expect(second.headers.get('content-type')).toMatch(/text\/plain/);
  });

  it('accepts the token in X-Scheduler-Token, X-Nomad-Token and Authorization: Bearer; refuses unknown tokens', async () => {
    for (const headers of [
      { 'X-Scheduler-Token': root },
      { 'X-Nomad-Token': root },
      { Authorization: `Bearer ${root}` },
    ] as Record<string, string>[]) {
      const self = await h.call('GET', '/v1/acl/token/self', { headers });
      expect(self.status).toBe(200);
      expect(self.body.Type).toBe('management');
      expect(self.body.SecretID).toBeUndefined();
    }
    const unknown = await h.call('GET', '/v1/acl/tokens', { token: '00000000-0000-0000-0000-000000000000' });
    expect(unknown).toMatchObject({ status: 403, text: 'ACL token not found' });
    expect((await h.call('GET', '/v1/acl/tokens')).status).toBe(403);
  });

  it('writes policies in HCL and JSON, refuses invalid ones, and does not advance the index on an unchanged upsert', async () => {
    const rules = 'namespace "default" {\n  policy = "read"\n}\nnode {\n  policy = "read"\n}\n';
    const write = await mgmt('POST', '/v1/acl/policy/readonly', {
      Name: 'readonly',
      Description: 'reads',
      Rules: rules,
    });
    expect(write.status).toBe(200);
    const index = Number(write.headers.get('X-Scheduler-Index'));
    const read = await mgmt('GET', '/v1/acl/policy/readonly');
    expect(read.body).toMatchObject({
      Name: 'readonly',
      Description: 'reads',
      Rules: rules,
      CreateIndex: index,
      ModifyIndex: index,
    });
    const again = await mgmt('POST', '/v1/acl/policy/readonly', {
      Name: 'readonly',
      Description: 'reads',
      Rules: rules,
    });
    expect(Number(again.headers.get('X-Scheduler-Index'))).toBe(index);
    expect((await mgmt('GET', '/v1/acl/policy/readonly')).body.ModifyIndex).toBe(index);

    const json = JSON.stringify({ namespace: { '*': { policy: 'read', capabilities: ['submit-job'] } } });
    expect((await mgmt('POST', '/v1/acl/policy/all-ns', { Rules: json })).status).toBe(200);
    const bad = await mgmt('POST', '/v1/acl/policy/bad', { Rules: 'namespace "default" { policy = "sideways" }' });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/Invalid namespace policy/);
    expect(
      (await mgmt('POST', '/v1/acl/policy/bad', { Rules: 'namespace "x" { capabilities = ["fly"] }' })).status,
    ).toBe(400);
    expect((await mgmt('POST', '/v1/acl/policy/bad', { Rules: 'namespace {' })).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/policy/bad name', { Rules: '' })).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/policy/other', { Name: 'different', Rules: '' })).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/policy/long', { Description: 'x'.repeat(257), Rules: '' })).status).toBe(400);

    const list = await mgmt('GET', '/v1/acl/policies');
    expect(list.body.map((p: { Name: string }) => p.Name).sort()).toEqual(['all-ns', 'readonly']);
    expect(Object.keys(list.body[0]).sort()).toEqual(['CreateIndex', 'Description', 'ModifyIndex', 'Name']);
    expect((await mgmt('GET', '/v1/acl/policy/missing')).status).toBe(404);
  });

  it('creates client and management tokens with validation, lists them, updates, reads self and deletes', async () => {
    expect((await mgmt('POST', '/v1/acl/token', { Type: 'client' })).text).toBe(
      'client token missing policies or roles',
    );
    expect((await mgmt('POST', '/v1/acl/token', { Type: 'management', Policies: ['readonly'] })).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/token', { Type: 'super', Policies: ['readonly'] })).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/token', { Type: 'client', Roles: [{ Name: 'nope' }] })).status).toBe(400);
    expect(
      (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['readonly'], ExpirationTTL: '10s' })).status,
    ).toBe(400);
    expect(
      (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['readonly'], ExpirationTTL: '48h' })).status,
    ).toBe(400);
    // A TTL that is no duration names its field; nanoseconds as a number are taken, and under a second is refused as
    // too short (not read as "no TTL", which would make a token that never expires).
    const withTtl = (ExpirationTTL: unknown) =>
      mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['readonly'], ExpirationTTL });
    expect(await withTtl('5 parsecs')).toMatchObject({
      status: 400,
      text: 'Request decode failed: ExpirationTTL: invalid duration "5 parsecs"',
    });
    for (const tooShort of [5e8, -3_600_000_000_000, '500ms'])
      expect(await withTtl(tooShort), String(tooShort)).toMatchObject({
        status: 400,
        text: 'expiration time cannot be less than 1m0s in the future',
      });
    const byNanoseconds = await withTtl(3_600_000_000_000);
    expect(byNanoseconds.status).toBe(200);
    expect(byNanoseconds.body.ExpirationTTL).toBe('1h0m0s');
    expect((await mgmt('DELETE', `/v1/acl/token/${byNanoseconds.body.AccessorID}`)).status).toBe(200);
    expect(
      (await mgmt('POST', '/v1/acl/auth-method', { Name: 'ttl-check', Type: 'JWT', MaxTokenTTL: 'soon' })).text,
    ).toBe('Request decode failed: MaxTokenTTL: invalid duration "soon"');

    const created = await mgmt('POST', '/v1/acl/token', {
      Name: 'reader',
      Type: 'client',
      Policies: ['readonly', 'readonly'],
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      Name: 'reader',
      Type: 'client',
      Policies: ['readonly'],
      Roles: [],
      Global: false,
    });
    expect(created.body.SecretID).toMatch(/^[0-9a-f-]{36}$/);
    const self = await h.call('GET', '/v1/acl/token/self', { token: created.body.SecretID });
    expect(self.body.AccessorID).toBe(created.body.AccessorID);
    expect(
      (await h.call('GET', `/v1/acl/token/${created.body.AccessorID}`, { token: created.body.SecretID })).status,
    ).toBe(200);
    expect((await h.call('GET', '/v1/acl/tokens', { token: created.body.SecretID })).status).toBe(403);
    // A client token reads the policies it holds, and only those.
    expect((await h.call('GET', '/v1/acl/policy/readonly', { token: created.body.SecretID })).status).toBe(200);
    expect((await h.call('GET', '/v1/acl/policy/all-ns', { token: created.body.SecretID })).status).toBe(403);
    expect(
      (await h.call('GET', '/v1/acl/policies', { token: created.body.SecretID })).body.map(
        (p: { Name: string }) => p.Name,
      ),
    ).toEqual(['readonly']);

    const list = await mgmt('GET', '/v1/acl/tokens');
    expect(list.body.map((t: { AccessorID: string }) => t.AccessorID)).toContain(created.body.AccessorID);
    expect(list.body[0].Hash).toBeTypeOf('string');
    expect(list.body.every((t: { SecretID?: string }) => t.SecretID === undefined)).toBe(true);

    const updated = await mgmt('POST', `/v1/acl/token/${created.body.AccessorID}`, {
      AccessorID: created.body.AccessorID,
      Name: 'renamed',
      Type: 'client',
      Policies: ['all-ns'],
    });
    expect(updated.body).toMatchObject({ Name: 'renamed', Policies: ['all-ns'] });
    expect(updated.body.ModifyIndex).toBeGreaterThan(created.body.ModifyIndex);
    expect(
      (
        await mgmt('POST', `/v1/acl/token/${created.body.AccessorID}`, {
          Type: 'client',
          Policies: ['all-ns'],
          Global: true,
        })
      ).status,
    ).toBe(400);

    expect((await mgmt('DELETE', `/v1/acl/token/${created.body.AccessorID}`)).status).toBe(200);
    expect((await h.call('GET', '/v1/acl/token/self', { token: created.body.SecretID })).status).toBe(403);
    expect((await mgmt('GET', `/v1/acl/token/${created.body.AccessorID}`)).status).toBe(404);
  });

  it('refuses an expired token and cleans it up; the sweep deletes expired tokens nobody used', async () => {
    const shortLived = await mgmt('POST', '/v1/acl/token', {
      Type: 'client',
      Policies: ['readonly'],
      ExpirationTTL: '1h',
    });
    expect(shortLived.body.ExpirationTTL).toBe('1h0m0s');
    expect(Date.parse(shortLived.body.ExpirationTime)).toBe(h.clock.now() + 3_600_000);
    const unused = await mgmt('POST', '/v1/acl/token', {
      Type: 'client',
      Policies: ['readonly'],
      ExpirationTime: new Date(h.clock.now() + 120_000).toISOString(),
    });
    expect(unused.status).toBe(200);
    expect((await h.call('GET', '/v1/acl/token/self', { token: shortLived.body.SecretID })).status).toBe(200);
    h.clock.advance(3601);
    expect(await h.call('GET', '/v1/acl/token/self', { token: shortLived.body.SecretID })).toMatchObject({
      status: 403,
      text: 'ACL token expired',
    });
    expect((await mgmt('GET', `/v1/acl/token/${shortLived.body.AccessorID}`)).status).toBe(404);
    expect(await h.scheduler.tokens.sweepExpired()).toBe(1);
    expect(await h.scheduler.tokens.get(unused.body.AccessorID)).toBeUndefined();
  });

  it('answers Nomad-style errors: unknown paths, bad JSON, stale with consistent, index headers on reads', async () => {
    expect(await h.call('GET', '/v1/nope')).toMatchObject({ status: 404, text: 'Invalid URL path: /v1/nope' });
    expect((await mgmt('POST', '/v1/acl/token', '{bad')).text).toMatch(/^Request decode failed/);
    expect((await mgmt('GET', '/v1/acl/policies?stale&consistent')).status).toBe(400);
    const read = await mgmt('GET', '/v1/acl/policies?stale');
    expect(read.status).toBe(200);
    expect(read.headers.get('X-Scheduler-KnownLeader')).toBe('true');
    expect(read.headers.get('X-Scheduler-LastContact')).toBe('0');
    expect(Number(read.headers.get('X-Scheduler-Index'))).toBeGreaterThan(0);
  });
});
