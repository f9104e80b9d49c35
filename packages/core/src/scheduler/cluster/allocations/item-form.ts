/**
 * The allocation's item in the table, and the allocation read back from it: the one codec every read and write of
 * an allocation item goes through (`store.ts`: `created`, `updated`, `get`, `onNode`, the batch reads and the
 * snapshot's verified cache).
 *
 * The item leaves out what it can restore exactly:
 * - `ID` and `NodeID`, which are its key (`allocNodePk(NodeID)` / `ID`; the MAC binds the key);
 * - `Job` (always null in the table: a read rehydrates it, `Allocations.withJob`);
 * - every field at its empty or default value (`''`, `0`, `false`, `null`, `{}`, Nomad's defaults `default`,
 *   `service`, `run`, `pending`), at every depth of the shape below: most of a placement's `Metrics`, the empty parts
 *   of `AllocatedResources`, a `DesiredTransition` with no flag set;
 * - `TaskLifecycles` when it names every task, in `Tasks`' order, with no lifecycle (null), as placement grants it;
 * - the scorers' names of each `ScoreMetaData` entry when they are placement's, in its order (the scores as a list);
 * - `CreateIndex` and `AllocModifyIndex` when equal to `ModifyIndex`, `ModifyTime` when equal to `CreateTime`
 *   (`ModifyIndex` itself is always kept: writes and deletes are conditional on it);
 * - `Name` as its index alone when it is Nomad's `<job>.<group>[<index>]`.
 *
 * A read restores each left-out field, in the model's order. An allocation whose shape is not the full one (a
 * field of the shape below missing, as in metrics written before `NodePool`) is stored whole, as before this form
 * existed; an item that holds `ID` is such a whole one (a compact item never does), and reads as it is stored, so
 * items written before this form read exactly as they did.
 */
import type { Item } from '../../../storage/store.ts';
import { allocNodePk } from '../../keys.ts';
import type { StoredAllocation } from './model.ts';

/** A field of a shape: when its value is left out, what a read puts back, and the shape of what it holds. */
interface Field {
  omitted?: (value: unknown) => boolean;
  restored?: () => unknown;
  /** The value is an object of this shape. */
  shape?: Shape;
  /** The value is an array (or null) of objects of this shape. */
  each?: Shape;
  /** The value is a map (or null) whose values are objects of this shape. */
  values?: Shape;
  /** The field may be absent (Nomad's omitempty fields this service sets only when they hold something). */
  optional?: boolean;
  /** The value in the item, and back (after the shape's steps). */
  encode?: (value: unknown) => unknown;
  decode?: (value: unknown) => unknown;
}
type Shape = Record<string, Field>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Left out when it is exactly this string, number, boolean or null. */
const at = (empty: string | number | boolean | null): Field => ({
  omitted: (value) => value === empty,
  restored: () => empty,
});
const emptyMap: Field = {
  omitted: (value) => isObject(value) && Object.keys(value).length === 0,
  restored: () => ({}),
};
const kept: Field = {};
const nested = (field: Field, shape: Pick<Field, 'shape' | 'each' | 'values'>): Field => ({ ...field, ...shape });

const port: Shape = { Label: at(''), Value: at(0), To: at(0), HostNetwork: at('default') };
const allocatedPort: Shape = { Label: at(''), Value: at(0), To: at(0), HostIP: at('') };
const network: Shape = {
  Mode: at(''),
  Device: at(''),
  CIDR: at(''),
  IP: at(''),
  MBits: at(0),
  DNS: at(null),
  ReservedPorts: nested(at(null), { each: port }),
  DynamicPorts: nested(at(null), { each: port }),
};
const taskResources: Shape = {
  Cpu: nested(kept, { shape: { CpuShares: at(0), ReservedCores: at(null) } }),
  Memory: nested(kept, { shape: { MemoryMB: at(0), MemoryMaxMB: at(0) } }),
  Networks: nested(at(null), { each: network }),
  Devices: at(null),
};
const allocatedResources: Shape = {
  Tasks: nested(kept, { values: taskResources }),
  TaskLifecycles: kept,
  Shared: nested(kept, {
    shape: {
      DiskMB: at(0),
      Networks: nested(at(null), { each: network }),
      Ports: nested(at(null), { each: allocatedPort }),
    },
  }),
};
/**
 * The scorers' names in the order placement scores a node (`placement/rank.ts`): a node's `Scores` whose names are
 * the first of these, in this order, is stored as its values alone.
 */
