/**
 * Constraints and drivers, as Nomad's feasibility checkers read them (`scheduler/feasible/feasible.go`:
 * `resolveTarget`, `checkConstraint`, `DriverChecker`): a target is a literal or one of `${node.unique.id}`,
 * `${node.datacenter}`, `${node.unique.name}`, `${node.class}`, `${node.pool}`, `${attr.<name>}`, `${meta.<name>}`;
 * a missing one resolves to "" and not found. Each operator answers as Nomad's does, found-ness included (`!=` of a
 * missing attribute compares ""). `distinct_hosts` and `distinct_property` pass here: they are checked against the
 * allocations (`feasibility.ts`, `property-set.ts`). Regular expressions are RE2 (re2js), as Go's `regexp`, so a pattern a job submits
 * cannot backtrack without bound.
 */
import { compileGoRegexp } from '../../lib/bexpr.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { goVersionConstraint, parseVersion, semverConstraint, type VersionConstraint } from './version.ts';

/** Nomad's `Constraint` (and the matching fields of an `Affinity`). */
export interface Constraint {
  LTarget: string;
  RTarget: string;
  Operand: string;
}

export const distinctHosts = 'distinct_hosts';
export const distinctProperty = 'distinct_property';
/** Nomad's `FilterConstraintDrivers`. */
export const missingDrivers = 'missing drivers';

/** Nomad's `Constraint.String()`: the key of `ConstraintFiltered`. */
export const constraintText = (constraint: Constraint): string =>
  `${constraint.LTarget} ${constraint.Operand} ${constraint.RTarget}`;

/** The constraints of a job, group or task as stored (anything else is none). */
export function constraintsOf(value: unknown): Constraint[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((entry): entry is Record<string, unknown> => typeof entry === 'object' && entry !== null)
    .map((entry) => ({
      LTarget: typeof entry.LTarget === 'string' ? entry.LTarget : '',
      RTarget: typeof entry.RTarget === 'string' ? entry.RTarget : '',
      Operand: typeof entry.Operand === 'string' ? entry.Operand : '',
    }));
}

/** A resolved target: its value ("" when not found) and whether it was found. */
export interface Resolved {
  value: string;
  found: boolean;
}

const notFound: Resolved = { value: '', found: false };

/** Nomad's `resolveTarget`. */
export function resolveTarget(target: string, node: ClusterNode): Resolved {
  if (!target.startsWith('${')) return { value: target, found: true };
  switch (target.endsWith('}') ? target.slice(2, -1) : '') {
    case 'node.unique.id':
      return { value: node.ID, found: true };
    case 'node.datacenter':
      return { value: node.Datacenter, found: true };
    case 'node.unique.name':
      return { value: node.Name, found: true };
    case 'node.class':
      return { value: node.NodeClass, found: true };
    case 'node.pool':
      return { value: node.NodePool, found: true };
  }
  const inner = (prefix: string) => target.slice(prefix.length, target.endsWith('}') ? -1 : undefined);
  if (target.startsWith('${attr.')) return lookup(node.Attributes, inner('${attr.'));
  if (target.startsWith('${meta.')) return lookup(node.Meta ?? {}, inner('${meta.'));
  return notFound;
}

function lookup(map: Record<string, string>, key: string): Resolved {
  return Object.hasOwn(map, key) ? { value: map[key] as string, found: true } : notFound;
}

/** Nomad's `constraintTargetEscapes`: a target unique to one node, which a computed class cannot stand for. */
export const targetEscapes = (target: string): boolean =>
  target.startsWith('${unique.') ||
  target.startsWith('${node.unique.') ||
  target.startsWith('${attr.unique.') ||
  target.startsWith('${meta.unique.');

export const constraintEscapes = (constraint: Constraint): boolean =>
  targetEscapes(constraint.LTarget) || targetEscapes(constraint.RTarget);

/** Parsed patterns and version constraints, kept for one placement call (Nomad's `EvalCache`). */
export interface ConstraintCache {
  regexps: Map<string, { test(text: string): boolean } | null>;
  versions: Map<string, VersionConstraint | null>;
  semvers: Map<string, VersionConstraint | null>;
}

export const newConstraintCache = (): ConstraintCache => ({
  regexps: new Map(),
  versions: new Map(),
  semvers: new Map(),
});

/** Go's strconv.ParseInt(text, 10, 64). */
function goInt(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value >= 2n ** 63n || value < -(2n ** 63n) ? undefined : value;
}

