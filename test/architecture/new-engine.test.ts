import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import type { SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';

/**
 * "An engine is one folder and one line" (issue 42), checked for the stacks and the deploy tests: here the family list
 * (`packages/core/src/secrets/family-list.ts`) has one more line, a `totp` family whose engine issues leases and has
 * periodic work and a throttled credentials route, as a new engine's folder would declare them. Every table the stacks
 * and the deploy tests derive must then hold it, with nothing edited but that line. (The suite's route tables, with
 * an extended list passed in, are checked in engine-tables.test.ts.)
 */
const totp: Backend = {
  type: 'totp',
  kind: 'secret',
  paths: [
    {
      pattern: 'code/:name',
      fields: z.object({ name: z.string() }),
      operations: { read: async () => undefined },
    },
    {
      pattern: 'keys/:name',
      fields: z.object({
        name: z.string(),
        issuer: z.string(),
        digits: z.number().int().min(6),
        algorithm: z.enum(['SHA1', 'SHA256']),
        exported: z.boolean().optional(),
      }),
      operations: { create: async () => undefined, read: async () => undefined, delete: async () => undefined },
    },
    {
      pattern: 'keys',
      fields: z.object({}),
      operations: { list: async () => undefined },
    },
  ],
  leases: { totp_seed: { revoke: async () => undefined } },
  periodic: [
    {
      name: 'seed rotation',
      everySeconds: 60,
      run: async () => ({ done: 0, failed: 0 }),
      queues: ['totp-rotation'],
      reads: { 'password-policies': 'a new seed is generated under a named password policy' },
    },
  ],
  deployment: { throttled: { 'code/{proxy+}': 'credentials' } },
};

vi.mock('../../packages/core/src/secrets/family-list.ts', async (importOriginal) => {
  const listed = await importOriginal<typeof import('../../packages/core/src/secrets/family-list.ts')>();
  const familyList = { ...listed.familyList, totp: async (): Promise<Backend[]> => [totp] };
  return {
    ...listed,
    familyList,
    allSecretsFamilies: Object.keys(familyList),
    loadFamily: (family: keyof typeof familyList) => familyList[family](),
  };
});

/** The new family's name, which the list's type does not know at compile time. */
const added = 'totp' as SecretsFamily;
const { allSecretsFamilies } = await import('../../packages/core/src/secrets/families.ts');
const { engineFamilies, engineJobs, engineLeaseTypes, periodicQueues } = await import('../../stacks/families.ts');
const { defaultMounts, familyOfType, stageConfig } = await import('../../stacks/stage-config.ts');
const { familyHandlers, secretsRoutes } = await import('../../stacks/SecretsApi.ts');
const { throttledSecretsRoutes } = await import('../../stacks/throttling.ts');
const { tableAccessOf } = await import('../../stacks/permissions.ts');
const { mountOf } = await import('../support/secrets-routes.ts');
const { engineScenarios, scenarioOf } = await import('../deploy/engine-scenarios.ts');

describe('a new line in the family list reaches every derived table of the stacks and the deploy tests', () => {
  it('is a family of the list, an engine family with a job of its own, mounted at its type', () => {
    expect(allSecretsFamilies).toContain('totp');
    expect(engineFamilies).toContain('totp');
    expect(engineJobs).toHaveProperty('totp');
    expect(familyOfType.totp).toBe('totp');
    expect(mountOf.totp).toBe('totp');
  });

  it('is mounted by every stage that lists no mounts (and the example prod), and routed to a function of its own', () => {
    expect(defaultMounts).toContainEqual({ path: 'totp', type: 'totp' });
    expect(stageConfig('test').mounts).toContainEqual({ path: 'totp', type: 'totp' });
    expect(stageConfig('prod').mounts).toContainEqual({ path: 'totp', type: 'totp' });
    // A stage that chooses its mounts does not get it.
    expect(stageConfig('example-private').mounts.map((mount) => mount.type)).not.toContain('totp');
    expect(familyHandlers[added]).toBe(familyHandlers.kv);
    const routes = secretsRoutes(stageConfig('test').mounts);
    expect(routes['ANY /v1/totp/{proxy+}']).toBe('totp');
    expect(throttledSecretsRoutes(stageConfig('test').mounts)).toMatchObject({
      'ANY /v1/totp/code/{proxy+}': 'credentials',
    });
  });

  it("grants its function and its job what its backend declares: its lease queue, its periodic job's queue and reads", () => {
    expect(engineLeaseTypes(added)).toEqual(['totp']);
    expect(periodicQueues(added)).toEqual(['totp-rotation', 'totp-rotation#*']);
    const fn = tableAccessOf('Secrets-totp');
    expect(fn.reads).toEqual(tableAccessOf('Secrets-mesh').reads);
    const job = tableAccessOf('Job-totp');
    expect(job.dueQueues).toEqual(['expiry:totp', 'expiry:totp#*', 'totp-rotation', 'totp-rotation#*']);
    expect(job.reads).toContain('password-policies');
    expect(job.unrecorded?.['read:password-policies']).toBe('a new seed is generated under a named password policy');
  });

  it('gets the deploy scenario derived from its OpenAPI rows, while the listed engines keep their own', async () => {
    // No file outside its folder: without a scenario of its own (test/deploy/engine-scenarios.ts), the recorded deploy
    // run (test/deploy/function-permissions.test.ts) drives its function through its rows (generic-scenario.ts).
    const scenario = scenarioOf(added);
    expect(scenario).not.toBe(engineScenarios.kv);
    for (const family of allSecretsFamilies.filter((family) => family !== 'system' && family !== added))
      expect(scenarioOf(family)).toBe(engineScenarios[family]);
    // Its token has a policy, read in its function; the engine declares leases, so the run reaches their grants.
    expect(scenario.runNotes).toEqual({ 'read:policies': undefined });
    const sent: Array<{ fn: string; method: string; url: string; body?: unknown; token?: string }> = [];
    const answer = (fn: string, method: string, url: string, body?: unknown, token?: string) => {
      sent.push({ fn, method, url, body, token });
      if (url === '/v1/auth/token/create')
        return Promise.resolve({ status: 200, body: { auth: { client_token: 't1' } } });
      // The code read answers a lease, which the scenario then revokes through the system function.
      if (url === '/v1/totp/code/scenario') return Promise.resolve({ status: 200, body: { lease_id: 'totp/code/l1' } });
      return Promise.resolve({ status: 404, body: {} });
    };
    const handler = async () => undefined;
    await scenario.drive({
      consul: undefined as never,
      slapd: undefined as never,
      google: undefined as never,
      fn: 'Secrets-totp',
      handler,
      system: handler,
      call: (fn, _handler, method, url, body, token) => answer(fn, method, url, body, token),
      send: (fn, _handler, method, url, body, token) => answer(fn, method, url, body, token),
      limited: 'unused',
    });
    expect(sent).toEqual([
      {
        fn: 'Secrets-system',
        method: 'PUT',
        url: '/v1/sys/policies/acl/scenario-totp',
        body: { policy: 'path "totp/*" { capabilities = ["create", "read", "update", "delete", "list"] }' },
        token: undefined,
      },
      {
        fn: 'Secrets-system',
        method: 'POST',
        url: '/v1/auth/token/create',
        body: { policies: ['scenario-totp'], num_uses: 1000 },
        token: undefined,
      },
      { fn: 'Secrets-totp', method: 'GET', url: '/v1/totp/code/scenario', body: undefined, token: 't1' },
      {
        fn: 'Secrets-totp',
        method: 'POST',
        url: '/v1/totp/keys/scenario',
        body: { issuer: 'scenario', digits: 6, algorithm: 'SHA1' },
        token: 't1',
      },
      { fn: 'Secrets-totp', method: 'GET', url: '/v1/totp/keys/scenario', body: undefined, token: 't1' },
      { fn: 'Secrets-totp', method: 'GET', url: '/v1/totp/keys/?list=true', body: undefined, token: 't1' },
      { fn: 'Secrets-totp', method: 'DELETE', url: '/v1/totp/keys/scenario', body: undefined, token: 't1' },
      {
        fn: 'Secrets-system',
        method: 'PUT',
        url: '/v1/sys/leases/revoke',
        body: { lease_id: 'totp/code/l1' },
        token: undefined,
      },
    ]);
  });
});
