/**
 * Whether a node may run a group at all, as Nomad's `FeasibilityWrapper` decides (`scheduler/feasible/feasible.go`):
 * the job's constraints, then the group's drivers, its and its tasks' constraints and its network; each answer kept
 * for the node's computed class for the rest of the call (`EvalEligibility`), so that a node of a class already
 * refused is filtered as `computed class ineligible` without checking again, unless a constraint reads a target
 * unique to a node (it escapes the class). Then `distinct_hosts` and `distinct_property`, against the allocations.
 */
import type { Job } from '../cluster/jobs/model.ts';
import { type ClusterNode, computedClass } from '../cluster/nodes/model.ts';
import type { GroupAsk } from './asks.ts';
import {
  type Constraint,
  type ConstraintCache,
  constraintEscapes,
  constraintsOf,
  constraintText,
  distinctHosts,
  distinctProperty,
  hasDrivers,
  meetsConstraint,
  missingDrivers,
} from './constraints.ts';
import { hasDevices } from './devices.ts';
import type { MetricRecorder } from './metrics.ts';
import { hasNetworkMode, missingHostNetwork } from './ports.ts';
import { type PropertyContext, PropertySet } from './property-set.ts';
import type { ClassEligibility, HeldAlloc, NodeState } from './proposed.ts';

export const classIneligible = 'computed class ineligible';
/** Nomad's `FilterConstraintDevices`. */
export const missingDevices = 'missing devices';

/** Nomad's `hasDistinctHostsConstraint`: the first distinct_hosts constraint decides (RTarget "" or true). */
function wantsDistinctHosts(constraints: readonly Constraint[]): boolean {
  const found = constraints.find((constraint) => constraint.Operand === distinctHosts);
  if (!found) return false;
  if (found.RTarget === '') return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(found.RTarget)) return false;
  return true; // true, or unparsable: enforced, as Nomad's
}

export class Feasibility {
  private readonly jobConstraints: Constraint[];
  private readonly jobEscaped: boolean;
  private readonly jobDistinctHosts: boolean;
  private classEligibility = new Map<string, ClassEligibility>();
  /** Whether a group checked so far has a constraint that escapes the computed class. */
  private groupEscaped = false;
  /** Bumped by each reset: a node state's reference to an older class record is stale. */
  private generation = 0;
  private readonly jobProperties: PropertySet[];
  private readonly groupProperties = new Map<string, PropertySet[]>();
  private readonly classes = new Map<string, string>();

  constructor(
    private readonly job: Job,
    private readonly cache: ConstraintCache,
    private readonly propertyContext: PropertyContext,
  ) {
    this.jobConstraints = constraintsOf(job.Constraints);
    this.jobEscaped = this.jobConstraints.some(constraintEscapes);
    this.jobDistinctHosts = wantsDistinctHosts(this.jobConstraints);
    this.jobProperties = this.jobConstraints
      .filter((constraint) => constraint.Operand === distinctProperty)
      .map((constraint) => PropertySet.distinct(propertyContext, '', constraint.LTarget, constraint.RTarget));
  }

  /**
   * What this call learnt of the computed classes, as Nomad's `EvalEligibility.GetClasses` and `HasEscaped` report it
   * for a blocked evaluation: a class is eligible when the job and any group passed on it, ineligible when the job or
   * every group it was checked for failed; a class never checked is absent (unknown). `escaped`: a constraint read a
   * target unique to a node, so no class answer stands for its other nodes.
   */
  classReport(): { classes: Record<string, boolean>; escaped: boolean } {
    const classes: Record<string, boolean> = {};
    for (const [nodeClass, answers] of this.classEligibility) {
      const groups = [...answers.groups.values()];
      if (answers.job === 'ineligible') classes[nodeClass] = false;
      else if (groups.includes('eligible')) classes[nodeClass] = true;
      else if (groups.length > 0) classes[nodeClass] = false;
      else if (answers.job === 'eligible') classes[nodeClass] = true;
    }
    return { classes, escaped: this.jobEscaped || this.groupEscaped };
  }

  /** Forgets the classes' answers (Nomad's system stack does before each node). */
  resetClasses(): void {
    this.classEligibility = new Map();
    this.generation++;
  }

  /** The answers kept for the node's class (the node's state keeps a reference, valid until a reset). */
  private eligibilityOf(node: ClusterNode, state: NodeState): ClassEligibility {
    let found = state.eligibility;
    if (found?.generation === this.generation) return found;
    const nodeClass = this.classOf(node);
    found = this.classEligibility.get(nodeClass);
    if (!found) {
      found = { generation: this.generation, job: undefined, groups: new Map() };
      this.classEligibility.set(nodeClass, found);
    }
    state.eligibility = found;
    return found;
  }

  /** The node's computed class (computed here for a node stored without one). */
  private classOf(node: ClusterNode): string {
    if (node.ComputedClass) return node.ComputedClass;
    let found = this.classes.get(node.ID);
    if (found === undefined) {
      found = computedClass(node);
      this.classes.set(node.ID, found);
    }
    return found;
  }

