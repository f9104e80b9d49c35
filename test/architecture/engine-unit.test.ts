import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf } from './imports.ts';

/**
 * An engine is one unit (issue 27 §2): its folder `packages/core/src/secrets/engines/<name>/` and its line in the one
 * list of families, `packages/core/src/secrets/family-list.ts`. Its backend declares its leases, periodic work,
 * write-ahead rollback and deployment, and everything else — the Lambda entries (`functions/secrets/family.ts`,
 * `functions/jobs/engine-job.ts`), the routes, schedules, networks, environments and permissions (`stacks/`), the
 * local timers (`packages/local/`) — is derived from the list. So no source file outside an engine's folder and the
 * list imports from that folder, but for the exceptions below, each with its reason.
 */
const root = path.resolve(import.meta.dirname, '../..');
const src = 'packages/core/src/';
const enginesDir = `${src}secrets/engines/`;
const theList = `${src}secrets/family-list.ts`;

const exceptions: Record<string, string> = {
  'functions/jobs/sweep.ts':
    'the token sweep also revokes the leases of the families without a job of their own (kv, whose leases hold nothing, and the login methods): it bundles exactly those, which a lazy list could only tell after loading every family',
};

function sourceFiles(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, folder))) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const relative = `${folder}/${entry}`;
    if (statSync(path.join(root, relative)).isDirectory()) found.push(...sourceFiles(relative));
    else if (/\.(ts|tsx|js|mjs)$/.test(entry) && !/\.test\.ts$|\.d\.ts$/.test(entry)) found.push(relative);
  }
  return found;
}

/** A specifier as a repository-relative path, for ours (relative, `@keyhaven/core/…`); else undefined. */
function resolve(from: string, specifier: string): string | undefined {
  if (specifier.startsWith('.')) return path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  if (specifier.startsWith('@keyhaven/core/')) return `${src}${specifier.slice('@keyhaven/core/'.length)}`;
  return undefined;
}

const engines = readdirSync(path.join(root, enginesDir)).filter((entry) =>
  statSync(path.join(root, enginesDir, entry)).isDirectory(),
);
const files = [
  ...sourceFiles('packages'),
  ...sourceFiles('functions'),
  ...sourceFiles('stacks'),
  'sst.config.ts',
].sort();
const importsFrom = (file: string) =>
  importsOf(readFileSync(path.join(root, file), 'utf8'))
    .map((specifier) => resolve(file, specifier))
    .filter((target): target is string => target !== undefined);
const engineOf = (file: string) =>
  file.startsWith(enginesDir) ? file.slice(enginesDir.length).split('/')[0] : undefined;

describe('an engine is its folder and one line of the family list', () => {
  it('finds the engines and the files to check', () => {
    expect(engines.sort()).toEqual(expect.arrayContaining(['cloud', 'kv', 'ldap', 'mesh']));
    expect(files.length).toBeGreaterThan(100);
  });

  it('no file outside an engine folder and the list imports from an engine folder, but the exceptions written down', () => {
    const found: Record<string, string[]> = {};
    for (const file of files) {
      if (file === theList) continue;
      const own = engineOf(file);
      const named = [
        ...new Set(
          importsFrom(file).flatMap((target) =>
            engineOf(target) && engineOf(target) !== own ? [engineOf(target) as string] : [],
          ),
        ),
      ];
      if (named.length > 0) found[file] = named.sort();
    }
    expect(Object.keys(found).sort()).toEqual(Object.keys(exceptions).sort());
    for (const [file, reason] of Object.entries(exceptions)) expect(reason.length, file).toBeGreaterThan(40);
  });

  it('every engine folder holds its backend and is loaded by the list, the only file that names them all', () => {
    const listed = importsFrom(theList);
    for (const engine of engines) {
      const backend = `${enginesDir}${engine}/${engine}-backend.ts`;
      expect(existsSync(path.join(root, backend)), backend).toBe(true);
      expect(listed, engine).toContain(backend);
    }
  });
});
