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
  'functions/jobs/table-stream.ts': { parts: [], packages: [] },
  'functions/deploy/first-tokens.ts': { parts: ['scheduler'], packages: [] },
};
/**
 * What each engine's job loads (functions/jobs/engine-job.ts with `KEYHAVEN_ENGINE` naming it): the entry's own code
 * and its engine's chunk. The other families are chunks of the same bundle that this engine's job never loads.
 */
const engineJobs: Record<string, { parts: string[]; packages: string[] }> = {
  ldap: { parts: ['engines/ldap'], packages: ['ldapts'] },
  cloud: { parts: ['engines/cloud'], packages: ['google-auth-library'] },
  mesh: { parts: ['engines/mesh'], packages: [] },
};
const allParts = ['engines/kv', 'engines/ldap', 'engines/mesh', 'engines/cloud', 'auth/jwt', 'scheduler'];
const familyPackages = ['ldapts', 'google-auth-library', 'openid-client', 'peggy'];

/** The parts of the core and the family libraries an entry's bundle includes, from esbuild's own account of it. */
async function contentsOf(entry: string): Promise<{ parts: string[]; packages: string[] }> {
  return partsOf(await bundledInputs(entry));
}

async function bundledInputs(entry: string): Promise<string[]> {
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
  return Object.keys(result.metafile.inputs);
}

function partsOf(inputs: string[]): { parts: string[]; packages: string[] } {
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

/**
 * The inputs an engine's job may load: split into chunks as the stacks build it, the chunks the entry imports
 * statically, and its engine's backend (a dynamic import, `family-list.ts`) with all it imports.
 */
async function engineJobInputs(engine: string): Promise<string[]> {
  const result = await build({
    entryPoints: ['functions/jobs/engine-job.ts'],
    bundle: true,
    splitting: true,
    outdir: 'out',
    platform: 'node',
    format: 'esm',
    mainFields: ['module', 'main'],
    write: false,
    metafile: true,
    logLevel: 'silent',
    external: [...providedByRuntime],
  });
  const outputs = result.metafile.outputs;
  const loaded = new Set<string>();
  // The entry's static imports; then its engine's chunk with everything that chunk imports, even lazily (the cloud
  // engine loads Google's library on first use).
  const visit = (output: string, lazilyToo: boolean) => {
    if (loaded.has(output)) return;
    loaded.add(output);
    for (const imported of outputs[output]?.imports ?? []) {
      if ((imported.kind === 'import-statement' || (lazilyToo && imported.kind === 'dynamic-import')) && outputs[imported.path]) visit(imported.path, lazilyToo);
    }
  };
  const startOf = (entryPoint: string) => Object.keys(outputs).find((output) => outputs[output]?.entryPoint === entryPoint);
  visit(startOf('functions/jobs/engine-job.ts') ?? '', false);
  visit(startOf(`packages/core/src/secrets/engines/${engine}/${engine}-backend.ts`) ?? '', true);
  return [...loaded].flatMap((output) => Object.keys(outputs[output]?.inputs ?? {}));
}

describe("each engine's job loads only its engine's code", () => {
  for (const [engine, expected] of Object.entries(engineJobs)) {
    it(`functions/jobs/engine-job.ts as the ${engine} job`, async () => {
      const contents = partsOf(await engineJobInputs(engine));
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});
