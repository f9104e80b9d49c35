/**
 * The scheduler configuration (Nomad's `structs.SchedulerConfiguration`, `nomad/structs/operator.go`): the
 * placement algorithm, which job types may preempt lower-priority allocations, and the node limit of placements
 * with affinities or spreads. One per cluster, stored once changed; until then Nomad's defaults (preemption for
 * `system` jobs only, `binpack`).
 *
 * `RejectJobRegistration` refuses job registration and dispatch to every token but a management one (Nomad's
 * load-shedding, `registrationsAreAllowed`); `PauseEvalBroker` stops the evaluation worker taking evaluations (they
 * stay pending; the write that unpauses runs them at once, from the table stream: `worker/evaluation-trigger.ts`);
 * `MemoryOversubscriptionEnabled` grants placements their tasks' `memory_max` (the agent's `NOMAD_MEMORY_MAX_LIMIT`).
 */
import * as z from 'zod/mini';
import { badRequest, DomainError } from '../../../lib/errors.ts';

export interface PreemptionConfig {
  SystemSchedulerEnabled: boolean;
  SysBatchSchedulerEnabled: boolean;
  BatchSchedulerEnabled: boolean;
  ServiceSchedulerEnabled: boolean;
}

export interface SchedulerConfiguration {
  SchedulerAlgorithm: 'binpack' | 'spread';
  PreemptionConfig: PreemptionConfig;
  MemoryOversubscriptionEnabled: boolean;
  RejectJobRegistration: boolean;
  PauseEvalBroker: boolean;
  NodeLimitForFeasibilityChecks: number;
  CreateIndex: number;
  ModifyIndex: number;
}

/** What a write sets (the indexes are the write's). */
export type SchedulerConfigContent = Omit<SchedulerConfiguration, 'CreateIndex' | 'ModifyIndex'>;

/** Nomad's defaults (`nomad/config.go` DefaultConfig's `DefaultSchedulerConfig`), as of the cluster's first index. */
export const defaultSchedulerConfig: SchedulerConfiguration = {
  SchedulerAlgorithm: 'binpack',
  PreemptionConfig: {
    SystemSchedulerEnabled: true,
    SysBatchSchedulerEnabled: false,
    BatchSchedulerEnabled: false,
    ServiceSchedulerEnabled: false,
  },
  MemoryOversubscriptionEnabled: false,
  RejectJobRegistration: false,
  PauseEvalBroker: false,
  NodeLimitForFeasibilityChecks: 0,
  CreateIndex: 1,
  ModifyIndex: 1,
};

/** Nomad's DefaultNodeLimitForFeasibilityChecks: what 0 means. */
export const defaultNodeLimitForFeasibilityChecks = 100;

/** What placement reads of the configuration. */
export interface PlacementSettings {
  algorithm: 'binpack' | 'spread';
  /** Whether the job's type may preempt (Nomad's stacks read the PreemptionConfig by job type). */
  preempt: boolean;
  /** The limit on feasible nodes scored for a group with affinities or spreads. */
  nodeLimit: number;
  /** Whether a task's `memory_max` is granted (Nomad's `MemoryOversubscriptionEnabled`). */
  memoryOversubscription: boolean;
}

/** Whether preemption is on for a job of this type (Nomad's generic and system stacks). */
export function preemptionEnabled(config: Pick<SchedulerConfiguration, 'PreemptionConfig'>, type: string): boolean {
  const preemption = config.PreemptionConfig;
  switch (type) {
    case 'system':
      return preemption.SystemSchedulerEnabled;
    case 'sysbatch':
      return preemption.SysBatchSchedulerEnabled;
    case 'batch':
      return preemption.BatchSchedulerEnabled;
    default:
      return preemption.ServiceSchedulerEnabled;
  }
}

/** The settings placement runs a job of this type with. */
export function placementSettings(config: SchedulerConfiguration, type: string): PlacementSettings {
  return {
    algorithm: config.SchedulerAlgorithm,
    preempt: preemptionEnabled(config, type),
    nodeLimit: config.NodeLimitForFeasibilityChecks || defaultNodeLimitForFeasibilityChecks,
    memoryOversubscription: config.MemoryOversubscriptionEnabled,
  };
}

