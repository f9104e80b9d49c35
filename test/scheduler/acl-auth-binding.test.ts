import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const jwtMethod = (name: string, extra: Record<string, unknown> = {}) => ({
  Name: name,
  Type: 'JWT',
  TokenLocality: 'local',
  MaxTokenTTL: '1h',
  Config: {
    JWKSURL: 'http://127.0.0.1:1/jwks',
    BoundAudiences: ['nomad'],
    BoundIssuer: ['https://issuer.example'],
    ClaimMappings: { sub: 'user', 'project-id': 'project' },
    ListClaimMappings: { groups: 'groups' },
  },
  ...extra,
});

describe('ACL auth methods and binding rules', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('creates, reads, lists, updates and validates auth methods', async () => {
    const created = await mgmt('POST', '/v1/acl/auth-method', jwtMethod('corp', { Default: true }));
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      Name: 'corp',
      Type: 'JWT',
      TokenLocality: 'local',
      MaxTokenTTL: '1h0m0s',
      Default: true,
    });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
    expect(created.body.TokenNameFormat).toBe('${auth_method_type}-${auth_method_name}');
    expect(created.body.Config).toMatchObject({
      JWKSURL: 'http://127.0.0.1:1/jwks',
      BoundIssuer: ['https://issuer.example'],
    });
    expect(created.body.CreateTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/);
    expect((await mgmt('GET', '/v1/acl/auth-method/corp')).body).toEqual(created.body);
    // Anyone may list the methods (a login screen needs them).
    const list = await h.call('GET', '/v1/acl/auth-methods');
    expect(list.body).toEqual([
      {
        Name: 'corp',
        Type: 'JWT',
        Default: true,
        Hash: created.body.Hash,
        CreateIndex: created.body.CreateIndex,
        ModifyIndex: created.body.ModifyIndex,
      },
    ]);
    expect((await h.call('GET', '/v1/acl/auth-method/corp')).status).toBe(403);

    const refuse = async (body: unknown, pattern: RegExp) => {
      const out = await mgmt('POST', '/v1/acl/auth-method', body);
      expect(out.status).toBe(400);
      expect(out.text).toMatch(pattern);
    };
    await refuse(jwtMethod('corp'), /already exists/);
    await refuse(jwtMethod('bad name'), /invalid name/);
    await refuse(jwtMethod('t1', { Type: 'LDAP' }), /invalid token type/);
    await refuse(jwtMethod('t2', { TokenLocality: 'planet' }), /invalid token locality/);
    await refuse(jwtMethod('t3', { MaxTokenTTL: '0s' }), /missing max token TTL/);
    await refuse(
      { ...jwtMethod('t4'), Config: { JWKSURL: 'http://x/jwks', OIDCDiscoveryURL: 'http://x' } },
      /exactly one of/,
    );
    await refuse({ ...jwtMethod('t5'), Type: 'OIDC', Config: { OIDCDiscoveryURL: 'http://x' } }, /client ID/);
    await refuse(jwtMethod('second-default', { Default: true }), /default method for type JWT already exists: corp/);

    const updated = await mgmt(
      'POST',
      '/v1/acl/auth-method/corp',
      jwtMethod('corp', { Default: true, TokenLocality: 'global' }),
    );
    expect(updated.body.TokenLocality).toBe('global');
    expect(updated.body.ModifyIndex).toBeGreaterThan(created.body.ModifyIndex);
    expect((await mgmt('POST', '/v1/acl/auth-method/other', jwtMethod('corp'))).status).toBe(400);
    expect((await mgmt('POST', '/v1/acl/auth-method/none', jwtMethod('none'))).status).toBe(404);
  });

  it('creates binding rules with every rule of the reference', async () => {
    const refuse = async (body: unknown, pattern: RegExp) => {
      const out = await mgmt('POST', '/v1/acl/binding-rule', body);
      expect(out.status).toBe(400);
      expect(out.text).toMatch(pattern);
    };
    await refuse({ BindType: 'role', BindName: 'x' }, /auth method name is missing/);
    await refuse({ AuthMethod: 'ghost', BindType: 'role', BindName: 'x' }, /ACL auth-method ghost not found/);
    await refuse({ AuthMethod: 'corp', BindType: 'group', BindName: 'x' }, /invalid bind type/);
    await refuse({ AuthMethod: 'corp', BindType: 'role' }, /bind name is missing/);
    await refuse({ AuthMethod: 'corp', BindType: 'policy', BindName: '' }, /bind name is missing/);
    await refuse({ AuthMethod: 'corp', BindType: 'management', BindName: 'x' }, /must be empty/);
    await refuse(
      { AuthMethod: 'corp', BindType: 'role', BindName: 'x', Selector: 'value.user ==' },
      /selector is invalid: 1:14 \(13\)/,
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
    await refuse({ AuthMethod: 'corp', BindType: 'role', BindName: '${value.nope}' }, /unknown variable "value.nope"/);
    await refuse({ AuthMethod: 'corp', BindType: 'role', BindName: '${value.user' }, /bind name is invalid/);

    const created = await mgmt('POST', '/v1/acl/binding-rule', {
      Description: 'engineers',
      AuthMethod: 'corp',
      Selector: '"eng" in list.groups and value.project == "p1"',
      BindType: 'role',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      BindName: 'team-${value.user}',
    });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(
      [
        'AuthMethod',
        'BindName',
        'BindType',
        'CreateIndex',
        'CreateTime',
        'Description',
        'ID',
        'ModifyIndex',
        'ModifyTime',
        'Selector',
      ].sort(),
    );
    expect((await mgmt('GET', `/v1/acl/binding-rule/${created.body.ID}`)).body).toEqual(created.body);
    const management = await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'corp', BindType: 'management' });
    expect(management.body).toMatchObject({ BindType: 'management', BindName: '', Selector: '', Description: '' });

    const list = await mgmt('GET', '/v1/acl/binding-rules');
    expect(list.body).toHaveLength(2);
    expect(Object.keys(list.body[0]).sort()).toEqual([
      'AuthMethod',
      'CreateIndex',
      'Description',
      'Hash',
      'ID',
      'ModifyIndex',
    ]);
    expect((await h.call('GET', '/v1/acl/binding-rules')).status).toBe(403);
    expect((await mgmt('GET', '/v1/acl/binding-rule/00000000-0000-0000-0000-000000000000')).text).toBe(
      'ACL binding rule not found',
    );
  });

  it('updates a binding rule keeping stored values for empty fields; the auth method cannot change', async () => {
    await mgmt('POST', '/v1/acl/auth-method', jwtMethod('other'));
    const rule = (
      await mgmt('POST', '/v1/acl/binding-rule', {
        AuthMethod: 'corp',
        BindType: 'policy',
        BindName: 'readers',
        Selector: 'value.user == "ada"',
      })
    ).body;
    const path = `/v1/acl/binding-rule/${rule.ID}`;
    const onlyDescription = await mgmt('POST', path, { Description: 'just the text' });
    expect(onlyDescription.status).toBe(200);
    expect(onlyDescription.body).toMatchObject({
      Description: 'just the text',
      AuthMethod: 'corp',
      BindType: 'policy',
      BindName: 'readers',
      Selector: 'value.user == "ada"',
    });
    expect(onlyDescription.body.CreateTime).toBe(rule.CreateTime);
    expect((await mgmt('POST', path, { AuthMethod: 'other' })).text).toMatch(/cannot update the auth method/);
    expect((await mgmt('POST', path, { Selector: 'not (' })).status).toBe(400);
    expect((await mgmt('POST', path, { ID: '11111111-2222-3333-4444-555555555555' })).status).toBe(400);
    const toManagement = await mgmt('POST', path, { BindType: 'management' });
    expect(toManagement.body).toMatchObject({ BindType: 'management', BindName: '' });
    const listed = (await mgmt('GET', '/v1/acl/binding-rules')).body.find(
      (item: { ID: string }) => item.ID === rule.ID,
    );
    expect(listed.Hash).toBeTypeOf('string');
    expect((await mgmt('DELETE', path)).status).toBe(200);
    expect((await mgmt('DELETE', path)).status).toBe(404);
  });

  it('deleting an auth method deletes its binding rules', async () => {
    const rule = (await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'other', BindType: 'management' })).body;
    expect((await mgmt('DELETE', '/v1/acl/auth-method/other')).status).toBe(200);
    expect((await mgmt('GET', `/v1/acl/binding-rule/${rule.ID}`)).status).toBe(404);
    expect((await mgmt('GET', '/v1/acl/auth-method/other')).status).toBe(404);
  });
});
