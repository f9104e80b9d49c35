/**
 * Each Lambda's bundle as the stacks build it (esbuild, ESM, minified, everything bundled but the AWS SDK v3, which
 * the Lambda runtime provides; see `providedByRuntime` in stacks/functions.ts): prints the
 * minified size, the gzipped size, the packages that weigh most, and the module-init time (a fresh Node
 * process importing the bundle, as a cold start does before the first event). Figures only: nothing is asserted.
 * Targets from the deployment issue: under 1 MB and under 150 ms per function.
 * Run: part of `npm run bench`, or `npx tsx test/bench/bundles.bench.ts` (BENCH_INIT_RUNS, default 5; BENCH_SMOKE=1: 1). `BUNDLE_SDK=1`
 * bundles the AWS SDK too, to compare with taking it from the runtime.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { providedByRuntime } from '../../stacks/functions.ts';
import { figure, sized } from './summary.ts';

const entries = [
  'functions/secrets/system.ts',
  'functions/secrets/kv.ts',
  'functions/secrets/jwt.ts',
  'functions/secrets/ldap.ts',
  'functions/secrets/mesh.ts',
  'functions/secrets/cloud.ts',
  'functions/scheduler/api.ts',
  'functions/scheduler/event-stream.ts',
  'functions/jobs/sweep.ts',
  'functions/jobs/ldap.ts',
  'functions/jobs/cloud.ts',
  'functions/jobs/mesh.ts',
  'functions/jobs/table-stream.ts',
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
const initScript = `
globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };
const started = performance.now();
await import(process.argv[1]);
process.stdout.write(String(performance.now() - started));
`;

const packageOf = (input: string) => {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  return match?.[1] ?? (input.startsWith('packages/core') ? '@keyhaven/core' : input.split('/')[0] ?? input);
};

console.log(`external (provided by the nodejs24.x runtime, not bundled): ${providedByRuntime.join(', ')}`);
console.log('function                              minified    gzip   init p50   heaviest packages');
let slowest = { entry: '', ms: 0 };
let largest = { entry: '', kb: 0 };
try {
  for (const entry of entries) {
    const outfile = path.join(out, `${entry.replace(/[/.]/g, '_')}.mjs`);
    const result = await build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'esnext',
      mainFields: ['module', 'main'],
      minify: true,
      keepNames: true,
      metafile: true,
      logLevel: 'silent',
      banner: { js: banner },
      external: process.env.BUNDLE_SDK ? [] : [...providedByRuntime],
    });
    const bytes = readFileSync(outfile);
    const weights = new Map<string, number>();
    for (const [input, info] of Object.entries(result.metafile.outputs[path.relative(process.cwd(), outfile)]?.inputs ?? {})) {
      weights.set(packageOf(input), (weights.get(packageOf(input)) ?? 0) + info.bytesInOutput);
    }
    const heaviest = [...weights.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([name, size]) => `${name} ${(size / 1024).toFixed(0)}k`)
      .join(', ');
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const ms = execFileSync(nodeBinary, ['--input-type=module', '-e', initScript, pathToFileURL(outfile).href], {
        env: { ...process.env, KEYHAVEN_TABLE: 'bench', KEYHAVEN_KMS_KEY_ID: 'alias/bench', AWS_REGION: 'us-east-1' },
        encoding: 'utf8',
      });
      times.push(Number(ms));
    }
    times.sort((a, b) => a - b);
    const p50 = times[Math.floor(times.length / 2)] ?? Number.NaN;
    const gzipKb = gzipSync(bytes).length / 1024;
    if (!(p50 <= slowest.ms)) slowest = { entry, ms: p50 };
    if (gzipKb > largest.kb) largest = { entry, kb: gzipKb };
    console.log(
      `${entry.padEnd(36)} ${(bytes.length / 1024).toFixed(0).padStart(7)}k ${(gzipSync(bytes).length / 1024).toFixed(0).padStart(6)}k ${p50.toFixed(0).padStart(7)} ms   ${heaviest}`,
    );
  }
  figure('bundles', 'largest module-init p50 ms', slowest.ms, '<= 100 on an idle machine', slowest.entry);
  figure('bundles', 'largest bundle gzip kB', largest.kb, '<= 150', largest.entry);
} finally {
  rmSync(out, { recursive: true, force: true });
}
