/**
 * Each Lambda's bundle as the stacks build it (esbuild, ESM, minified, split into chunks, everything bundled but the
 * AWS SDK v3, which the Lambda runtime provides; see `providedByRuntime` and the `nodejs` options in stacks/functions.ts):
 * prints the minified and gzipped size of the whole bundle (every chunk), the gzipped size of what a cold start
 * loads (the entry and the chunks it imports statically; a chunk behind `await import()` loads only when a request
 * needs it), the packages that weigh most in what a cold start loads, and the module-init time (a fresh Node process
 * importing the entry, as a cold start does before the first event), against a fresh process importing only the AWS SDK
 * clients every function imports (the baseline row: most of any init, and no bundle can make it lighter). Figures
 * only: nothing is asserted.
 * Goals (issue 28): at most 150 kB gzip per function and a module init of at most 100 ms on an idle machine.
 * Run: part of `npm run bench`, or `npx tsx test/bench/bundles.bench.ts` (BENCH_INIT_RUNS, default 5; BENCH_SMOKE=1: 1). `BUNDLE_SDK=1`
 * bundles the AWS SDK too, to compare with taking it from the runtime.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { allSecretsFamilies, type SecretsFamily } from '../../packages/core/src/secrets/family-list.ts';
import { engineJobs } from '../../stacks/families.ts';
import { bundledFamilyDefine, providedByRuntime } from '../../stacks/functions.ts';
import { figure, sized } from './summary.ts';

/**
 * Every function as the stacks build it: a family's function and an engine's job are their entry built for that
 * family alone (`bundledFamilyDefine`), the other functions their entry as it is.
 */
const functions: Array<{ name: string; entry: string; family?: SecretsFamily }> = [
  ...allSecretsFamilies.map((family) => ({
    name: `the ${family} function`,
    entry: 'functions/secrets/family.ts',
    family,
  })),
  { name: 'functions/scheduler/api.ts', entry: 'functions/scheduler/api.ts' },
  { name: 'functions/scheduler/event-stream.ts', entry: 'functions/scheduler/event-stream.ts' },
  { name: 'functions/jobs/sweep.ts', entry: 'functions/jobs/sweep.ts' },
  ...(Object.keys(engineJobs) as SecretsFamily[]).map((family) => ({
    name: `the ${family} engine's job`,
    entry: 'functions/jobs/engine-job.ts',
    family,
  })),
  { name: 'functions/jobs/table-stream.ts', entry: 'functions/jobs/table-stream.ts' },
];

// The banner SST v2 puts on ESM bundles, so CommonJS dependencies can still `require`.
const banner = [
  `import { createRequire as topLevelCreateRequire } from 'module';`,
  'const require = topLevelCreateRequire(import.meta.url);',
  `import { fileURLToPath as topLevelFileUrlToPath, URL as topLevelURL } from "url"`,
  'const __dirname = topLevelFileUrlToPath(new topLevelURL(".", import.meta.url))',
].join('\n');

const runs = sized('BENCH_INIT_RUNS', 5, 1);
// Inside the project, so the bundles' external SDK imports resolve to node_modules as they do to the runtime's copy.
const cacheDir = path.resolve('node_modules', '.cache');
mkdirSync(cacheDir, { recursive: true });
const out = mkdtempSync(path.join(cacheDir, 'keyhaven-bundles-'));
const nodeBinary = process.execPath;

// The streaming entry calls the Lambda runtime's `awslambda` global at import; give the child a stand-in.
// Prints the entry's module init, then how long loading the family's backend chunks takes after it (what a family's
// function or an engine's job does on its first event, before it can answer), in ms.
const initScript = `
globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };
const started = performance.now();
await import(process.argv[1]);
const initialised = performance.now();
for (const chunk of process.argv.slice(2)) await import(chunk);
process.stdout.write(JSON.stringify([initialised - started, performance.now() - initialised]));
`;

const packageOf = (input: string) => {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  return match?.[1] ?? (input.startsWith('packages/core') ? '@keyhaven/core' : (input.split('/')[0] ?? input));
};

