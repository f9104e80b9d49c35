import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { candidatesFor, exists, looksLikeRepoPath, placeRoots, repo, trackedPaths } from './doc-references.ts';

/**
 * Every repository path a code comment names exists: a comment that points at a file that moved away sends the
 * reader nowhere. Read are the comments of every tracked (or new) source file — `//` and `/* … *\/` lines of
 * TypeScript and JavaScript, `//` of Java, `#` of shell — and in them the names in backticks that look like a path of
 * ours (as the docs test reads them) and the words that start at a top-level folder (`packages/…`, `test/…`). A name
 * is found when it exists from the repository root, beside the commenting file, under `packages/core/src`, as the end
 * of a tracked path, or in `node_modules` (a dependency's file). Globs (`path-*.test.ts`) and Go files (upstream's
 * sources, which comments cite for behaviour) are not checked.
 */

/** Names that look like paths of ours but are not files of the repository; each says what it is. */
const notRepoPaths: Array<{ written: string; reason: string }> = [
  {
    written: 'app.js',
    reason: "the console build's script (packages/ui/build.ts writes it; the build is not committed)",
  },
  {
    written: 'config.json',
    reason:
      "the console's runtime settings, written when it is served (packages/ui/serve.ts) or deployed (stacks/Console.ts)",
  },
  {
    written: 'ui/config.json',
    reason: 'the same settings as a key in the console bucket and a URL path (`/ui/config.json`)',
  },
];

const { files, folders } = trackedPaths();
const { roots, coreEntries } = placeRoots();
/** Every source file but the generated parser, and this folder's tests, whose examples name missing files on purpose. */
const sources = [...files].filter(
  (file) =>
    /\.(ts|tsx|js|mjs|java|sh)$/.test(file) && !file.endsWith('lib/bexpr-parser.js') && !file.startsWith('test/docs/'),
);

interface Named {
  file: string;
  line: number;
  written: string;
}

/** The text of a line's comment, if it has one (a block comment's inner lines start with `*`). */
function commentOf(file: string, line: string): string | undefined {
  if (file.endsWith('.sh')) return /^\s*#(.*)$/.exec(line)?.[1] ?? /\s#\s(.*)$/.exec(line)?.[1];
  return /^\s*(?:\/\/|\/\*\*?|\*)(.*)$/.exec(line)?.[1] ?? /\s\/\/\s(.*)$/.exec(line)?.[1];
}

function namedIn(file: string, text: string): Named[] {
  const named: Named[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const comment = commentOf(file, line);
    if (comment === undefined) continue;
    const words = new Set<string>();
    for (const match of comment.matchAll(/`([^`\s]+)`/g))
      if (looksLikeRepoPath(match[1] as string, roots, coreEntries)) words.add(match[1] as string);
    for (const match of comment.matchAll(/(?<![\w./@*-])((?:packages|functions|stacks|test|docs)\/[\w./*-]*[\w/*])/g))
      words.add(match[1] as string);
    for (const written of words) {
      if (written.includes('*') || /\.go$/.test(written)) continue;
      named.push({ file, line: index + 1, written: written.replace(/\.$/, '') });
    }
  }
  return named;
}

function found(name: Named): boolean {
  if (notRepoPaths.some((entry) => entry.written === name.written)) return true;
  // A Lambda handler, `functions/jobs/sweep.handler`, names its file.
  const written = name.written.replace(/^((?:functions)\/[\w/-]+)\.handler$/, '$1.ts');
  const candidates = candidatesFor({ doc: name.file, line: name.line, written, kind: 'path' }, roots);
  if (candidates.every((candidate) => exists(candidate, files, folders))) return true;
  const bare = written.replace(/\/$/, '');
  const beside = path.posix.normalize(path.posix.join(path.posix.dirname(name.file), bare));
  return files.has(beside) || folders.has(beside) || existsSync(path.join(repo, 'node_modules', bare));
}

describe('the paths code comments name', () => {
  const named = sources.flatMap((file) => namedIn(file, readFileSync(path.join(repo, file), 'utf8')));

  it('reads the comments of every source file and finds the paths they name', () => {
    expect(sources.length).toBeGreaterThan(300);
    expect(named.length).toBeGreaterThan(200);
  });

  it('every repository path a comment names exists', () => {
    expect(named.filter((name) => !found(name)).map((name) => `${name.file}:${name.line} \`${name.written}\``)).toEqual(
      [],
    );
  });

  it('the allow-list holds only names some comment writes', () => {
    for (const entry of notRepoPaths) expect(named.some((name) => name.written === entry.written)).toBe(true);
  });

  it('catches a comment naming a file that is gone, and passes globs, Go sources and files beside it', () => {
    const file = 'packages/core/src/scheduler/example.ts';
    const text = [
      '/**',
      ' * The library lives in `ldap/library.ts`; the status map is `lib/status-of.ts`; see test/attacks/path-*.test.ts',
      " * and Vault's `http/logical.go`. The wrapper is `http/route.ts` (beside this file), the job `functions/jobs/sweep.handler`.",
      ' */',
      'const x = 1; // kept in packages/core/src/storage/gone.ts',
    ].join('\n');
    const names = namedIn(file, text);
    expect(names.map((name) => name.written)).toEqual([
      'ldap/library.ts',
      'lib/status-of.ts',
      'http/route.ts',
      'functions/jobs/sweep.handler',
      'packages/core/src/storage/gone.ts',
    ]);
    expect(names.filter((name) => !found(name)).map((name) => name.written)).toEqual([
      'ldap/library.ts',
      'lib/status-of.ts',
      'packages/core/src/storage/gone.ts',
    ]);
  });
});
