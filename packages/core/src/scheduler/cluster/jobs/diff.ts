/**
 * A job's diff against its stored version, in the shape of Nomad's `structs.JobDiff` (`nomad/structs/diff.go`, read
 * for behaviour, not copied): `{Type, ID, Fields, Objects, TaskGroups: [{Type, Name, Fields, Objects, Tasks,
 * Updates}]}`, each type `Added`, `Deleted`, `Edited` or `None`; contextual as `Job.Plan` asks (unchanged fields
 * listed as `None`). Fields are a struct's primitive values (as strings) and its maps of primitives (`Meta[key]`);
 * objects are its nested structs, its lists of primitives (one field per value, named as the list) and its lists of
 * structs (an element matched by equal content: `None`, else `Deleted` and `Added`). Task groups and tasks are
 * matched by name. `annotateDiff` adds what a plan does, as Nomad's `scheduler.Annotate`: a group's `Updates` counts
 * and a task's annotation (`forces create`, `forces destroy`, `forces in-place update`, `forces create/destroy update`).
 */
import { sameContent } from '../../acl/common.ts';
import type { Job } from './model.ts';

export type DiffType = 'Added' | 'Deleted' | 'Edited' | 'None';
type Loose = Record<string, unknown>;
/** A plan's counts for one task group (placement's `DesiredUpdates`). */
type DesiredUpdates = Record<string, number>;

export interface FieldDiff {
  Type: DiffType;
  Name: string;
  Old: string;
  New: string;
  Annotations: string[] | null;
}
export interface ObjectDiff {
  Type: DiffType;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
}
export interface TaskDiff extends ObjectDiff {
  Annotations: string[] | null;
}
export interface TaskGroupDiff extends ObjectDiff {
  Tasks: TaskDiff[] | null;
  Updates: Record<string, number> | null;
}
export interface JobDiff {
  Type: DiffType;
  ID: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
  TaskGroups: TaskGroupDiff[] | null;
}

/** Fields Nomad's Job.Diff leaves out (state, not spec), and those diffed on their own. */
const jobSkipped = new Set([
  'ID',
  'Status',
  'StatusDescription',
  'Stable',
  'Version',
  'SubmitTime',
  'CreateIndex',
  'ModifyIndex',
  'JobModifyIndex',
  'NomadTokenID',
  'VaultToken',
  'Update',
  'TaskGroups',
  'Payload',
  'ParentID',
  'Dispatched',
  'DispatchIdempotencyToken',
  'VersionTag',
]);

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isPrimitive = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);
const text = (value: unknown): string => (value === null || value === undefined ? '' : String(value));
const byName = <T extends { Name: string }>(list: T[]) =>
  list.sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));

function fieldDiff(name: string, old: unknown, next: unknown): FieldDiff {
  const type: DiffType =
    old === undefined || old === null
      ? next === undefined || next === null
        ? 'None'
        : 'Added'
      : next === undefined || next === null
        ? 'Deleted'
        : text(old) === text(next)
          ? 'None'
          : 'Edited';
  return { Type: type, Name: name, Old: text(old), New: text(next), Annotations: null };
}

/** The type of a diff of `old` → `next` given its parts' diffs. */
function typeOf(old: unknown, next: unknown, parts: Array<{ Type: DiffType }>): DiffType {
  if (old === undefined || old === null) return 'Added';
  if (next === undefined || next === null) return 'Deleted';
  return parts.some((part) => part.Type !== 'None') ? 'Edited' : 'None';
}

/** The fields and objects of two structs (absent ones read as empty). */
function structParts(old: Loose | undefined, next: Loose | undefined, skip: Set<string> = new Set()) {
  const fields: FieldDiff[] = [];
  const objects: ObjectDiff[] = [];
  const keys = new Set([...Object.keys(old ?? {}), ...Object.keys(next ?? {})]);
  for (const key of keys) {
    if (skip.has(key)) continue;
    const a = old?.[key];
    const b = next?.[key];
    if ((a === undefined || isPrimitive(a)) && (b === undefined || isPrimitive(b))) {
      if (old && next) fields.push(fieldDiff(key, a, b));
      else fields.push(fieldDiff(key, old ? a : undefined, next ? b : undefined));
    } else if (isPrimitiveMap(a) && isPrimitiveMap(b)) {
      const names = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]);
      for (const name of names) fields.push(fieldDiff(`${key}[${name}]`, a?.[name], b?.[name]));
    } else if (Array.isArray(a) || Array.isArray(b)) {
      objects.push(...listDiff(key, (a as unknown[] | undefined) ?? [], (b as unknown[] | undefined) ?? []));
    } else {
      const diff = objectDiff(key, isObject(a) ? a : undefined, isObject(b) ? b : undefined);
      if (diff) objects.push(diff);
    }
  }
  return { fields: byName(fields), objects: byName(objects) };
}

function isPrimitiveMap(value: unknown): value is Loose | null | undefined {
  if (value === undefined || value === null) return true;
  return isObject(value) && Object.keys(value).length > 0 && Object.values(value).every((v) => typeof v === 'string');
}

/** A nested struct's diff; undefined when both are absent. */
function objectDiff(name: string, old: Loose | undefined, next: Loose | undefined): ObjectDiff | undefined {
  if (!old && !next) return undefined;
  const { fields, objects } = structParts(old, next);
  const type = typeOf(old, next, [...fields, ...objects]);
  return { Type: type, Name: name, Fields: fields.length ? fields : null, Objects: objects.length ? objects : null };
}