console.log(`external (provided by the nodejs24.x runtime, not bundled): ${providedByRuntime.join(', ')}`);
console.log(
  'function                              minified    gzip  at init   init p50  +family p50   heaviest packages at init',
);
// The baseline of every init: a fresh process importing only the AWS SDK clients the functions import at init
// (DynamoDB, and KMS for the data key), which the Lambda runtime provides and which no bundle can make lighter.
const sdkOnly = `
const started = performance.now();
await import('@aws-sdk/client-dynamodb');
await import('@aws-sdk/client-kms');
process.stdout.write(JSON.stringify([performance.now() - started, 0]));
`;
const sdkTimes = Array.from({ length: runs }, () => {
  const output = execFileSync(nodeBinary, ['--input-type=module', '-e', sdkOnly], { encoding: 'utf8' });
  return (JSON.parse(output) as [number, number])[0];
});
const sdkP50 = sdkTimes.sort((a, b) => a - b)[Math.floor(sdkTimes.length / 2)] ?? Number.NaN;
console.log(
  `${'(baseline) the SDK clients alone'.padEnd(36)} ${'–'.padStart(8)} ${'–'.padStart(7)} ${'–'.padStart(8)} ${sdkP50.toFixed(0).padStart(7)} ms        –      @aws-sdk/client-dynamodb, @aws-sdk/client-kms`,
);
let slowest = { entry: '', ms: 0 };
let largest = { entry: '', kb: 0 };
let largestAtInit = { entry: '', kb: 0 };
try {
  for (const { name, entry, family } of functions) {
    const outdir = path.join(out, name.replace(/[^a-z0-9]+/gi, '_'));
    // The options SST builds with (sst/runtime/handlers/node.js for an ESM function) and ours, which must stay as
    // stacks/functions.ts gives them in `nodejs`: minify, splitting, the runtime's SDK external.
    const result = await build({
      entryPoints: [entry],
      outdir,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'esnext',
      mainFields: ['module', 'main'],
      minify: true,
      splitting: true,
      keepNames: true,
      metafile: true,
      logLevel: 'silent',
      banner: { js: banner },
      external: process.env.BUNDLE_SDK ? [] : [...providedByRuntime],
      ...(family ? { define: bundledFamilyDefine(family) } : {}),
    });
    const outputs = result.metafile.outputs;
    const entryOutput = Object.keys(outputs).find((file) => outputs[file]?.entryPoint === entry);
    if (!entryOutput) throw new Error(`${entry}: esbuild wrote no output for the entry`);
    // What a cold start loads: the entry and, transitively, the chunks it imports statically.
    const atInit = new Set<string>();
    const pending = [entryOutput];
    while (pending.length > 0) {
      const file = pending.pop() as string;
      if (atInit.has(file)) continue;
      atInit.add(file);
      for (const imported of outputs[file]?.imports ?? [])
        if (imported.kind === 'import-statement' && !imported.external) pending.push(imported.path);
    }
    const sizes = (files: string[]) => {
      const bytes = files.map((file) => readFileSync(file));
      return {
        minified: bytes.reduce((sum, b) => sum + b.length, 0) / 1024,
        gzip: bytes.reduce((sum, b) => sum + gzipSync(b).length, 0) / 1024,
      };
    };
    const whole = sizes(Object.keys(outputs).filter((file) => file.endsWith('.mjs')));
    const initial = sizes([...atInit]);
    const weights = new Map<string, number>();
    for (const file of atInit) {
      for (const [input, info] of Object.entries(outputs[file]?.inputs ?? {})) {
        weights.set(packageOf(input), (weights.get(packageOf(input)) ?? 0) + info.bytesInOutput);
      }
    }
    const heaviest = [...weights.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([name, size]) => `${name} ${(size / 1024).toFixed(0)}k`)
      .join(', ');
    // The family's backends: the chunks esbuild made for family-list.ts's `import()`s that this build kept.
    const backendChunks = Object.keys(outputs).filter((file) => outputs[file]?.entryPoint?.endsWith('-backend.ts'));
    const times: number[] = [];
    const familyTimes: number[] = [];
    for (let run = 0; run < runs; run++) {
      const output = execFileSync(
        nodeBinary,
        [
          '--input-type=module',
          '-e',
          initScript,
          ...[entryOutput, ...backendChunks].map((file) => pathToFileURL(path.resolve(file)).href),
        ],
        {
          env: { ...process.env, KEYHAVEN_TABLE: 'bench', KEYHAVEN_KMS_KEY_ID: 'alias/bench', AWS_REGION: 'us-east-1' },
          encoding: 'utf8',
        },
      );
      const [init, family] = JSON.parse(output) as [number, number];
      times.push(init);
      familyTimes.push(family);
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const p50 = median(times);
    const familyP50 = backendChunks.length > 0 ? `${median(familyTimes).toFixed(0).padStart(7)} ms` : '      –   ';
    if (!(p50 <= slowest.ms)) slowest = { entry: name, ms: p50 };
    if (whole.gzip > largest.kb) largest = { entry: name, kb: whole.gzip };
    if (initial.gzip > largestAtInit.kb) largestAtInit = { entry: name, kb: initial.gzip };
    console.log(
      `${name.padEnd(36)} ${whole.minified.toFixed(0).padStart(7)}k ${whole.gzip.toFixed(0).padStart(6)}k ${initial.gzip.toFixed(0).padStart(7)}k ${p50.toFixed(0).padStart(7)} ms  ${familyP50}   ${heaviest}`,
    );
  }
  figure(
    'bundles',
    'largest module-init p50 ms',
    slowest.ms,
    '<= 100 on an idle machine',
    `${slowest.entry}; the SDK clients alone: ${sdkP50.toFixed(0)} ms`,
  );
  figure('bundles', 'largest bundle gzip kB', largest.kb, '<= 150', largest.entry);
  figure(
    'bundles',
    'largest gzip kB loaded at init',
    largestAtInit.kb,
    '<= 150, nothing the request does not use',
    largestAtInit.entry,
  );
} finally {
  rmSync(out, { recursive: true, force: true });
}
