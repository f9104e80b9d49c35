import { type ApiPath, api, withQuery } from '../api.ts';
import { pathHref } from '../router.tsx';
import type { AllocMetric } from './placement-failures.tsx';

/**
 * The shapes of Nomad's jobs, allocations and evaluations the console reads (only the fields it shows), their console
 * addresses and API paths, and how their times and statuses are shown.
 */

export interface JobStub {
  ID: string;
  Name: string;
  Namespace: string;
  Type: string;
  Priority: number;
  NodePool: string;
  Status: string;
  Stop: boolean;
  SubmitTime: number;
  JobSummary: { Summary: Record<string, unknown> } | null;
}

export interface Task {
  Name: string;
  Driver: string;
  Resources?: { CPU?: number; MemoryMB?: number } | null;
}

export interface TaskGroup {
  Name: string;
  Count: number;
  Tasks: Task[] | null;
  EphemeralDisk?: { SizeMB?: number } | null;
}

export interface Job extends Record<string, unknown> {
  ID: string;
  Name: string;
  Namespace: string;
  Type: string;
  Priority: number;
  NodePool: string;
  Datacenters: string[] | null;
  Status: string;
  StatusDescription: string;
  Stop: boolean;
  Stable: boolean;
  Version: number;
  SubmitTime: number;
  JobModifyIndex: number;
  TaskGroups: TaskGroup[] | null;
}

export interface TaskEvent {
  Type: string;
  Time: number;
  Message?: string;
  DisplayMessage?: string;
  ExitCode?: number;
}

export interface TaskState {
  State: string;
  Failed: boolean;
  Restarts: number;
  StartedAt: string | null;
  FinishedAt: string | null;
  Events: TaskEvent[] | null;
}

export interface AllocationStub {
  ID: string;
  Name: string;
  Namespace: string;
  NodeID: string;
  NodeName: string;
  JobID: string;
  JobVersion: number;
  TaskGroup: string;
  DesiredStatus: string;
  ClientStatus: string;
  ClientDescription: string;
  TaskStates: Record<string, TaskState> | null;
  CreateTime: number;
  ModifyTime: number;
}

export interface Evaluation {
  ID: string;
  Type: string;
  TriggeredBy: string;
  Status: string;
  StatusDescription: string;
  Priority: number;
  FailedTGAllocs: Record<string, AllocMetric> | null;
  QueuedAllocations: Record<string, number> | null;
  BlockedEval: string;
  CreateTime: number;
}

export const jobsBase = '/ui/scheduler/jobs';
/** A job's page: its ID one segment, a `/` in it (a dispatched job's) encoded as `%2F`, as the API path spells it. */
export const jobHref = (namespace: string, id: string) => `${pathHref(jobsBase, namespace)}/${encodeURIComponent(id)}`;
export const allocationHref = (id: string) => pathHref('/ui/scheduler/allocations', id);
/** The jobs list's address for a namespace and status. */
export const jobsListHref = (namespace: string, status: string): string => {
  const query = new URLSearchParams({ namespace, ...(status ? { status } : {}) });
  return `${jobsBase}?${query.toString()}`;
};
export const nodeHref = (id: string) => pathHref('/ui/scheduler/nodes', id);

/** A path of one job's API (`job/<id>`, `job/<id>/allocations` …) in its namespace. */
export function jobApi(
  namespace: string,
  id: string,
  part?: 'allocations' | 'evaluations' | 'versions' | 'deployment',
): ApiPath {
  const path = part ? api`job/${id}/${part}` : api`job/${id}`;
  return withQuery(path, { namespace });
}

/** Nanoseconds since the epoch (Nomad's times) as `2026-11-29 06:01:02` UTC; '—' for none. */
export function formatNanoTime(nanoseconds: number | null | undefined): string {
  if (!nanoseconds) return '—';
  return new Date(nanoseconds / 1e6).toISOString().replace('T', ' ').slice(0, 19);
}

const goodStatuses = new Set(['running', 'complete', 'successful']);
const badStatuses = new Set(['failed', 'lost', 'dead', 'canceled', 'cancelled', 'blocked']);

/** A status as a badge class: good, bad or plain. */
export const statusClass = (status: string): string =>
  goodStatuses.has(status) ? 'good' : badStatuses.has(status) ? 'bad' : '';

/** A job's status as Nomad's UI words it: a stopped job is "stopped" while its allocations wind down. */
export const jobStatusText = (job: Pick<JobStub, 'Status' | 'Stop'>): string =>
  job.Stop && job.Status !== 'dead' ? `${job.Status} (stopped)` : job.Status;

/** The CPU (MHz) and memory (MB) a group asks for, its tasks summed, and its ephemeral disk. */
export function groupResources(group: TaskGroup): { cpu: number; memoryMB: number; diskMB: number } {
  let cpu = 0;
  let memoryMB = 0;
  for (const task of group.Tasks ?? []) {
    cpu += task.Resources?.CPU ?? 0;
    memoryMB += task.Resources?.MemoryMB ?? 0;
  }
  return { cpu, memoryMB, diskMB: group.EphemeralDisk?.SizeMB ?? 0 };
}

/** A short ID as Nomad's UI shows it (the first eight characters). */
export const shortId = (id: string): string => id.slice(0, 8);
