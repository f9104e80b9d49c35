import type { JSX } from 'preact';
import { Table } from '../components.tsx';
import { type AllocMetric, PlacementFailures } from './placement-failures.tsx';

/**
 * A plan's answer (`PUT job/<id>/plan`, Nomad's `JobPlanResponse`) as `nomad job plan` shows it: per task group what
 * the scheduler would do (`Annotations.DesiredTGUpdates`), and for a group it could not place why not
 * (`FailedTGAllocs`, Nomad's `AllocMetric`). Nothing is committed by a plan.
 */

export interface DesiredUpdates {
  Ignore?: number;
  Place?: number;
  Migrate?: number;
  Stop?: number;
  InPlaceUpdate?: number;
  DestructiveUpdate?: number;
  Canary?: number;
  Preemptions?: number;
}

interface FieldDiff {
  Type: string;
  Name: string;
  Old: string;
  New: string;
  Annotations: string[] | null;
}

interface ObjectDiff {
  Type: string;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
}

interface TaskDiff extends ObjectDiff {
  Annotations: string[] | null;
}

interface TaskGroupDiff extends ObjectDiff {
  Tasks: TaskDiff[] | null;
  Updates: Record<string, number> | null;
}

interface JobDiff {
  Type: string;
  ID: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
  TaskGroups: TaskGroupDiff[] | null;
}

export interface JobPlan {
  Annotations?: { DesiredTGUpdates?: Record<string, DesiredUpdates> | null } | null;
  FailedTGAllocs?: Record<string, AllocMetric> | null;
  JobModifyIndex: number;
  Diff?: JobDiff | null;
  Warnings?: string;
}

const markers: Record<string, string> = { Added: '+', Deleted: '-', Edited: '+/-' };
const marker = (type: string) => markers[type] ?? ' ';
const annotated = (annotations: string[] | null) => (annotations?.length ? ` (${annotations.join(', ')})` : '');

function fieldLines(fields: FieldDiff[] | null, indent: string): string[] {
  return (fields ?? [])
    .filter((field) => field.Type !== 'None')
    .map(
      (field) =>
        `${indent}${marker(field.Type)} ${field.Name}: ${JSON.stringify(field.Old)} => ${JSON.stringify(field.New)}` +
        annotated(field.Annotations),
    );
}

function objectLines(objects: ObjectDiff[] | null, indent: string): string[] {
  return (objects ?? [])
    .filter((object) => object.Type !== 'None')
    .flatMap((object) => [
      `${indent}${marker(object.Type)} ${object.Name} {`,
      ...fieldLines(object.Fields, `${indent}    `),
      ...objectLines(object.Objects, `${indent}    `),
      `${indent}  }`,
    ]);
}

/** A job's diff as `nomad job plan` prints it: `+` added, `-` deleted, `+/-` edited, with the scheduler's notes. */
function diffLines(diff: JobDiff): string[] {
  const lines = [`${marker(diff.Type)} Job: ${JSON.stringify(diff.ID)}`];
  lines.push(...fieldLines(diff.Fields, ''), ...objectLines(diff.Objects, ''));
  for (const group of diff.TaskGroups ?? []) {
    const updates = Object.entries(group.Updates ?? {})
      .map(([what, count]) => `${count} ${what}`)
      .join(', ');
    lines.push(`${marker(group.Type)} Task Group: ${JSON.stringify(group.Name)}${updates ? ` (${updates})` : ''}`);
    lines.push(...fieldLines(group.Fields, '  '), ...objectLines(group.Objects, '  '));
    for (const task of group.Tasks ?? []) {
      lines.push(`  ${marker(task.Type)} Task: ${JSON.stringify(task.Name)}${annotated(task.Annotations)}`);
      lines.push(...fieldLines(task.Fields, '    '), ...objectLines(task.Objects, '    '));
    }
  }
  return lines;
}

const updateColumns: Array<[keyof DesiredUpdates, string]> = [
  ['Place', 'Place'],
  ['Stop', 'Stop'],
  ['InPlaceUpdate', 'In place'],
  ['DestructiveUpdate', 'Destructive'],
  ['Canary', 'Canary'],
  ['Migrate', 'Migrate'],
  ['Ignore', 'Ignore'],
];

export function PlanPreview({ plan }: { plan: JobPlan }): JSX.Element {
  const updates = plan.Annotations?.DesiredTGUpdates ?? {};
  const failed = Object.keys(plan.FailedTGAllocs ?? {});
  return (
    <section class="panel" aria-label="Plan">
      <h2>Plan</h2>
      <Table
        columns={['Group', ...updateColumns.map(([, label]) => label)]}
        rows={Object.entries(updates).map(([group, counts]) => [
          group,
          ...updateColumns.map(([field]) => counts[field] ?? 0),
        ])}
        empty="No task group changes."
      />
      {failed.length > 0 ? (
        <PlacementFailures failed={plan.FailedTGAllocs ?? {}} />
      ) : (
        <p class="success" role="status">
          All task groups can be placed.
        </p>
      )}
      {plan.Diff ? (
        <figure aria-label="Job diff">
          <pre class="json">{diffLines(plan.Diff).join('\n')}</pre>
        </figure>
      ) : null}
      {plan.Warnings ? <p class="note">{plan.Warnings}</p> : null}
      <p class="note">Job modify index {plan.JobModifyIndex}: Run submits only if the job has not changed since.</p>
    </section>
  );
}
