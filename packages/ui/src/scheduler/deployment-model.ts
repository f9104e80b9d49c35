import { pathHref } from '../router.tsx';

/**
 * The shape of Nomad's deployments the console reads (only the fields it shows), their console addresses, and which
 * of their states allow which action.
 */

export interface DeploymentState {
  AutoPromote: boolean;
  AutoRevert: boolean;
  Promoted: boolean;
  DesiredCanaries: number;
  DesiredTotal: number;
  PlacedCanaries: string[] | null;
  PlacedAllocs: number;
  HealthyAllocs: number;
  UnhealthyAllocs: number;
  /** RFC 3339; Go's zero time (`0001-01-01…`) when there is no deadline. */
  RequireProgressBy: string;
}

export interface Deployment {
  ID: string;
  Namespace: string;
  JobID: string;
  JobVersion: number;
  Status: string;
  StatusDescription: string;
  TaskGroups: Record<string, DeploymentState> | null;
  /** Nanoseconds since the epoch. */
  CreateTime: number;
  ModifyTime: number;
}

export const deploymentsBase = '/ui/scheduler/deployments';
export const deploymentHref = (id: string) => pathHref(deploymentsBase, id);

/** The deployments list's address for a namespace and status. */
export const deploymentsListHref = (namespace: string, status: string): string => {
  const query = new URLSearchParams({ namespace, ...(status ? { status } : {}) });
  return `${deploymentsBase}?${query.toString()}`;
};

/** Nomad's deployment statuses (`structs.DeploymentStatus*`), for the list's filter. */
export const deploymentStatuses = [
  'initializing',
  'running',
  'pending',
  'blocked',
  'unblocking',
  'paused',
  'successful',
  'failed',
  'cancelled',
];

/** Nomad's `Deployment.Active()`: a deployment still under way, which may be paused, resumed or failed. */
const activeStatuses = new Set(['running', 'paused', 'pending', 'blocked', 'unblocking', 'initializing']);
export const isActive = (deployment: Pick<Deployment, 'Status'>): boolean => activeStatuses.has(deployment.Status);

/** Whether a deployment waits for its canaries to be promoted (Nomad's `RequiresPromotion`). */
export const needsPromotion = (deployment: Deployment): boolean =>
  deployment.Status === 'running' &&
  Object.values(deployment.TaskGroups ?? {}).some((group) => group.DesiredCanaries > 0 && !group.Promoted);

/** A deadline as the console shows it: '—' for Go's zero time or none. */
export const progressDeadline = (at: string): string =>
  !at || at.startsWith('0001-01-01') ? '—' : at.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
