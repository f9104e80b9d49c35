import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { providedByRuntime } from '../../stacks/functions.ts';

/** What each function's bundle may hold beyond the shared core: its family's engine or login method, and libraries. */
const families: Record<string, { parts: string[]; packages: string[] }> = {
  'functions/scheduler/api.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/scheduler/event-stream.ts': { parts: ['scheduler'], packages: ['openid-client'] },
  'functions/jobs/sweep.ts': { parts: ['engines/kv', 'auth/jwt', 'scheduler'], packages: ['openid-client'] },
  'functions/jobs/table-stream.ts': { parts: [], packages: [] },
  'functions/deploy/first-tokens.ts': { parts: ['scheduler'], packages: [] },
};
/**
 * What each family's function loads (functions/secrets/family.ts with `KEYHAVEN_FAMILY` naming it): the entry's own
 * code and its family's backends (`secrets/family-list.ts` imports each lazily, into a chunk of its own).
 */
const secretsFamilies: Record<string, { backends: string[]; parts: string[]; packages: string[] }> = {
  system: {
    backends: ['sys/system-backend.ts', 'auth/token/token-backend.ts', 'identity-paths/identity-backend.ts'],
    parts: [],
    packages: [],
  },
  kv: { backends: ['engines/kv/kv-backend.ts'], parts: ['engines/kv'], packages: [] },
  jwt: { backends: ['auth/jwt/jwt-backend.ts'], parts: ['auth/jwt'], packages: ['openid-client'] },
  ldap: { backends: ['engines/ldap/ldap-backend.ts'], parts: ['engines/ldap'], packages: ['ldapts'] },
  mesh: { backends: ['engines/mesh/mesh-backend.ts'], parts: ['engines/mesh'], packages: [] },
  cloud: { backends: ['engines/cloud/cloud-backend.ts'], parts: ['engines/cloud'], packages: ['google-auth-library'] },
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
 * The inputs an entry loads for one family: split into chunks as the stacks build it, the chunks the entry imports
 * statically, and the family's backends (dynamic imports, `family-list.ts`) with all they import, even lazily (the
 * cloud engine loads Google's library on first use).
 */
async function loadedFor(entry: string, backends: string[]): Promise<string[]> {
  const result = await build({
    entryPoints: [entry],
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
  const visit = (output: string, lazilyToo: boolean) => {
    if (loaded.has(output)) return;
    loaded.add(output);
    for (const imported of outputs[output]?.imports ?? []) {
      if (
        (imported.kind === 'import-statement' || (lazilyToo && imported.kind === 'dynamic-import')) &&
        outputs[imported.path]
      )
        visit(imported.path, lazilyToo);
    }
  };
  const startOf = (entryPoint: string) => {
    const start = Object.keys(outputs).find((output) => outputs[output]?.entryPoint === entryPoint);
    if (!start) throw new Error(`${entryPoint} is not a chunk of ${entry}`);
    return start;
  };
  visit(startOf(entry), false);
  for (const backend of backends) visit(startOf(`packages/core/src/secrets/${backend}`), true);
  return [...loaded].flatMap((output) => Object.keys(outputs[output]?.inputs ?? {}));
}

describe("each family's function loads only its family's code", () => {
  for (const [family, expected] of Object.entries(secretsFamilies)) {
    it(`functions/secrets/family.ts as the ${family} function`, async () => {
      const contents = partsOf(await loadedFor('functions/secrets/family.ts', expected.backends));
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});

describe("each engine's job loads only its engine's code", () => {
  for (const [engine, expected] of Object.entries(engineJobs)) {
    it(`functions/jobs/engine-job.ts as the ${engine} job`, async () => {
      const contents = partsOf(
        await loadedFor('functions/jobs/engine-job.ts', [`engines/${engine}/${engine}-backend.ts`]),
      );
      expect(contents.parts.sort()).toEqual([...expected.parts].sort());
      expect(contents.packages.sort()).toEqual([...expected.packages].sort());
    });
  }
});
