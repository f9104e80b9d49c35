/**
 * Version comparison for the `version` and `semver` constraint operators, as Nomad does it: versions parsed and
 * compared by hashicorp/go-version (v1.9), the `version` operator's constraints by go-version's `NewConstraint`
 * (`=`, `!=`, `>`, `<`, `>=`, `<=`, `~>`, comma-separated, pre-releases matched only by a constraint with a
 * pre-release on the same segments), the `semver` operator's by Nomad's `helper/constraints/semver` (the same
 * operators but `~>`, the constraint's version strict SemVer, no pre-release check, SemVer 2.0 ordering).
 *
 * npm's `semver` is not used: it refuses what go-version accepts and Nomad's nodes report (`1.2`, `v1.2.3.4`,
 * `1.2.3beta`), reads ranges in its own syntax (space for and, `||`, `^`, `~`, where Go separates with commas and
 * has `~>`), and orders versions with more than three segments differently; an operator that answered otherwise
 * than Nomad would place a job on other nodes.
 */

export interface GoVersion {
  /** The numeric segments, at least three (go-version pads with zeros). */
  segments: bigint[];
  /** How many segments the text had. */
  given: number;
  pre: string;
  metadata: string;
}

/**
 * go-version's version grammar (`VersionRegexpRaw`, and `SemverRegexpRaw` where a pre-release needs its dash), read
 * by a scanner rather than the regular expression: the expression's ambiguous runs (`[0-9]+[0-9A-Za-z\-~]*`) make a
 * backtracking engine quadratic and worse on a long attribute or constraint, which a node or a job submitter chooses.
 * The scanner accepts exactly what the expression accepts (version-oracle.test.ts replays go-version's answers).
 */
const isDigit = (code: number) => code >= 48 && code <= 57;
const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
/** `[A-Za-z\-~]`: what a pre-release not starting with a digit starts with. */
const isLead = (code: number) => isLetter(code) || code === 45 || code === 126;
/** `[0-9A-Za-z\-~]`. */
const isIdent = (code: number) => isDigit(code) || isLead(code);

/** The end of `[0-9A-Za-z\-~]*` from `at`. */
function identEnd(text: string, at: number): number {
  let i = at;
  while (i < text.length && isIdent(text.charCodeAt(i))) i++;
  return i;
}

/** The end of `(\.[0-9A-Za-z\-~]+)*` from `at` (the longest: nothing after it may start with a dot). */
function dottedEnd(text: string, at: number): number {
  let i = at;
  while (text.charCodeAt(i) === 46) {
    const end = identEnd(text, i + 1);
    if (end === i + 1) break;
    i = end;
  }
  return i;
}

const int64Max = 2n ** 63n - 1n;

