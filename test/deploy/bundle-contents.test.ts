import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { allSecretsFamilies, type SecretsFamily } from '../../packages/core/src/secrets/family-list.ts';
import { engineJobs } from '../../stacks/families.ts';
import { bundledFamilyDefine, providedByRuntime } from '../../stacks/functions.ts';
import { backendFilesOfFamilies, expectedBundle, familyPackages } from '../support/bundle-checks.ts';

/** What each function's bundle may hold beyond the shared core: its family's engine or login method, and libraries. */
const families: Record<string, { parts: string[]; packages: string[] }> = {
  'functions/scheduler/api.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/scheduler/event-stream.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/jobs/sweep.ts': { parts: ['engines/kv', 'auth/jwt', 'scheduler'], packages: ['openid-client'] },
  'functions/jobs/table-stream.ts': { parts: [], packages: [] },
  'functions/jobs/evaluation-trigger.ts': { parts: ['scheduler'], packages: [] },
  'functions/deploy/first-tokens.ts': { parts: ['scheduler'], packages: [] },
};
const backendFiles = backendFilesOfFamilies();
/**
 * Every engine and login folder on disk but the built-ins' (`auth/token`, which the system family holds), and the
 * scheduler: a new engine's code is looked for in every bundle.
 */
const allParts = [
  ...['engines', 'auth'].flatMap((kind) =>
    readdirSync(`packages/core/src/secrets/${kind}`, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${kind}/${entry.name}`),
  ),
  'scheduler',
].filter((part) => !(backendFiles.system ?? []).some((file) => file.startsWith(`${part}/`)));

/** The parts of the core and the family libraries an entry's bundle includes, from esbuild's own account of it. */
async function contentsOf(entry: string): Promise<{ parts: string[]; packages: string[] }> {
  return partsOf(await bundledInputs(entry));
}

/** The esbuild options both checks build with: an ESM bundle for node, the runtime's SDK left out, nothing written. */
const asTheStacksBuild = {
  bundle: true,
  platform: 'node' as const,
  format: 'esm' as const,
  mainFields: ['module', 'main'],
  write: false,
  metafile: true as const,
  logLevel: 'silent' as const,
  external: [...providedByRuntime],
};

async function bundledInputs(entry: string): Promise<string[]> {
  const result = await build({ ...asTheStacksBuild, entryPoints: [entry] });
  return Object.keys(result.metafile.inputs);
}

function partsOf(inputs: string[]): { parts: string[]; packages: string[] } {
  const part = (name: string) =>
    name === 'scheduler' ? 'packages/core/src/scheduler/' : `packages/core/src/secrets/${name}/`;
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

/**
 * Everything a family's (or an engine job's) zip holds: the entry built as the stacks build that function, split into
 * chunks and with `bundledFamilyDefine(family)`, every output file's inputs, whether a cold start loads it or a
 * request loads it later (the cloud engine loads Google's library on first use).
 */
async function zipFor(entry: string, family: SecretsFamily): Promise<string[]> {
  const result = await build({
    ...asTheStacksBuild,
    entryPoints: [entry],
    splitting: true,
    outdir: 'out',
    define: bundledFamilyDefine(family),
  });
  return Object.values(result.metafile.outputs).flatMap((output) => Object.keys(output.inputs));
}

describe("each family's function bundles only its family's code", () => {
  // Every family of the family list: the entry's own code and its family's backends (read from the list), no other
  // family's.
  for (const family of allSecretsFamilies) {
    it(`functions/secrets/family.ts as the ${family} function`, async () => {
      const expected = expectedBundle(family, allParts, backendFiles);
      expect(expected.backends.length, family).toBeGreaterThan(0);
      const inputs = await zipFor('functions/secrets/family.ts', family as SecretsFamily);
      for (const backend of expected.backends) expect(inputs).toContain(`packages/core/src/secrets/${backend}`);
      const contents = partsOf(inputs);
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});

describe("each engine's job bundles only its engine's code", () => {
  // Every engine the stacks give a job (`engineJobs` of stacks/families.ts, derived from the backends): the entry's own
  // code and its engine's, no other family's.
  for (const engine of Object.keys(engineJobs)) {
    it(`functions/jobs/engine-job.ts as the ${engine} job`, async () => {
      const expected = expectedBundle(engine, allParts, backendFiles);
      const inputs = await zipFor('functions/jobs/engine-job.ts', engine as SecretsFamily);
      for (const backend of expected.backends) expect(inputs).toContain(`packages/core/src/secrets/${backend}`);
      const contents = partsOf(inputs);
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});

describe("the scheduler's functions bundle none of the secrets service", () => {
  // They run on the table, keyring, clock and log alone (`composition/shared-core.ts`, `entry-points/shared-core-from-environment.ts`): a module of the secrets
  // service in their bundle is code every cold start of theirs would load for nothing (issue 28).
  for (const entry of ['functions/scheduler/api.ts', 'functions/scheduler/event-stream.ts']) {
    it(entry, async () => {
      const inputs = await bundledInputs(entry);
      expect(inputs.filter((input) => input.startsWith('packages/core/src/secrets/'))).toEqual([]);
      expect(inputs).toContain('packages/core/src/composition/shared-core.ts');
      // Its schemas use zod's mini API, which tree-shakes; zod's classic API (methods on every schema) would bring
      // all of zod back (about 50 kB more minified).
      expect(inputs.filter((input) => input.includes('node_modules/zod/v4/classic/'))).toEqual([]);
      expect(inputs.some((input) => input.includes('node_modules/zod/v4/mini/'))).toBe(true);
    });
  }
});