/** A list: of primitives, one object of a field per value; of structs, one object per element. */
function listDiff(name: string, old: unknown[], next: unknown[]): ObjectDiff[] {
  if ([...old, ...next].every(isPrimitive)) {
    if (old.length === 0 && next.length === 0) return [];
    const values = [...new Set([...old.map(text), ...next.map(text)])].sort();
    const fields = values.map((value) =>
      fieldDiff(
        name,
        old.map(text).includes(value) ? value : undefined,
        next.map(text).includes(value) ? value : undefined,
      ),
    );
    const type = old.length === 0 ? 'Added' : next.length === 0 ? 'Deleted' : typeOf(old, next, fields);
    return [{ Type: type, Name: name, Fields: fields, Objects: null }];
  }
  const out: ObjectDiff[] = [];
  const unmatched = [...next];
  for (const element of old) {
    const at = unmatched.findIndex((candidate) => sameContent(candidate, element));
    if (at >= 0) {
      unmatched.splice(at, 1);
      const same = objectDiff(name, element as Loose, element as Loose);
      if (same) out.push(same);
    } else {
      const gone = objectDiff(name, isObject(element) ? element : {}, undefined);
      if (gone) out.push(gone);
    }
  }
  for (const element of unmatched) {
    const added = objectDiff(name, undefined, isObject(element) ? element : {});
    if (added) out.push(added);
  }
  return out;
}

const named = (list: unknown): Map<string, Loose> =>
  new Map((Array.isArray(list) ? list : []).filter(isObject).map((item) => [String(item.Name ?? ''), item] as const));

function taskDiff(name: string, old: Loose | undefined, next: Loose | undefined): TaskDiff {
  const { fields, objects } = structParts(old, next, new Set(['Name']));
  return {
    Type: typeOf(old, next, [...fields, ...objects]),
    Name: name,
    Fields: fields.length ? fields : null,
    Objects: objects.length ? objects : null,
    Annotations: null,
  };
}

function groupDiff(name: string, old: Loose | undefined, next: Loose | undefined): TaskGroupDiff {
  const { fields, objects } = structParts(old, next, new Set(['Name', 'Tasks']));
  const oldTasks = named(old?.Tasks);
  const newTasks = named(next?.Tasks);
  const tasks = byName(
    [...new Set([...oldTasks.keys(), ...newTasks.keys()])].map((task) =>
      taskDiff(task, oldTasks.get(task), newTasks.get(task)),
    ),
  );
  return {
    Type: typeOf(old, next, [...fields, ...objects, ...tasks]),
    Name: name,
    Fields: fields.length ? fields : null,
    Objects: objects.length ? objects : null,
    Tasks: tasks.length ? tasks : null,
    Updates: null,
  };
}

/** The diff of the stored job (`old`, undefined for a new job) to the submitted one (`next`). */
export function jobDiff(old: Job | undefined, next: Job): JobDiff {
  const { fields, objects } = structParts(old, next, jobSkipped);
  const oldGroups = named(old?.TaskGroups);
  const newGroups = named(next.TaskGroups);
  const groups = byName(
    [...new Set([...oldGroups.keys(), ...newGroups.keys()])].map((group) =>
      groupDiff(group, oldGroups.get(group), newGroups.get(group)),
    ),
  );
  return {
    Type: typeOf(old, next, [...fields, ...objects, ...groups]),
    ID: next.ID,
    Fields: fields.length ? fields : null,
    Objects: objects.length ? objects : null,
    TaskGroups: groups.length ? groups : null,
  };
}

/** Nomad's names of a plan's per-group counts in a diff's `Updates`. */
const updateNames: Array<[string, string]> = [
  ['Ignore', 'ignore'],
  ['Place', 'create'],
  ['Migrate', 'migrate'],
  ['Stop', 'destroy'],
  ['InPlaceUpdate', 'in-place update'],
  ['DestructiveUpdate', 'create/destroy update'],
  ['Canary', 'canary'],
];

/** Fields and objects of a task a change of which Nomad updates in place (all others are destructive). */
const inPlaceFields = new Set(['KillTimeout']);
const inPlaceObjects = new Set(['Service', 'Services', 'Constraint', 'Constraints', 'LogConfig']);

/** Adds a plan's decisions to its diff, as Nomad's `scheduler.Annotate`. */
export function annotateDiff(diff: JobDiff, desired: Record<string, DesiredUpdates>): JobDiff {
  for (const group of diff.TaskGroups ?? []) {
    const updates = desired[group.Name];
    if (updates) {
      const counts: Record<string, number> = {};
      for (const [key, label] of updateNames) if ((updates[key] ?? 0) !== 0) counts[label] = updates[key] ?? 0;
      group.Updates = counts;
    }
    const count = group.Fields?.find((field) => field.Name === 'Count' && field.Type === 'Edited');
    if (count) count.Annotations = [Number(count.New) > Number(count.Old) ? 'forces create' : 'forces destroy'];
    for (const task of group.Tasks ?? []) {
      if (task.Type === 'Added') task.Annotations = ['forces create'];
      else if (task.Type === 'Deleted') task.Annotations = ['forces destroy'];
      else if (task.Type === 'Edited') {
        const destructive =
          (task.Fields ?? []).some((field) => field.Type !== 'None' && !inPlaceFields.has(field.Name)) ||
          (task.Objects ?? []).some((object) => object.Type !== 'None' && !inPlaceObjects.has(object.Name));
        task.Annotations = [destructive ? 'forces create/destroy update' : 'forces in-place update'];
      }
    }
  }
  return diff;
}