function parseWith(text: string, strict: boolean): GoVersion | undefined {
  const n = text.length;
  let i = text.charCodeAt(0) === 118 ? 1 : 0; // v
  if (!isDigit(text.charCodeAt(i))) return undefined;
  const segmentsStart = i;
  while (isDigit(text.charCodeAt(i))) i++;
  while (text.charCodeAt(i) === 46 && isDigit(text.charCodeAt(i + 1))) {
    i++;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const given = text.slice(segmentsStart, i).split('.');
  let pre = '';
  if (i < n && text.charCodeAt(i) !== 43) {
    const here = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    let start: number;
    if (here === 45 && isDigit(next)) start = i + 1;
    else if (here === 45 && isLead(next)) start = i + 1;
    else if (!strict && isLead(here))
      start = i; // `-?` empty: the run (a lone dash included) is the pre-release
    else return undefined;
    const end = dottedEnd(text, identEnd(text, start + 1));
    pre = text.slice(start, end);
    i = end;
  }
  let metadata = '';
  if (i < n) {
    if (text.charCodeAt(i) !== 43) return undefined;
    const first = identEnd(text, i + 1);
    if (first === i + 1) return undefined;
    const end = dottedEnd(text, first);
    metadata = text.slice(i + 1, end);
    i = end;
  }
  if (i !== n) return undefined;
  const segments: bigint[] = [];
  for (const part of given) {
    const value = BigInt(part);
    if (value > int64Max) return undefined; // strconv.ParseInt(…, 64) refuses it
    segments.push(value);
  }
  while (segments.length < 3) segments.push(0n);
  return { segments, given: given.length, pre, metadata };
}

/** go-version's `NewVersion`: lenient. */
export const parseVersion = (text: string): GoVersion | undefined => parseWith(text, false);
/** go-version's `NewSemver`: a pre-release needs its dash. */
export const parseSemver = (text: string): GoVersion | undefined => parseWith(text, true);

const asText = (version: GoVersion): string =>
  `${version.segments.join('.')}${version.pre ? `-${version.pre}` : ''}${version.metadata ? `+${version.metadata}` : ''}`;

const sameSegments = (a: GoVersion, b: GoVersion): boolean =>
  a.segments.length === b.segments.length && a.segments.every((segment, i) => segment === b.segments[i]);

/** Go's strconv.ParseInt(text, 10, 64), or undefined. */
function goInt(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value > int64Max || value < -int64Max - 1n ? undefined : value;
}

/** go-version's comparePart, its quirks kept (two non-numeric parts with the left one smaller compare as -1). */
function comparePart(self: string, other: string): number {
  if (self === other) return 0;
  const selfInt = goInt(self);
  const otherInt = goInt(other);
  if (self === '') return otherInt !== undefined ? -1 : 1;
  if (other === '') return selfInt !== undefined ? 1 : -1;
  if (selfInt !== undefined && otherInt === undefined) return -1;
  if (selfInt === undefined && otherInt !== undefined) return 1;
  if (selfInt === undefined && otherInt === undefined && self > other) return 1;
  if ((selfInt ?? 0n) > (otherInt ?? 0n)) return 1;
  return -1;
}

function comparePrereleases(self: string, other: string): number {
  if (self === other) return 0;
  const selfParts = self.split('.');
  const otherParts = other.split('.');
  for (let i = 0; i < Math.max(selfParts.length, otherParts.length); i++) {
    const compared = comparePart(selfParts[i] ?? '', otherParts[i] ?? '');
    if (compared !== 0) return compared;
  }
  return 0;
}

/** go-version's `Version.Compare`: -1, 0 or 1. */
export function compareVersions(self: GoVersion, other: GoVersion): number {
  if (asText(self) === asText(other)) return 0;
  if (sameSegments(self, other)) {
    if (self.pre === '' && other.pre === '') return 0;
    if (self.pre === '') return 1;
    if (other.pre === '') return -1;
    return comparePrereleases(self.pre, other.pre);
  }
  const longest = Math.max(self.segments.length, other.segments.length);
  for (let i = 0; i < longest; i++) {
    if (i > self.segments.length - 1) return other.segments.slice(i).every((segment) => segment === 0n) ? 0 : -1;
    if (i > other.segments.length - 1) return self.segments.slice(i).every((segment) => segment === 0n) ? 0 : 1;
    const left = self.segments[i] as bigint;
    const right = other.segments[i] as bigint;
    if (left !== right) return left < right ? -1 : 1;
  }
  return 0;
}

/** go-version's prereleaseCheck. */
function prereleaseCheck(version: GoVersion, check: GoVersion): boolean {
  if (version.pre !== '' && check.pre !== '') return sameSegments(version, check);
  if (version.pre !== '' && check.pre === '') return false;
  return true;
}

function pessimistic(version: GoVersion, check: GoVersion): boolean {
  if (!prereleaseCheck(version, check) || (check.pre !== '' && version.pre === '')) return false;
  if (compareVersions(version, check) < 0) return false;
  const count = check.segments.length;
  if (count > version.segments.length) return false;
  for (let i = 0; i < check.given - 1; i++) if (version.segments[i] !== check.segments[i]) return false;
  return (check.segments[count - 1] as bigint) <= (version.segments[count - 1] as bigint);
}

type Check = (version: GoVersion) => boolean;

function goCheck(operator: string, check: GoVersion): Check {
  const compared = (version: GoVersion) => compareVersions(version, check);
  switch (operator) {
    case '!=':
      return (version) => compared(version) !== 0;
    case '>':
      return (version) => prereleaseCheck(version, check) && compared(version) === 1;
    case '<':
      return (version) => prereleaseCheck(version, check) && compared(version) === -1;
    case '>=':
      return (version) => prereleaseCheck(version, check) && compared(version) >= 0;
    case '<=':
      return (version) => prereleaseCheck(version, check) && compared(version) <= 0;
    case '~>':
      return (version) => pessimistic(version, check);
    default:
      return (version) => compared(version) === 0;
  }
}

function semverCheck(operator: string, check: GoVersion): Check {
  const compared = (version: GoVersion) => compareVersions(version, check);
  switch (operator) {
    case '!=':
      return (version) => compared(version) !== 0;
    case '>':
      return (version) => compared(version) === 1;
    case '<':
      return (version) => compared(version) === -1;
    case '>=':
      return (version) => compared(version) >= 0;
    case '<=':
      return (version) => compared(version) <= 0;
    default:
      return (version) => compared(version) === 0;
  }
}

/** A parsed constraint list (every comma-separated part must hold), or undefined when any part is malformed. */
export type VersionConstraint = (version: GoVersion) => boolean;

/** Go's `\s` (RE2: tab, newline, form feed, carriage return, space), not JavaScript's wider one. */
const goSpace = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;

/**
 * One comma-separated part, as `^\s*(<ops>)\s*(<version>)\s*$` reads it: the operators tried in go-version's order
 * (`<=` before `<`); a version never starts with an operator's character, so the first that prefixes the part is it.
 */
function parseSingle(
  single: string,
  operators: readonly string[],
  parse: (text: string) => GoVersion | undefined,
): { operator: string; check: GoVersion } | undefined {
  const text = single.replace(goSpace, '');
  const operator = operators.find((each) => text.startsWith(each)) ?? '';
  const check = parse(text.slice(operator.length).replace(goSpace, ''));
  return check ? { operator, check } : undefined;
}

function parseConstraint(
  text: string,
  operators: readonly string[],
  parse: (text: string) => GoVersion | undefined,
  make: (operator: string, check: GoVersion) => Check,
): VersionConstraint | undefined {
  const checks: Check[] = [];
  for (const single of text.split(',')) {
    const parsed = parseSingle(single, operators, parse);
    if (!parsed) return undefined;
    checks.push(make(parsed.operator, parsed.check));
  }
  return (version) => checks.every((check) => check(version));
}

/** go-version's `NewConstraint` (the `version` operator). */
export const goVersionConstraint = (text: string): VersionConstraint | undefined =>
  parseConstraint(text, ['<=', '>=', '!=', '~>', '<', '>', '='], parseVersion, goCheck);

/** Nomad's `helper/constraints/semver.NewConstraint` (the `semver` operator). */
export const semverConstraint = (text: string): VersionConstraint | undefined =>
  parseConstraint(text, ['<=', '>=', '!=', '<', '>', '='], parseSemver, semverCheck);