const scorerNames = [
  'binpack',
  'job-anti-affinity',
  'node-reschedule-penalty',
  'node-affinity',
  'allocation-spread',
  'preemption',
];
const scores: Field = {
  encode: (value) => {
    if (!isObject(value)) return value;
    const names = Object.keys(value);
    const inOrder = names.length <= scorerNames.length && names.every((name, at) => name === scorerNames[at]);
    return inOrder && names.every((name) => typeof value[name] === 'number') ? Object.values(value) : value;
  },
  decode: (value) =>
    Array.isArray(value) ? Object.fromEntries(value.map((score, at) => [scorerNames[at], score])) : value,
};
const scoreMeta: Shape = { NodeID: kept, Scores: scores, NormScore: kept };
const metric: Shape = {
  NodesEvaluated: at(0),
  NodesFiltered: at(0),
  NodesInPool: at(0),
  NodePool: at(''),
  NodesAvailable: emptyMap,
  ClassFiltered: at(null),
  ConstraintFiltered: at(null),
  NodesExhausted: at(0),
  ClassExhausted: at(null),
  DimensionExhausted: at(null),
  QuotaExhausted: at(null),
  ResourcesExhausted: at(null),
  Scores: at(null),
  ScoreMetaData: nested(at(null), { each: scoreMeta }),
  AllocationTime: at(0),
  CoalescedFailures: at(0),
};
const transitionFlags = ['Migrate', 'Reschedule', 'ForceReschedule', 'NoShutdownDelay'] as const;
const desiredTransition: Field = {
  omitted: (value) => isObject(value) && transitionFlags.every((flag) => value[flag] === null),
  restored: () => Object.fromEntries(transitionFlags.map((flag) => [flag, null])),
  shape: Object.fromEntries(transitionFlags.map((flag) => [flag, at(null)])),
};

/** The allocation's fields in the model's order (`model.ts`). */
const allocation: Shape = {
  ID: kept,
  Namespace: at('default'),
  EvalID: kept,
  Name: kept,
  NodeID: kept,
  NodeName: kept,
  JobID: kept,
  JobVersion: at(0),
  JobType: at('service'),
  Job: at(null),
  TaskGroup: kept,
  AllocatedResources: nested(kept, { shape: allocatedResources }),
  Metrics: nested(at(null), { shape: metric }),
  DesiredStatus: at('run'),
  DesiredDescription: at(''),
  DesiredTransition: desiredTransition,
  ClientStatus: at('pending'),
  ClientDescription: at(''),
  TaskStates: at(null),
  DeploymentID: at(''),
  DeploymentStatus: at(null),
  PreviousAllocation: at(''),
  NextAllocation: at(''),
  RescheduleTracker: at(null),
  FollowupEvalID: at(''),
  PreemptedAllocations: { optional: true },
  PreemptedByAllocation: { optional: true },
  CreateIndex: kept,
  ModifyIndex: kept,
  AllocModifyIndex: kept,
  CreateTime: kept,
  ModifyTime: kept,
};
/** Fields left out when equal to another field, which is always kept or restored first. */
const sameAs: Array<[field: string, as: string]> = [
  ['CreateIndex', 'ModifyIndex'],
  ['AllocModifyIndex', 'ModifyIndex'],
  ['ModifyTime', 'CreateTime'],
];
/** Attributes of the item that are not the allocation's (the store's). */
const bookkeeping = new Set(['pk', 'sk', 'mac', 'expiresAt', 'duePk', 'dueSk']);

/** Whether every field of the shape is present, at every depth: then leaving out and restoring is exact. */
function fits(value: unknown, shape: Shape): boolean {
  if (!isObject(value)) return false;
  for (const [name, field] of Object.entries(shape)) {
    if (!Object.hasOwn(value, name) || value[name] === undefined) {
      if (field.optional) continue;
      return false;
    }
    const inner = value[name];
    if (field.shape && !(inner === null && field.omitted?.(null)) && !fits(inner, field.shape)) return false;
    if (
      field.each &&
      inner !== null &&
      !(Array.isArray(inner) && inner.every((entry) => fits(entry, field.each as Shape)))
    )
      return false;
    if (
      field.values &&
      inner !== null &&
      !(isObject(inner) && Object.values(inner).every((entry) => fits(entry, field.values as Shape)))
    )
      return false;
  }
  return true;
}

