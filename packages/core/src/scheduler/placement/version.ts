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

const segmentsPart = String.raw`v?([0-9]+(\.[0-9]+)*?)`;
const metadataPart = String.raw`(\+([0-9A-Za-z\-~]+(\.[0-9A-Za-z\-~]+)*))?`;
/** go-version's VersionRegexpRaw: a pre-release may follow the segments without its dash (`1.2.3beta`). */
const versionRaw = String.raw`${segmentsPart}(-([0-9]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)|(-?([A-Za-z\-~]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)))?${metadataPart}?`;
/** go-version's SemverRegexpRaw: the dash is required. */
const semverRaw = String.raw`${segmentsPart}(-([0-9]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)|(-([A-Za-z\-~]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)))?${metadataPart}?`;
const versionPattern = new RegExp(`^${versionRaw}$`);
const semverPattern = new RegExp(`^${semverRaw}$`);
/** Go's `\s` (RE2: tab, newline, form feed, carriage return, space), not JavaScript's wider one. */
const space = '[\\t\\n\\f\\r ]*';
const goConstraintPattern = new RegExp(`^${space}(<=|>=|!=|~>|<|>|=|)${space}(${versionRaw})${space}$`);
const semverConstraintPattern = new RegExp(`^${space}(<=|>=|!=|<|>|=|)${space}(${semverRaw})${space}$`);

const int64Max = 2n ** 63n - 1n;

function parseWith(text: string, pattern: RegExp): GoVersion | undefined {
  const match = pattern.exec(text);
  if (!match) return undefined;
  const given = (match[1] as string).split('.');
  const segments: bigint[] = [];
  for (const part of given) {
    const value = BigInt(part);
    if (value > int64Max) return undefined; // strconv.ParseInt(…, 64) refuses it
    segments.push(value);
  }
  while (segments.length < 3) segments.push(0n);
  return { segments, given: given.length, pre: match[7] || match[4] || '', metadata: match[10] ?? '' };
}

/** go-version's `NewVersion`: lenient. */
export const parseVersion = (text: string): GoVersion | undefined => parseWith(text, versionPattern);
/** go-version's `NewSemver`: a pre-release needs its dash. */
export const parseSemver = (text: string): GoVersion | undefined => parseWith(text, semverPattern);

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

function parseConstraint(
  text: string,
  pattern: RegExp,
  parse: (text: string) => GoVersion | undefined,
  make: (operator: string, check: GoVersion) => Check,
): VersionConstraint | undefined {
  const checks: Check[] = [];
  for (const single of text.split(',')) {
    const match = pattern.exec(single);
    if (!match) return undefined;
    const check = parse(match[2] as string);
    if (!check) return undefined;
    checks.push(make(match[1] as string, check));
  }
  return (version) => checks.every((check) => check(version));
}

/** go-version's `NewConstraint` (the `version` operator). */
export const goVersionConstraint = (text: string): VersionConstraint | undefined =>
  parseConstraint(text, goConstraintPattern, parseVersion, goCheck);

/** Nomad's `helper/constraints/semver.NewConstraint` (the `semver` operator). */
export const semverConstraint = (text: string): VersionConstraint | undefined =>
  parseConstraint(text, semverConstraintPattern, parseSemver, semverCheck);
