import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anchorsOf,
  candidatesFor,
  docFiles,
  exists,
  placeRoots,
  type Reference,
  referencesOf,
  repo,
  trackedPaths,
} from './doc-references.ts';

/**
 * Every repository path README.md and docs/**\/*.md name exists, and every relative link between them resolves,
 * anchors included. A path is a name in backticks that ends like one of our files (`.ts`, `.md`, `.png`, …) or starts
 * at a top-level folder (`packages/`, `stacks/`, `test/`, …, which must exist from the root) or at a folder of
 * `packages/core/src` (`lib/`, `storage/`, `secrets/`, …); such a partial path, like any shorter one
 * (`ldap/write-ahead.ts`, `secrets-lambda.ts`), must be the end of a tracked path. Inside fenced blocks, words starting at a top-level folder are paths too.
 */

/** Names that look like paths of this repository but are not; each says what it is instead. */
const notRepoPaths: Array<{ written: string; reason: string }> = [
  {
    written: 'ui/config.json',
    reason: 'a URL path the console is served at (`/ui/config.json`), and a key in the console bucket; no file',
  },
];

const { files, folders } = trackedPaths();
const { roots, coreEntries } = placeRoots();
const docs = docFiles();
const texts = new Map(docs.map((doc) => [doc, readFileSync(path.join(repo, doc), 'utf8')]));

function problemsOf(reference: Reference, anchorsFor: (doc: string) => Set<string> | undefined): string | undefined {
  const where = `${reference.doc}:${reference.line} \`${reference.written}\``;
  if (reference.kind === 'path' && notRepoPaths.some((entry) => entry.written === reference.written)) return undefined;
  const candidates = candidatesFor(reference, roots);
  const missing = candidates.filter((candidate) => !exists(candidate, files, folders));
  if (missing.length > 0) return `${where}: no ${missing.join(', ')}`;
  const anchor = reference.kind === 'link' ? reference.written.split('#')[1] : undefined;
  if (anchor === undefined) return undefined;
  const anchors = anchorsFor(candidates[0] as string);
  if (!anchors) return `${where}: #${anchor} points into a file that has no headings to point at`;
  return anchors.has(anchor) ? undefined : `${where}: no heading makes #${anchor}`;
}

const anchorsFor = (doc: string) => {
  if (!doc.endsWith('.md')) return undefined;
  const text = texts.get(doc) ?? readFileSync(path.join(repo, doc), 'utf8');
  return anchorsOf(text);
};

describe('the paths and links the docs name', () => {
  const references = docs.flatMap((doc) => referencesOf(doc, texts.get(doc) as string, roots, coreEntries));

  it('reads README.md and every doc under docs/, and finds the paths they name', () => {
    expect(docs[0]).toBe('README.md');
    expect(docs).toContain('docs/security.md');
    expect(references.filter((reference) => reference.kind === 'path').length).toBeGreaterThan(100);
    expect(references.filter((reference) => reference.kind === 'link').length).toBeGreaterThan(10);
  });

  it('every repository path a doc names exists', () => {
    const problems = references
      .filter((reference) => reference.kind === 'path')
      .flatMap((reference) => problemsOf(reference, anchorsFor) ?? []);
    expect(problems).toEqual([]);
  });

  it('every relative link resolves, to a heading where it names one', () => {
    const problems = references
      .filter((reference) => reference.kind === 'link')
      .flatMap((reference) => problemsOf(reference, anchorsFor) ?? []);
    expect(problems).toEqual([]);
  });

  it('the allow-list holds only names some doc writes, and none that is a real path', () => {
    for (const entry of notRepoPaths) {
      expect(references.some((reference) => reference.written === entry.written)).toBe(true);
      expect(files.has(entry.written)).toBe(false);
    }
  });

  it('catches a stale name: a file moved away, a partial path, a folder, a missing anchor', () => {
    const doc = 'docs/example.md';
    const markdown = [
      'The library lives in `ldap/library.ts` and HIL in `lib/hil.ts`; `packages/core/src/lib/hil/` too.',
      'Both adapters: `packages/core/src/http/{secrets-lambda,secrets-gone}.ts`; the wrapper `scheduler/http/route.ts`.',
      'Not paths: `kv/app/`, `sys/mounts/:path`, `hono/aws-lambda`, `X-Vault-Token`, `/v1/sys/health`.',
      'See [security](security.md#not-a-heading), [the README](../README.md#try-it) and [gone](../docs/nowhere.md).',
      '```text',
      'node --import tsx functions/deploy/no-such-script.ts <table>',
      '```',
    ].join('\n');
    const found = referencesOf(doc, markdown, roots, coreEntries);
    expect(found.map((reference) => reference.written)).toEqual([
      'ldap/library.ts',
      'lib/hil.ts',
      'packages/core/src/lib/hil/',
      'packages/core/src/http/{secrets-lambda,secrets-gone}.ts',
      'scheduler/http/route.ts',
      'security.md#not-a-heading',
      '../README.md#try-it',
      '../docs/nowhere.md',
      'functions/deploy/no-such-script.ts',
    ]);
    const problems = found.map((reference) => problemsOf(reference, anchorsFor));
    expect(problems).toEqual([
      expect.stringContaining('no …/ldap/library.ts'),
      expect.stringContaining('no …/lib/hil.ts'),
      expect.stringContaining('no packages/core/src/lib/hil'),
      expect.stringContaining('no packages/core/src/http/secrets-gone.ts'),
      undefined,
      expect.stringContaining('no heading makes #not-a-heading'),
      undefined,
      expect.stringContaining('no docs/nowhere.md'),
      expect.stringContaining('no functions/deploy/no-such-script.ts'),
    ]);
  });
});