/** Go's strconv.ParseFloat(text, 64), for the forms it accepts in decimal (and inf, infinity, nan). */
function goFloat(text: string): number | undefined {
  if (/^[+-]?(inf|infinity)$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[+-]?([0-9](_?[0-9])*)?(\.([0-9](_?[0-9])*)?)?([eE][+-]?[0-9]+)?$/.test(text) || !/[0-9]/.test(text))
    return undefined;
  if (text.includes('_')) return undefined; // underscores only with a base prefix
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

function compareOrder<T extends bigint | number | string>(operand: string, left: T, right: T): boolean {
  switch (operand) {
    case '<':
      return left < right;
    case '<=':
      return left <= right;
    case '>':
      return left > right;
    case '>=':
      return left >= right;
    default:
      return false;
  }
}

/** Nomad's `checkOrder`: as integers if both parse, else as floats if both parse, else lexically. */
function checkOrder(operand: string, left: string, right: string): boolean {
  const leftInt = goInt(left);
  const rightInt = goInt(right);
  if (leftInt !== undefined && rightInt !== undefined) return compareOrder(operand, leftInt, rightInt);
  const leftFloat = goFloat(left);
  const rightFloat = goFloat(right);
  if (leftFloat !== undefined && rightFloat !== undefined) return compareOrder(operand, leftFloat, rightFloat);
  return compareOrder(operand, left, right);
}

function setOf(text: string): Set<string> {
  return new Set(text.split(',').map((part) => part.trim()));
}

/** Nomad's `checkSetContainsAll`: every comma-separated right value is in the left set. */
const setContainsAll = (left: string, right: string): boolean => {
  const set = setOf(left);
  return right.split(',').every((part) => set.has(part.trim()));
};

/** Nomad's `checkSetContainsAny`. */
const setContainsAny = (left: string, right: string): boolean => {
  const set = setOf(left);
  return right.split(',').some((part) => set.has(part.trim()));
};

function regexpMatch(cache: ConstraintCache, text: string, pattern: string): boolean {
  let compiled = cache.regexps.get(pattern);
  if (compiled === undefined) {
    try {
      const re2 = compileGoRegexp(pattern);
      compiled = { test: (subject: string) => re2.test(subject) };
    } catch (error) {
      // RE2 not loaded (a bundle whose caller did not await placementReady) is the service's failure, not the pattern's
      if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') throw error;
      compiled = null;
    }
    cache.regexps.set(pattern, compiled);
  }
  return compiled?.test(text) === true;
}

function versionMatch(
  parsed: Map<string, VersionConstraint | null>,
  parse: (text: string) => VersionConstraint | undefined,
  left: string,
  right: string,
): boolean {
  const version = parseVersion(left);
  if (!version) return false;
  let constraint = parsed.get(right);
  if (constraint === undefined) {
    constraint = parse(right) ?? null;
    parsed.set(right, constraint);
  }
  return constraint?.(version) === true;
}

/** Nomad's `checkConstraint`: whether `operand` holds between the resolved targets. */
export function checkConstraint(cache: ConstraintCache, operand: string, left: Resolved, right: Resolved): boolean {
  const both = left.found && right.found;
  switch (operand) {
    case distinctHosts:
    case distinctProperty:
      return true;
    case '=':
    case '==':
    case 'is':
      return both && left.value === right.value;
    case '!=':
    case 'not':
      return left.value !== right.value;
    case '<':
    case '<=':
    case '>':
    case '>=':
      return both && checkOrder(operand, left.value, right.value);
    case 'is_set':
      return left.found;
    case 'is_not_set':
      return !left.found;
    case 'version':
      return both && versionMatch(cache.versions, goVersionConstraint, left.value, right.value);
    case 'semver':
      return both && versionMatch(cache.semvers, semverConstraint, left.value, right.value);
    case 'regexp':
      return both && regexpMatch(cache, left.value, right.value);
    case 'set_contains':
    case 'set_contains_all':
      return both && setContainsAll(left.value, right.value);
    case 'set_contains_any':
      return both && setContainsAny(left.value, right.value);
    default:
      return false;
  }
}

/** Whether `node` meets `constraint` (Nomad's `meetsConstraint`). */
export const meetsConstraint = (cache: ConstraintCache, constraint: Constraint, node: ClusterNode): boolean =>
  checkConstraint(
    cache,
    constraint.Operand,
    resolveTarget(constraint.LTarget, node),
    resolveTarget(constraint.RTarget, node),
  );

/** Go's strconv.ParseBool. */
function goBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

/**
 * Nomad's `DriverChecker.hasDrivers`: each driver detected and healthy in the node's `Drivers`, or, for a node that
 * does not list it there, its `driver.<name>` attribute true.
 */
export function hasDrivers(node: ClusterNode, drivers: Iterable<string>): boolean {
  for (const driver of drivers) {
    const info = node.Drivers?.[driver];
    if (info !== undefined) {
      if (typeof info !== 'object' || info === null) return false;
      const { Detected, Healthy } = info as { Detected?: unknown; Healthy?: unknown };
      if (Detected === true && Healthy === true) continue;
      return false;
    }
    const attribute = node.Attributes[`driver.${driver}`];
    if (attribute === undefined || goBool(attribute) !== true) return false;
  }
  return true;
}