function compact(value: Record<string, unknown>, shape: Shape): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, inner] of Object.entries(value)) {
    const field = shape[name];
    if (inner === undefined) continue;
    if (!field) {
      out[name] = inner;
      continue;
    }
    if (field.omitted?.(inner)) continue;
    const value = shaped(inner, field, compact);
    out[name] = field.encode ? field.encode(value) : value;
  }
  return out;
}

function restore(value: Record<string, unknown>, shape: Shape): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(shape)) {
    if (Object.hasOwn(value, name))
      out[name] = shaped(field.decode ? field.decode(value[name]) : value[name], field, restore);
    else if (!field.optional) out[name] = (field.restored as () => unknown)();
  }
  for (const [name, inner] of Object.entries(value)) if (!Object.hasOwn(shape, name)) out[name] = inner;
  return out;
}

/** A field's value with `step` applied to the objects its shape describes. */
function shaped(
  value: unknown,
  field: Field,
  step: (value: Record<string, unknown>, shape: Shape) => Record<string, unknown>,
): unknown {
  if (field.shape && isObject(value)) return step(value, field.shape);
  if (field.each && Array.isArray(value))
    return value.map((entry) => step(entry as Record<string, unknown>, field.each as Shape));
  if (field.values && isObject(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, entry]) => [key, step(entry as Record<string, unknown>, field.values as Shape)]),
    );
  return value;
}

const sameNames = (a: string[], b: string[]) => a.length === b.length && a.every((name, at) => name === b[at]);

const indexedName = (alloc: { JobID: string; TaskGroup: string; Name: string }): number | undefined => {
  const prefix = `${alloc.JobID}.${alloc.TaskGroup}[`;
  if (!alloc.Name.startsWith(prefix) || !alloc.Name.endsWith(']')) return undefined;
  const index = alloc.Name.slice(prefix.length, -1);
  return /^(0|[1-9][0-9]{0,8})$/.test(index) ? Number(index) : undefined;
};

/** The item of an allocation, with its key: compact when its shape is the full one, else the allocation whole. */
export function allocationItem(alloc: StoredAllocation): Item {
  const key = { pk: allocNodePk(alloc.NodeID), sk: alloc.ID };
  const whole = { ...alloc, Job: null } as unknown as Record<string, unknown>;
  if (!fits(whole, allocation)) return { ...key, ...whole };
  const { ID: _id, NodeID: _node, ...item } = compact(whole, allocation);
  const index = indexedName(alloc);
  if (index !== undefined) item.Name = index;
  const resources = item.AllocatedResources as Record<string, unknown>;
  const { Tasks: tasks, TaskLifecycles: lifecycles } = alloc.AllocatedResources as unknown as Record<string, unknown>;
  if (isObject(tasks) && isObject(lifecycles)) {
    const names = Object.keys(lifecycles);
    if (sameNames(names, Object.keys(tasks)) && names.every((name) => lifecycles[name] === null))
      delete resources.TaskLifecycles;
  }
  for (const [field, as] of sameAs) if (item[field] === whole[as]) delete item[field];
  return { ...key, ...item };
}

/** The allocation an item holds (a verified item, with its key): as stored before this form, or restored. */
export function allocationOfItem(item: Item): StoredAllocation {
  if (Object.hasOwn(item, 'ID')) {
    const attributes: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(item)) if (!bookkeeping.has(name)) attributes[name] = value;
    return attributes as unknown as StoredAllocation;
  }
  const attributes: Record<string, unknown> = { ID: item.sk, NodeID: item.pk.slice(allocNodePk('').length) };
  for (const [name, value] of Object.entries(item)) if (!bookkeeping.has(name)) attributes[name] = value;
  for (const [field, as] of sameAs) if (!Object.hasOwn(attributes, field)) attributes[field] = attributes[as];
  const resources = attributes.AllocatedResources;
  if (isObject(resources) && !Object.hasOwn(resources, 'TaskLifecycles') && isObject(resources.Tasks))
    attributes.AllocatedResources = {
      ...resources,
      TaskLifecycles: Object.fromEntries(Object.keys(resources.Tasks).map((name) => [name, null])),
    };
  if (typeof attributes.Name === 'number')
    attributes.Name = `${attributes.JobID}.${attributes.TaskGroup}[${attributes.Name}]`;
  return restore(attributes, allocation) as unknown as StoredAllocation;
}
