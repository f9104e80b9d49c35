import type { JSX } from 'preact';

/**
 * Why the scheduler could not place a task group (Nomad's `AllocMetric`, an evaluation's or a plan's
 * `FailedTGAllocs`), in the words `nomad job status` and `nomad job plan` use.
 */

export interface AllocMetric {
  NodesEvaluated?: number;
  NodesFiltered?: number;
  NodesInPool?: number;
  NodesAvailable?: Record<string, number> | null;
  ClassFiltered?: Record<string, number> | null;
  ConstraintFiltered?: Record<string, number> | null;
  NodesExhausted?: number;
  ClassExhausted?: Record<string, number> | null;
  DimensionExhausted?: Record<string, number> | null;
  CoalescedFailures?: number;
}

const counted = (counts: Record<string, number> | null | undefined): string[] =>
  Object.entries(counts ?? {}).map(([name, count]) => `${name}: ${count}`);

/** Why a group could not be placed, in the words `nomad job plan` uses. */
function failureLines(metric: AllocMetric): string[] {
  const lines = [
    `${metric.NodesEvaluated ?? 0} nodes evaluated, ${metric.NodesFiltered ?? 0} filtered, ${metric.NodesExhausted ?? 0} exhausted` +
      (metric.NodesInPool !== undefined ? ` (${metric.NodesInPool} in the pool)` : ''),
  ];
  if ((metric.CoalescedFailures ?? 0) > 0) lines.push(`${metric.CoalescedFailures} more allocations failed alike`);
  for (const line of counted(metric.ConstraintFiltered)) lines.push(`Constraint ${line} nodes filtered`);
  for (const line of counted(metric.ClassFiltered)) lines.push(`Class ${line} nodes filtered`);
  for (const line of counted(metric.ClassExhausted)) lines.push(`Class ${line} nodes exhausted`);
  for (const line of counted(metric.DimensionExhausted)) lines.push(`Dimension ${line} nodes exhausted`);
  return lines;
}

/** Each failed group with its reasons, as an alert. */
export function PlacementFailures({ failed }: { failed: Record<string, AllocMetric> }): JSX.Element | null {
  const groups = Object.entries(failed);
  if (groups.length === 0) return null;
  return (
    <div class="error" role="alert" aria-label="Placement failures">
      <strong>Placement failures</strong>
      <ul>
        {groups.map(([group, metric]) => (
          <li key={group}>
            Task group {group}: {failureLines(metric).join('; ')}
          </li>
        ))}
      </ul>
    </div>
  );
}
