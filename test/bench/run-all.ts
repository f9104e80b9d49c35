/**
 * `npm run bench`: every bench of summary.ts's list, one after another, each as its own process (output as it
 * comes), then one summary table: every figure the benches reported, its goal from issue 28, and the machine's
 * 1-minute load average while that bench ran (sampled every 2 s). A bench that fails is named at the end and the
 * run exits 1, after the others have still run. Extra arguments pick benches by file name (`npm run bench -- jwt`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benches, type Figure, formatValue } from './summary.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const bin = path.join(root, 'node_modules', '.bin');
const picked = process.argv.slice(2);
const chosen = benches.filter((bench) => picked.length === 0 || picked.some((word) => bench.file.includes(word)));

const work = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-summary-'));
const summaryFile = path.join(work, 'figures.jsonl');
const loads = new Map<string, number[]>();
const failed: string[] = [];
const started = Date.now();

for (const bench of chosen) {
  const samples: number[] = [loadavg()[0] ?? 0];
  loads.set(bench.file, samples);
  const sampler = setInterval(() => samples.push(loadavg()[0] ?? 0), 2000);
  console.log(`\n=== ${bench.file} ===`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(path.join(bin, 'tsx'), [path.join(here, bench.file)], {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
        BENCH_SUMMARY: summaryFile,
      },
    });
    child.on('close', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  });
  clearInterval(sampler);
  samples.push(loadavg()[0] ?? 0);
  if (code !== 0) failed.push(`${bench.file} (exit ${code})`);
}

let figures: Figure[] = [];
try {
  figures = readFileSync(summaryFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Figure);
} catch {
  // no bench reported a figure
}
rmSync(work, { recursive: true, force: true });

const loadOf = (file: string) => {
  const samples = loads.get(file) ?? [];
  return `${Math.min(...samples).toFixed(1)}–${Math.max(...samples).toFixed(1)}`;
};
const header = ['bench', 'figure', 'value', 'goal', 'load (1 min) during', 'note'];
const rows = figures.map((each) => [
  each.bench,
  each.name,
  formatValue(each.value),
  each.goal,
  loadOf(`${each.bench}.bench.ts`),
  each.note ?? '',
]);
const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
const line = (cells: string[]) =>
  cells
    .map((cell, column) => cell.padEnd(widths[column] ?? 0))
    .join('  ')
    .trimEnd();
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
console.log(
  `\n=== summary: ${figures.length} figures from ${chosen.length} benches in ${minutes} min; ${cpus().length} cores, Node ${process.version} ===`,
);
console.log("Figures move with the machine's load (other work shares its cores); the ratios are the point.\n");
console.log(line(header));
console.log(widths.map((width) => '-'.repeat(width)).join('  '));
for (const row of rows) console.log(line(row));
if (failed.length > 0) {
  console.log(`\nFAILED: ${failed.join(', ')}`);
  process.exitCode = 1;
}
