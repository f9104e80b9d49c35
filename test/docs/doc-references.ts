import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * What the docs name in this repository: the paths they write in backticks or in a fenced block, and the targets of
 * their relative links. Each is checked against the files git tracks, so a doc cannot name a file, folder or anchor
 * that no longer exists.
 */

export const repo = path.resolve(import.meta.dirname, '../..');
const coreSrc = 'packages/core/src';

/** Every file git tracks (the working tree's additions included), and every folder above one. */
export function trackedPaths(): { files: Set<string>; folders: Set<string> } {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file !== '' && existsSync(path.join(repo, file)));
  const files = new Set(listed);
  const folders = new Set<string>();
  for (const file of listed)
    for (let at = path.posix.dirname(file); at !== '.'; at = path.posix.dirname(at)) folders.add(at);
  return { files, folders };
}

/** The docs this test reads: README.md and every Markdown file under docs/. */
export function docFiles(): string[] {
  const under = (folder: string): string[] =>
    readdirSync(path.join(repo, folder), { withFileTypes: true }).flatMap((entry) => {
      const relative = `${folder}/${entry.name}`;
      if (entry.isDirectory()) return under(relative);
      return entry.name.endsWith('.md') ? [relative] : [];
    });
  return ['README.md', ...under('docs').sort()];
}

/** Endings that mark a name as a file of this repository (a Go file named in a doc is upstream's, not ours). */
const fileEndings = /\.(ts|tsx|js|mjs|cjs|md|java|sh|peggy|png|json)$/;

export interface Reference {
  doc: string;
  line: number;
  /** As written in the doc. */
  written: string;
  kind: 'path' | 'link';
}

/** `{a,b}` expanded as a shell expands it (one level per pair, nested pairs too). */
export function expandBraces(text: string): string[] {
  const match = /\{([^{}]*)\}/.exec(text);
  if (!match) return [text];
  const before = text.slice(0, match.index);
  const after = text.slice(match.index + match[0].length);
  return (match[1] as string).split(',').flatMap((choice) => expandBraces(`${before}${choice}${after}`));
}

/** Whether a backticked name is meant as a path of this repository (not an API path, a header, a command). */
export function looksLikeRepoPath(written: string, roots: Set<string>, coreEntries: Set<string>): boolean {
  if (
    !/^[\w.@{},/-]+$/.test(written) ||
    written.startsWith('/') ||
    written.startsWith('.') ||
    (!written.includes('/') && !fileEndings.test(written))
  ) {
    return false;
  }
  const first = written.split('/')[0] as string;
  return fileEndings.test(written.replace(/\/$/, '')) || roots.has(first) || coreEntries.has(first);
}

/** The references a doc makes, with their lines: inline code, repository paths inside fenced blocks, relative links. */
export function referencesOf(doc: string, markdown: string, roots: Set<string>, coreEntries: Set<string>): Reference[] {
  const references: Reference[] = [];
  const lines = markdown.split('\n');
  let fenced = false;
  for (const [index, line] of lines.entries()) {
    const number = index + 1;
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      // Commands and listings: a word that starts at one of the repository's top-level folders.
      for (const match of line.matchAll(/(?<![\w./-])((?:packages|functions|stacks|test|docs)\/[\w./-]*[\w/])/g)) {
        references.push({ doc, line: number, written: match[1] as string, kind: 'path' });
      }
      continue;
    }
    for (const match of line.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
      const written = (match[1] as string).trim();
      if (looksLikeRepoPath(written, roots, coreEntries)) references.push({ doc, line: number, written, kind: 'path' });
    }
    for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      references.push({ doc, line: number, written: target, kind: 'link' });
    }
  }
  return references;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes; repeats get -1, -2, … */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Where a reference points: one repository path per brace expansion, `…/` before a partial path (any tracked path's end). */
export function candidatesFor(reference: Reference, roots: Set<string>): string[] {
  const [target = ''] = reference.written.split('#');
  if (reference.kind === 'link') {
    if (target === '') return [reference.doc];
    return [path.posix.normalize(path.posix.join(path.posix.dirname(reference.doc), target)).replace(/\/$/, '')];
  }
  return expandBraces(target).map((written) => {
    const name = written.replace(/\/$/, '');
    const first = name.split('/')[0] as string;
    if (roots.has(first)) return name;
    // A partial path (`lib/jwt/`, `ldap/write-ahead.ts`, `secrets-lambda.ts`): the end of some tracked path, most
    // often under packages/core/src (`lib/…`, `storage/…`), but `secrets/system.ts` may be functions/'s too.
    return `…/${name}`;
  });
}

export function exists(candidate: string, files: Set<string>, folders: Set<string>): boolean {
  if (candidate.startsWith('…/')) {
    const tail = `/${candidate.slice(2)}`;
    const bare = candidate.slice(2);
    return [...files, ...folders].some((known) => known === bare || known.endsWith(tail));
  }
  return files.has(candidate) || folders.has(candidate);
}

/** The top-level entries of the repository and of packages/core/src, by which a partial path is placed. */
export function placeRoots(): { roots: Set<string>; coreEntries: Set<string> } {
  const roots = new Set(readdirSync(repo).filter((entry) => !entry.startsWith('.') && entry !== 'node_modules'));
  const coreEntries = new Set(readdirSync(path.join(repo, coreSrc)));
  return { roots, coreEntries };
}
