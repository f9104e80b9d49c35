/**
 * Benchmarks that cannot rot (issue 28): every bench in test/bench runs here in its smoke mode (`BENCH_SMOKE=1`:
 * tiny counts, a few seconds each) as its own process, exactly as `npm run bench` starts it, on the test run's
 * DynamoDB Local. A bench passes when it exits 0 and printed each of its figure lines with a number; its figures
 * are never compared with anything (timing on a shared machine means nothing at these sizes).
 */
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { benches } from './summary.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const bin = path.join(root, 'node_modules', '.bin');

/** Two benches at a time: the machine has two cores, and each bench also loads DynamoDB Local. */
let running = 0;
const waiting: (() => void)[] = [];
async function slot<T>(task: () => Promise<T>): Promise<T> {
  if (running >= 2) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await task();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function runSmoke(
  file: string,
  extraEnv: Record<string, string> = {},
): Promise<{
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  seconds: number;
}> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(bin, 'tsx'), [path.join(here, file)], {
      cwd: root,
      env: {
        ...process.env,
        PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
        BENCH_SMOKE: '1',
        BENCH_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
        BENCH_SUMMARY: '',
        ...extraEnv,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout,
        stderr,
        seconds: (performance.now() - started) / 1000,
      }),
    );
  });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('benchmarks in smoke mode (BENCH_SMOKE=1): each runs end to end and prints its figures', () => {
  it('lists every *.bench.ts in test/bench, so npm run bench and this test run them all', () => {
    const onDisk = readdirSync(here)
      .filter((name) => name.endsWith('.bench.ts'))
      .sort();
    expect(benches.map((bench) => bench.file).sort()).toEqual(onDisk);
  });

  describe.concurrent('each bench', () => {
    it('profile-service-login.ts (not a bench: the service login profiler) exits 0 and prints where the time went', {
      timeout: 240_000,
    }, async () => {
      const profileOut = path.join(tmpdir(), `keyhaven-smoke-${process.pid}.cpuprofile`);
      const result = await slot(() => runSmoke('profile-service-login.ts', { PROFILE_OUT: profileOut })).finally(() =>
        rmSync(profileOut, { force: true }),
      );
      const output = `profile-service-login.ts (${result.seconds.toFixed(1)} s)\n--- stdout\n${result.stdout.slice(-4000)}\n--- stderr\n${result.stderr.slice(-4000)}`;
      expect({ code: result.code, signal: result.signal }, output).toEqual({ code: 0, signal: null });
      expect(result.stdout, output).toMatch(/^one warm login's DynamoDB calls \(\d+\):/m);
      expect(result.stdout, output).toMatch(/^main-thread samples by what the whole stack was doing/m);
    });

    for (const bench of benches) {
      it(`${bench.file} exits 0 and prints ${bench.figures.length} figure line(s)`, {
        timeout: 240_000,
      }, async () => {
        const result = await slot(() => runSmoke(bench.file));
        const output = `${bench.file} (${result.seconds.toFixed(1)} s)\n--- stdout\n${result.stdout.slice(-4000)}\n--- stderr\n${result.stderr.slice(-4000)}`;
        expect({ code: result.code, signal: result.signal }, output).toEqual({
          code: 0,
          signal: null,
        });
        for (const name of bench.figures) {
          expect(result.stdout, `${output}\n--- missing figure: ${name}`).toMatch(
            new RegExp(`^figure: ${escapeRegExp(name)} = -?\\d+(\\.\\d+)? \\(goal: `, 'm'),
          );
        }
      });
    }
  });
});
