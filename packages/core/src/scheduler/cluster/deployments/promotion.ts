/**
 * Promoting a deployment's canaries (Nomad's `UpdateDeploymentPromotion`, `nomad/state/state_store.go`, and the
 * watcher's autoPromoteDeployment): the groups promoted must each have as many healthy, non-terminal canaries as they
 * desire, else nothing changes and the answer names each short group; the groups are marked promoted (their progress
 * deadline restarted), the description loses "requires promotion", and the healthy canaries stop being canaries.
 * Pure: the caller writes the result with an evaluation, in one transaction.
 */
import { badRequest } from '../../../lib/errors.ts';
import { rfc3339 } from '../../acl/common.ts';
import type { Allocation } from '../allocations/model.ts';
import { isHealthy, timeMs } from './health.ts';
import { type ClusterDeployment, deploymentDescriptions, requiresPromotion } from './model.ts';

/** Nomad's Allocation.TerminalStatus: told to stop or evicted, or finished on the client. */
export const terminalAlloc = (alloc: Pick<Allocation, 'DesiredStatus' | 'ClientStatus'>): boolean =>
  alloc.DesiredStatus === 'stop' ||
  alloc.DesiredStatus === 'evict' ||
  ['complete', 'failed', 'lost'].includes(alloc.ClientStatus);

/** Go's multierror text, as Nomad answers several errors at once. */
export function multiError(messages: string[]): string {
  if (messages.length === 1) return `1 error occurred:\n\t* ${messages[0]}\n\n`;
  return `${messages.length} errors occurred:\n\t${messages.map((message) => `* ${message}`).join('\n\t')}\n\n`;
}

export interface Promotion<A extends Allocation> {
  deployment: ClusterDeployment;
  /** The canaries that are no longer canaries. */
  promoted: A[];
}

/** The promotion of `groups` (every group when `all`) of `deployment`, whose allocations are `allocs`. */
export function promote<A extends Allocation>(
  deployment: ClusterDeployment,
  allocs: A[],
  all: boolean,
  groups: string[],
  index: number,
  nowNs: number,
): Promotion<A> {
  const chosen = (group: string) => all || groups.includes(group);
  const canaries = new Set(Object.values(deployment.TaskGroups).flatMap((state) => state.PlacedCanaries ?? []));
  const healthy = new Map<string, number>();
  const promoted: A[] = [];
  for (const alloc of allocs) {
    if (alloc.DeploymentID !== deployment.ID || !canaries.has(alloc.ID) || !chosen(alloc.TaskGroup)) continue;
    if (terminalAlloc(alloc) || !isHealthy(alloc)) continue;
    healthy.set(alloc.TaskGroup, (healthy.get(alloc.TaskGroup) ?? 0) + 1);
    promoted.push(alloc);
  }
  const short = Object.entries(deployment.TaskGroups)
    .filter(([group, state]) => chosen(group) && state.DesiredCanaries > 0)
    .filter(([group, state]) => (healthy.get(group) ?? 0) < state.DesiredCanaries)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(
      ([group, state]) =>
        `Task group ${JSON.stringify(group)} has ${healthy.get(group) ?? 0}/${state.DesiredCanaries} healthy allocations`,
    );
  if (short.length > 0) throw badRequest(multiError(short));
  const after: ClusterDeployment = {
    ...deployment,
    TaskGroups: Object.fromEntries(
      Object.entries(deployment.TaskGroups).map(([group, state]) => {
        if (!chosen(group)) return [group, state];
        const restart = state.ProgressDeadline > 0 && timeMs(state.RequireProgressBy) !== undefined;
        return [
          group,
          {
            ...state,
            Promoted: true,
            ...(restart ? { RequireProgressBy: rfc3339(nowNs / 1e6 + state.ProgressDeadline / 1e6) } : {}),
          },
        ];
      }),
    ),
    ModifyIndex: index,
    ModifyTime: nowNs,
  };
  if (!requiresPromotion(after) && after.Status === 'running') after.StatusDescription = deploymentDescriptions.running;
  return {
    deployment: after,
    promoted: promoted.map((alloc) => ({
      ...alloc,
      DeploymentStatus: alloc.DeploymentStatus && { ...alloc.DeploymentStatus, Canary: false, ModifyIndex: index },
      ModifyIndex: index,
      AllocModifyIndex: index,
    })),
  };
}
