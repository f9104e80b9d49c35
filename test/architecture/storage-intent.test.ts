import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Storage states intent (issue 27 §1): the code says what it means — put if absent, update when unchanged, list by
 * prefix — through `packages/core/src/storage/intent.ts`, and only `storage/` turns that into DynamoDB expressions.
 * No source file elsewhere (the services, the functions, the stacks, the local runtime, the console; tests excluded)
 * writes a DynamoDB condition, update, key-condition or filter expression, or their attribute names and values.
 */
const root = path.resolve(import.meta.dirname, '../..');
const searched = ['packages', 'functions', 'stacks', 'sst.config.ts'];
const allowedUnder = 'packages/core/src/storage/';
const expressionWords =
  /ConditionExpression|UpdateExpression|KeyConditionExpression|FilterExpression|ExpressionAttribute/;
const isSource = (file: string) =>
  /\.(ts|tsx|js|mjs|cjs)$/.test(file) && !/\.test\.tsx?$/.test(file) && !file.endsWith('.d.ts');

function sourcesUnder(relative: string): string[] {
  const full = path.join(root, relative);
  let entries: Dirent[];
  try {
    entries = readdirSync(full, { withFileTypes: true });
  } catch {
    return isSource(relative) ? [relative] : [];
  }
  return entries.flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) return [];
    const child = path.posix.join(relative, entry.name);
    return entry.isDirectory() ? sourcesUnder(child) : isSource(child) ? [child] : [];
  });
}

describe('storage states intent', () => {
  const files = searched.flatMap(sourcesUnder);

  it('searches the source tree (the storage files that build expressions among it)', () => {
    expect(files).toContain('packages/core/src/storage/dynamodb-store.ts');
    expect(files).toContain('packages/core/src/secrets/leases/lease-manager.ts');
    expect(files.length).toBeGreaterThan(200);
  });

  it('no file outside packages/core/src/storage/ writes a DynamoDB expression', () => {
    const offenders = files.filter(
      (file) => !file.startsWith(allowedUnder) && expressionWords.test(readFileSync(path.join(root, file), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
});
