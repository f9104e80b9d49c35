import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { providedByRuntime } from '../../stacks/functions.ts';

/** What each function's bundle may hold beyond the shared core: its family's engine or login method, and libraries. */
const families: Record<string, { parts: string[]; packages: string[] }> = {
  'functions/secrets/system.ts': { parts: [], packages: [] },
  'functions/secrets/kv.ts': { parts: ['engines/kv'], packages: [] },
  'functions/secrets/jwt.ts': { parts: ['auth/jwt'], packages: ['openid-client'] },
  'functions/secrets/ldap.ts': { parts: ['engines/ldap'], packages: ['ldapts'] },
  'functions/secrets/mesh.ts': { parts: ['engines/mesh'], packages: [] },
  'functions/secrets/cloud.ts': { parts: ['engines/cloud'], packages: ['google-auth-library'] },
  'functions/scheduler/api.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/scheduler/event-stream.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/jobs/sweep.ts': { parts: ['engines/kv', 'auth/jwt', 'scheduler'], packages: ['openid-client'] },
  'functions/jobs/ldap.ts': { parts: ['engines/ldap'], packages: ['ldapts'] },
  'functions/jobs/cloud.ts': { parts: ['engines/cloud'], packages: ['google-auth-library'] },
  'functions/jobs/mesh.ts': { parts: ['engines/mesh'], packages: [] },
  'functions/jobs/table-stream.ts': { parts: [], packages: [] },
  'functions/deploy/first-tokens.ts': { parts: ['scheduler'], packages: [] },
};
const allParts = ['engines/kv', 'engines/ldap', 'engines/mesh', 'engines/cloud', 'auth/jwt', 'scheduler'];
const familyPackages = ['ldapts', 'google-auth-library', 'openid-client', 'peggy'];

/** The parts of the core and the family libraries an entry's bundle includes, from esbuild's own account of it. */
async function contentsOf(entry: string): Promise<{ parts: string[]; packages: string[] }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    mainFields: ['module', 'main'],
    write: false,
    metafile: true,
    logLevel: 'silent',
    external: [...providedByRuntime],
  });
  const inputs = Object.keys(result.metafile.inputs);
  const part = (name: string) => (name === 'scheduler' ? 'packages/core/src/scheduler/' : `packages/core/src/secrets/${name}/`);
  return {
    parts: allParts.filter((name) => inputs.some((input) => input.startsWith(part(name)))),
    packages: familyPackages.filter((name) => inputs.some((input) => input.includes(`node_modules/${name}/`))),
  };
}

describe("each function's bundle holds only its family's code", () => {
  for (const [entry, expected] of Object.entries(families)) {
    it(entry, async () => {
      const contents = await contentsOf(entry);
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});