const flag = (what: string) => z.optional(z.boolean()).check(z.describe(what));

/** The body of `PUT /v1/operator/scheduler/configuration` (Nomad's `api.SchedulerConfiguration`; a missing field is false). */
export const schedulerConfigBody = z.object({
  SchedulerAlgorithm: z.optional(z.string()).check(z.describe('`binpack` (the default when empty) or `spread`.')),
  PreemptionConfig: z
    .optional(
      z.object({
        SystemSchedulerEnabled: flag('Whether `system` jobs may preempt lower-priority allocations.'),
        SysBatchSchedulerEnabled: flag('Whether `sysbatch` jobs may preempt lower-priority allocations.'),
        BatchSchedulerEnabled: flag('Whether `batch` jobs may preempt lower-priority allocations.'),
        ServiceSchedulerEnabled: flag('Whether `service` jobs may preempt lower-priority allocations.'),
      }),
    )
    .check(z.describe('Which job types may preempt (a missing field is false, as Nomad decodes it).')),
  MemoryOversubscriptionEnabled: flag('Grant tasks their `memory_max` (else only `memory` is granted).'),
  RejectJobRegistration: flag('Refuse job registration and dispatch to every token but a management one.'),
  PauseEvalBroker: flag('Pause the evaluation broker: no evaluation runs until it is unpaused.'),
  NodeLimitForFeasibilityChecks: z
    .optional(z.number())
    .check(z.describe('Feasible nodes scored for a group with affinities or spreads (0: 100).')),
  CreateIndex: z.optional(z.number()).check(z.describe('Ignored (the service sets it).')),
  ModifyIndex: z.optional(z.number()).check(z.describe('Ignored: `?cas=` carries the index a CAS write expects.')),
});

export type SchedulerConfigBody = z.output<typeof schedulerConfigBody>;

/**
 * The configuration a body sets, validated as Nomad's (`invalid scheduler algorithm: x`; an empty algorithm is
 * `binpack`, Nomad's scheduler reading it so), and what this service cannot honour refused by name.
 */
export function validateSchedulerConfig(body: SchedulerConfigBody): SchedulerConfigContent {
  const algorithm = body.SchedulerAlgorithm ?? '';
  if (algorithm !== '' && algorithm !== 'binpack' && algorithm !== 'spread')
    throw badRequest(`invalid scheduler algorithm: ${algorithm}`);
  const limit = body.NodeLimitForFeasibilityChecks ?? 0;
  if (!Number.isInteger(limit) || limit < 0 || limit > 2 ** 32 - 1)
    throw badRequest('NodeLimitForFeasibilityChecks must be a whole number from 0 to 4294967295');
  const preemption = body.PreemptionConfig ?? {};
  return {
    SchedulerAlgorithm: algorithm === 'spread' ? 'spread' : 'binpack',
    PreemptionConfig: {
      SystemSchedulerEnabled: preemption.SystemSchedulerEnabled ?? false,
      SysBatchSchedulerEnabled: preemption.SysBatchSchedulerEnabled ?? false,
      BatchSchedulerEnabled: preemption.BatchSchedulerEnabled ?? false,
      ServiceSchedulerEnabled: preemption.ServiceSchedulerEnabled ?? false,
    },
    MemoryOversubscriptionEnabled: body.MemoryOversubscriptionEnabled ?? false,
    RejectJobRegistration: body.RejectJobRegistration ?? false,
    PauseEvalBroker: body.PauseEvalBroker ?? false,
    NodeLimitForFeasibilityChecks: limit,
  };
}

/** Nomad's `ErrJobRegistrationDisabled`, a 403 as its HTTP layer answers it. */
export const registrationDisabled = () =>
  new DomainError('denied', 'Job registration, dispatch, and scale are disabled by the scheduler configuration');

/**
 * Nomad's `registrationsAreAllowed`: registering and dispatching jobs is refused while the configuration rejects
 * registrations, except to a management token (checked after the caller's capability, as Nomad does).
 */
export async function ensureRegistrationsAllowed(
  configs: { get(): Promise<Pick<SchedulerConfiguration, 'RejectJobRegistration'>> },
  management: boolean,
): Promise<void> {
  if (management) return;
  if ((await configs.get()).RejectJobRegistration) throw registrationDisabled();
}
