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
const { scenarioOf } = await import('../deploy/engine-scenarios.ts');

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

  it('asks for a deploy scenario (test/deploy/engine-scenarios.ts) before the permission test runs its function', () => {
    // The one file outside its folder a new engine needs beside the list: what drives its function in the recorded
    // deploy run, so that its role is checked against what it really sends (test/deploy/function-permissions.test.ts).
    expect(() => scenarioOf(added)).toThrow(/no deploy scenario for the totp family: .*engine-scenarios\.ts/);
    for (const family of allSecretsFamilies.filter((family) => family !== 'system' && family !== added))
      expect(() => scenarioOf(family)).not.toThrow();
  });
});