  /** The distinct_property sets of the job and of `group`, made on first use. */
  propertySets(group: GroupAsk): PropertySet[] {
    let sets = this.groupProperties.get(group.name);
    if (!sets) {
      sets = [
        ...this.jobProperties,
        ...group.groupConstraints
          .filter((constraint) => constraint.Operand === distinctProperty)
          .map((constraint) =>
            PropertySet.distinct(this.propertyContext, group.name, constraint.LTarget, constraint.RTarget),
          ),
      ];
      this.groupProperties.set(group.name, sets);
    }
    return sets;
  }

  private groupChecks(node: ClusterNode, group: GroupAsk, metrics: MetricRecorder): boolean {
    if (!hasDrivers(node, group.drivers)) {
      metrics.filterNode(node, missingDrivers);
      return false;
    }
    for (const constraint of group.constraints) {
      if (!meetsConstraint(this.cache, constraint, node)) {
        metrics.filterNode(node, constraintText(constraint));
        return false;
      }
    }
    if (!hasDevices(node, group.devices)) {
      metrics.filterNode(node, missingDevices);
      return false;
    }
    if (group.network) {
      if (!hasNetworkMode(node, group.network.Mode)) {
        metrics.filterNode(node, 'missing network');
        return false;
      }
      const missing = missingHostNetwork(node, group.network);
      if (missing) {
        metrics.filterNode(node, missing);
        return false;
      }
    }
    return true;
  }

  /** A placement this call made, or an allocation it stops (or no longer stops): every distinct_property set counts it. */
  addProposed(alloc: HeldAlloc): void {
    for (const set of this.allPropertySets()) set.addProposed(alloc);
  }

  setCleared(alloc: HeldAlloc, cleared: boolean): void {
    for (const set of this.allPropertySets()) set.setCleared(alloc, cleared);
  }

  private allPropertySets(): Set<PropertySet> {
    return new Set([...this.jobProperties, ...[...this.groupProperties.values()].flat()]);
  }

  /** Nomad's `FeasibilityWrapper.Next` for one node: whether the class checks pass. */
  private classFeasible(node: ClusterNode, state: NodeState, group: GroupAsk, metrics: MetricRecorder): boolean {
    const eligibility = this.eligibilityOf(node, state);
    const jobStatus = this.jobEscaped ? 'escaped' : (eligibility.job ?? 'unknown');
    if (jobStatus === 'ineligible') {
      metrics.filterNode(node, classIneligible);
      return false;
    }
    for (const constraint of this.jobConstraints) {
      if (!meetsConstraint(this.cache, constraint, node)) {
        metrics.filterNode(node, constraintText(constraint));
        if (jobStatus !== 'escaped') eligibility.job = 'ineligible';
        return false;
      }
    }
    if (jobStatus === 'unknown') eligibility.job = 'eligible';
    if (group.escaped) this.groupEscaped = true;
    const groupStatus = group.escaped ? 'escaped' : (eligibility.groups.get(group.name) ?? 'unknown');
    if (groupStatus === 'ineligible') {
      metrics.filterNode(node, classIneligible);
      return false;
    }
    if (groupStatus === 'eligible') return true;
    if (!this.groupChecks(node, group, metrics)) {
      if (groupStatus !== 'escaped') eligibility.groups.set(group.name, 'ineligible');
      return false;
    }
    if (groupStatus === 'unknown') eligibility.groups.set(group.name, 'eligible');
    return true;
  }

  /** Nomad's `DistinctHostsIterator.satisfiesDistinctHosts`. */
  private distinctHostsHold(state: NodeState, group: GroupAsk): boolean {
    const groupDistinct = wantsDistinctHosts(group.groupConstraints);
    if (!this.jobDistinctHosts && !groupDistinct) return true;
    for (const alloc of state.allocs) {
      const jobCollision = alloc.JobID === this.job.ID && alloc.Namespace === this.job.Namespace;
      if ((this.jobDistinctHosts && jobCollision) || (jobCollision && alloc.TaskGroup === group.name)) return false;
    }
    return true;
  }

  /**
   * Whether `node` may run `group`: the class checks, then (generic jobs) distinct hosts, then distinct
   * properties; a refusal is recorded in `metrics` as Nomad records it.
   */
  feasible(
    node: ClusterNode,
    state: NodeState,
    group: GroupAsk,
    metrics: MetricRecorder,
    withDistinctHosts: boolean,
  ): boolean {
    if (!this.classFeasible(node, state, group, metrics)) return false;
    if (withDistinctHosts && !this.distinctHostsHold(state, group)) {
      metrics.filterNode(node, distinctHosts);
      return false;
    }
    for (const set of this.propertySets(group)) {
      const failure = set.distinctFailure(node);
      if (failure) {
        metrics.filterNode(node, failure);
        return false;
      }
    }
    return true;
  }
}
