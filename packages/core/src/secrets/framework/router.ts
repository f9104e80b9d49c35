import type { Backend, PathSpec } from './backend.ts';

export interface CompiledPath {
  spec: PathSpec;
  regex: RegExp;
}

/**
 * Turns `role/:name`, `static-role/:name+` and `static-role/:prefix*` into anchored regexes with named
 * groups. The path matched is canonical (`lib/request-path.ts`: no trailing slash, no empty, `.` or `..`
 * segment), so `LIST role/` arrives as `role`, and a capture is exactly the part of the authorised path it
 * matched: there is no optional trailing slash for a capture to leave out.
 */
export function compilePaths(backend: Backend): CompiledPath[] {
  return backend.paths.map((spec) => {
    const segments = spec.pattern.split('/').filter((segment) => segment !== '');
    let regex = '';
    for (const [index, segment] of segments.entries()) {
      const separator = index === 0 ? '' : '/';
      const param = /^:(\w+)([+*]?)$/.exec(segment);
      if (!param) regex += separator + escapeRegex(segment);
      else if (param[2] === '+') regex += `${separator}(?<${param[1]}>.+?)`;
      else if (param[2] === '*') regex += index === 0 ? `(?<${param[1]}>.*?)` : `(?:/(?<${param[1]}>.*?))?`;
      else regex += `${separator}(?<${param[1]}>[^/]+)`;
    }
    return { spec, regex: new RegExp(`^${regex}$`, 's') };
  });
}

export interface PathMatch {
  spec: PathSpec;
  params: Record<string, string>;
}

/** Every row whose pattern matches, in table order (the caller picks the first that supports the operation). */
export function matchPaths(paths: CompiledPath[], path: string): PathMatch[] {
  const matches: PathMatch[] = [];
  for (const { spec, regex } of paths) {
    const match = regex.exec(path);
    if (!match) continue;
    const params: Record<string, string> = {};
    for (const name in match.groups) {
      const value = match.groups[name];
      if (value !== undefined) params[name] = value;
    }
    matches.push({ spec, params });
  }
  return matches;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
