import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * One name, one meaning (issue 27 §4): no two files of the services (packages/core, packages/local, functions)
 * declare an exported type, interface, class or enum of the same name. Two `Route`s, one the scheduler's row and one
 * the secrets framework's, read the same in an import list and are not the same thing.
 *
 * Only declarations count: `export type { Name } from './file.ts'` passes the same declaration on and is not a
 * second one, so it needs no allow-list entry. The console (packages/ui) is left out: it imports nothing of the
 * services (test/architecture/layers.test.ts) and its `AclToken`, `SchedulerEvent`, … are the same API objects as
 * the services', seen from the other end of the wire.
 */
const roots = ['packages/core', 'packages/local', 'functions'];
const skipped = new Set(['node_modules', 'dist', '.sst']);
const declaration = /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:type|interface|class|enum)\s+([A-Za-z_$][\w$]*)/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return skipped.has(entry.name) ? [] : sourceFiles(full);
    return /\.(ts|tsx|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every exported type name with the files that declare it. */
function exportedTypeNames(): Map<string, string[]> {
  const names = new Map<string, string[]>();
  for (const file of roots.flatMap(sourceFiles)) {
    for (const match of readFileSync(file, 'utf8').matchAll(declaration)) {
      const name = match[1] as string;
      const files = names.get(name) ?? [];
      if (!files.includes(file)) files.push(file);
      names.set(name, files);
    }
  }
  return names;
}

describe('exported type names', () => {
  const names = exportedTypeNames();

  it('reads the services’ declarations (the scan finds the known ones)', () => {
    expect(names.size).toBeGreaterThan(200);
    expect(names.get('SchedulerRoute')).toEqual(['packages/core/src/scheduler/http/route.ts']);
  });

  it('no two files export a type, interface, class or enum of the same name', () => {
    const twice = [...names]
      .filter(([, files]) => files.length > 1)
      .map(([name, files]) => `${name}: ${files.join(', ')}`);
    expect(twice).toEqual([]);
  });
});
