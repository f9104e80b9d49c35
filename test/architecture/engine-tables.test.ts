import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';
import { backendFilesOfFamilies, expectedBundle } from '../support/bundle-checks.ts';
import { mountOf, mountsOf, mountsToEnable, secretsRoutes } from '../support/secrets-routes.ts';

/**
 * "One folder and one line" (issue 42) for the suite's engine tables: the fuzz (test/fuzz/routes.fuzz.test.ts), the
 * OpenAPI test, the path-property attack test and the bundle tests derive what they mount, route and check from the
 * family list (the stacks' and deploy tests' tables: new-engine.test.ts). Here the derivations are given the family list's backends plus a fake engine and a fake login method
 * (as a new line in `family-list.ts` would add them), and each must pick them up, without a table edited anywhere.
 */
const fakeEngine: Backend = {
  type: 'totp-fake',
  kind: 'secret',
  paths: [
    {
      pattern: 'keys/:name',
      fields: z.object({ name: z.string(), period: z.number().optional() }),
      operations: { read: async () => undefined, update: async () => undefined },
    },
  ],
};
const fakeLogin: Backend = {
  type: 'fake-login',
  kind: 'auth',
  paths: [{ pattern: 'login', fields: z.object({ role: z.string() }), operations: { update: async () => undefined } }],
};
const listed = backendsOf(allSecretsFamilies);
const extended = [...listed, fakeEngine, fakeLogin];

describe('the suite derives its engine tables from the family list', () => {
  it('mounts every backend of the list at a path of its own, the built-ins where the core puts them', () => {
    expect(Object.keys(mountOf).sort()).toEqual(listed.map((backend) => backend.type).sort());
    expect(new Set(Object.values(mountOf)).size).toBe(listed.length);
    expect(mountOf).toMatchObject({ system: 'sys', token: 'auth/token', identity: 'identity', kv: 'secret' });
  });

  it('mounts a new engine at its type and a new login method under auth/ (fuzz, OpenAPI and attack tests)', () => {
    expect(mountsOf(extended)).toEqual({ ...mountOf, 'totp-fake': 'totp-fake', 'fake-login': 'auth/fake-login' });
    const enabled = mountsToEnable(extended);
    expect(enabled).toContainEqual({ table: 'secret', path: 'totp-fake', type: 'totp-fake' });
    expect(enabled).toContainEqual({ table: 'auth', path: 'fake-login', type: 'fake-login' });
    // The built-ins are mounted by the core, never enabled by a test.
    expect(enabled.map((mount) => mount.type)).not.toContain('system');
    expect(enabled.map((mount) => mount.type)).not.toContain('token');
    expect(enabled.map((mount) => mount.type)).not.toContain('identity');
  });

  it("routes a new engine's rows, so the fuzz and the OpenAPI test reach them", () => {
    const routes = secretsRoutes(extended);
    expect(routes).toContainEqual({
      service: 'secrets',
      name: 'totp-fake/keys/:name',
      segments: ['totp-fake', 'keys', ':name'],
      methods: ['GET', 'POST', 'PUT'],
      fields: ['name', 'period'],
    });
    expect(routes.find((route) => route.name === 'auth/fake-login/login')?.methods).toEqual(['POST', 'PUT']);
    expect(routes.length).toBe(secretsRoutes(listed).length + 2);
  });

  it("expects a new family's bundle to hold its backend and its folder, read from the list's line", () => {
    const listSource = readFileSync('packages/core/src/secrets/family-list.ts', 'utf8');
    const line = `  'totp-fake': async (): Promise<Backend[]> => [(await import('./engines/totp-fake/totp-fake-backend.ts')).totp],\n`;
    const extendedSource = listSource.replace(/^};$/m, `${line}};`);
    const files = backendFilesOfFamilies(extendedSource);
    expect(files).toEqual({
      ...backendFilesOfFamilies(listSource),
      'totp-fake': ['engines/totp-fake/totp-fake-backend.ts'],
    });
    expect(files.system).toEqual([
      'sys/system-backend.ts',
      'auth/token/token-backend.ts',
      'identity-paths/identity-backend.ts',
    ]);
    expect(expectedBundle('totp-fake', ['engines/kv', 'engines/totp-fake', 'auth/jwt'], files)).toEqual({
      backends: ['engines/totp-fake/totp-fake-backend.ts'],
      parts: ['engines/totp-fake'],
      packages: [],
    });
    expect(expectedBundle('jwt', ['engines/kv', 'auth/jwt'], files).parts).toEqual(['auth/jwt']);
  });
});
