import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const installer = fileURLToPath(new URL('./install-test-deps.sh', import.meta.url));
const cacheDir = path.join(repo, 'node_modules', '.cache', 'keyhaven-go');

/**
 * Builds a Go harness (one `main` package file under test/) against Debian's HashiCorp libraries in
 * /usr/share/gocode, once per content: the binary is cached by a hash of the source.
 */
export function buildGoHarness(sourceFile: string): string {
  execFileSync('sh', [installer], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
  const source = readFileSync(sourceFile);
  const name = `${path.basename(sourceFile, '.go')}-${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;
  const binary = path.join(cacheDir, name);
  if (existsSync(binary)) return binary;
  mkdirSync(cacheDir, { recursive: true });
  execFileSync('go', ['build', '-o', binary, sourceFile], {
    env: {
      ...process.env,
      GO111MODULE: 'off',
      GOPATH: '/usr/share/gocode',
      GOFLAGS: '',
      GOCACHE: path.join(cacheDir, 'build'),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 300_000,
  });
  return binary;
}

/**
 * Runs a harness that reads one JSON case per line on stdin and prints one JSON verdict per line, and returns
 * the verdicts in order. All cases go in one process run.
 */
export function runGoHarness<Case, Verdict>(binary: string, cases: Case[]): Promise<Verdict[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${path.basename(binary)} exited with ${code}`));
      const lines = out.split('\n').filter((line) => line !== '');
      if (lines.length !== cases.length) return reject(new Error(`${lines.length} verdicts for ${cases.length} cases`));
      resolve(lines.map((line) => JSON.parse(line) as Verdict));
    });
    child.stdin.end(cases.map((c) => `${JSON.stringify(c)}\n`).join(''));
  });
}
