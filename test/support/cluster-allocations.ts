import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { StoredAllocation } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { type Plan, PlanApplier } from '../../packages/core/src/scheduler/cluster/evaluations/plan-apply.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { nodeTokens, registerNode } from './cluster-nodes.ts';
import type { SchedulerService } from './scheduler-harness.ts';

/** A minimal JSON job as a user sends it: everything else is Nomad's default. */
export function webJob(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ID: id,
    TaskGroups: [
      {
        Name: 'web',
        Tasks: [
          {
            Name: 'server',
            Driver: 'raw_exec',
            Config: { command: 'python3' },
            Resources: { CPU: 500, MemoryMB: 256 },
          },
        ],
      },
    ],
    ...overrides,
  };
}

/** What a test varies in a job of one group `web` with one raw_exec task `server`. */
export interface GroupJobSpec {
  /** The group's Count (1 unless given). */
  count?: number;
  /** The task's command (`python3` unless given). */
  command?: string;
  /** The task's CPU MHz (500) and memory MB (256). */
  cpu?: number;
  memoryMB?: number;
  /** More fields of the group (`Update`, `Networks`) and of the task (`KillTimeout`). */
  group?: Record<string, unknown>;
  task?: Record<string, unknown>;
}

/** A job of one group `web` of `count` raw_exec tasks `server`, with `job`'s fields (Type, NodePool…) on top. */
export function groupJob(id: string, spec: GroupJobSpec = {}, job: Record<string, unknown> = {}) {
  const { count = 1, command = 'python3', cpu = 500, memoryMB = 256, group = {}, task = {} } = spec;
  return webJob(id, {
    TaskGroups: [
      {
        Name: 'web',
        Count: count,
        ...group,
        Tasks: [
          {
            Name: 'server',
            Driver: 'raw_exec',
            Config: { command },
            Resources: { CPU: cpu, MemoryMB: memoryMB },
            ...task,
          },
        ],
      },
    ],
    ...job,
  });
}

/** A service job of group `web` with a rolling update block (one at a time); `command` makes a destructive change. */
export const rollingJob = (id: string, count: number, command: string) =>
  groupJob(id, { count, command, cpu: 100, memoryMB: 64, group: { Update: { MaxParallel: 1 } } });

/**
 * A new allocation of `job`'s group `web` on `node`, as placement would make it (indexes set by the write). The job
 * is read from the store so its version is the one stored.
 */
export async function allocationOf(
  h: SchedulerService,
  job: { namespace?: string; id: string; evalId: string },
  node: { ID: string; Name: string },
  index = 0,
  overrides: Partial<StoredAllocation> = {},
): Promise<StoredAllocation> {
  const namespace = job.namespace ?? 'default';
  const stored = await h.scheduler.jobs.get(namespace, job.id);
  if (!stored) throw new Error(`no job ${namespace}/${job.id}`);
  const now = h.clock.now() * 1e6;
  return {
    ID: randomUUID(),
    Namespace: namespace,
    EvalID: job.evalId,
    Name: `${job.id}.web[${index}]`,
    NodeID: node.ID,
    NodeName: node.Name,
    JobID: job.id,
    JobVersion: stored.Version,
    JobType: stored.Type,
    Job: null,
    TaskGroup: 'web',
    AllocatedResources: {
      Tasks: {
        server: {
          Cpu: { CpuShares: 500, ReservedCores: null },
          Memory: { MemoryMB: 256, MemoryMaxMB: 0 },
          Networks: null,
          Devices: null,
        },
      },
      TaskLifecycles: {},
      Shared: { DiskMB: 300, Networks: null, Ports: null },
    },
    Metrics: null,
    DesiredStatus: 'run',
    DesiredDescription: '',
    DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
    ClientStatus: 'pending',
    ClientDescription: '',
    TaskStates: null,
    DeploymentID: '',
    DeploymentStatus: null,
    PreviousAllocation: '',
    NextAllocation: '',
    RescheduleTracker: null,
    FollowupEvalID: '',
    CreateIndex: 0,
    ModifyIndex: 0,
    AllocModifyIndex: 0,
    CreateTime: now,
    ModifyTime: now,
    ...overrides,
  };
}

/** The node versions (beat `allocIndex`) as a plan computed now would hold them. */
export async function nodeVersions(h: SchedulerService, nodeIds: string[]): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  for (const id of nodeIds) versions.set(id, (await h.scheduler.nodes.beat(id))?.allocIndex ?? 0);
  return versions;
}

/** Applies a plan through the scheduler's plan apply, the versions read now unless given. */
export async function applyPlan(
  h: SchedulerService,
  plan: Partial<Plan> & Pick<Plan, 'place'>,
): Promise<Awaited<ReturnType<PlanApplier['apply']>>> {
  const nodes = [...new Set([...plan.place.map((alloc) => alloc.NodeID), ...(plan.update ?? []).map((u) => u.nodeId)])];
  return new PlanApplier(h.scheduler.state, h.scheduler.nodes, h.scheduler.allocations).apply({
    update: [],
    nodeVersions: plan.nodeVersions ?? (await nodeVersions(h, nodes)),
    ...plan,
  });
}

/** Marks a node ready with a heartbeat (placement takes only ready nodes). */
export async function ready(h: SchedulerService, node: { ID: string; SecretID: string }): Promise<void> {
  const out = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
    token: node.SecretID,
    body: { Status: 'ready' },
  });
  if (out.status !== 200) throw new Error(`heartbeat refused: ${out.status} ${out.text}`);
}

/** A client's allocation updates for `node` (`PUT /v1/client/node/:id/allocations`), which must be taken: its index. */
export async function reportAllocs(
  h: SchedulerService,
  node: { ID: string; SecretID: string },
  allocs: Array<Record<string, unknown> & { ID: string; ClientStatus: string }>,
): Promise<number> {
  const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
    token: node.SecretID,
    body: { Allocs: allocs },
  });
  expect(out.status).toBe(200);
  return out.body.Index as number;
}

/** `h` with its management token, a `node:write` token and an evaluation worker: where a cluster suite starts. */
export async function withWorker<H extends SchedulerService>(h: H) {
  const { root, writer } = await nodeTokens(h);
  return { h, root, writer, worker: new EvaluationWorker(h.scheduler) };
}

/** A call as the management token, both read when called (a suite sets them in `beforeAll`). */
export const managementCall =
  (session: () => { h: SchedulerService; root: string }) => (method: string, path: string, body?: unknown) =>
    session().h.call(method, path, { token: session().root, ...(body === undefined ? {} : { body }) });

/** `withWorker`, and one node registered (with `overrides`) and ready. */
export async function withReadyNode<H extends SchedulerService>(h: H, overrides: Record<string, unknown> = {}) {
  const session = await withWorker(h);
  const { node } = await registerNode(h, session.writer, overrides);
  await ready(h, node);
  return { ...session, node };
}

type RegisteredNode = Awaited<ReturnType<typeof registerNode>>['node'];

/** One node per `overrides` registered with `writer`, then each made ready, in that order: the nodes. */
export async function readyNodes<T extends Array<Record<string, unknown>>>(
  h: SchedulerService,
  writer: string,
  ...overrides: T
): Promise<{ [K in keyof T]: RegisteredNode }> {
  const nodes: RegisteredNode[] = [];
  for (const each of overrides) nodes.push((await registerNode(h, writer, each)).node);
  for (const node of nodes) await ready(h, node);
  return nodes as { [K in keyof T]: RegisteredNode };
}
