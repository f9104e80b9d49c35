/**
 * An evaluation (Nomad's `structs.Evaluation`): the scheduler's unit of work, created by a job's registration or
 * deregistration, an allocation's stop or failure, a node going down or draining. Statuses are Nomad's (`pending`,
 * `blocked`, `complete`, `failed`, `canceled`); the evaluation worker runs pending and blocked ones.
 */
import { randomUUID } from 'node:crypto';
import type { PendingEvent } from '../../state.ts';
import { omitEmpty } from '../omit-empty.ts';

export interface Evaluation {
  ID: string;
  Namespace: string;
  Priority: number;
  Type: string;
  TriggeredBy: string;
  JobID: string;
  JobModifyIndex: number;
  NodeID: string;
  NodeModifyIndex: number;
  DeploymentID: string;
  Status: string;
  StatusDescription: string;
  Wait: number;
  /** When a follow-up evaluation is due (RFC 3339), as Nomad's; null for one due at once. */
  WaitUntil: string | null;
  NextEval: string;
  PreviousEval: string;
  BlockedEval: string;
  RelatedEvals: null;
  /** Per task group, why placements failed (Nomad's `AllocMetric`). */
  FailedTGAllocs: Record<string, unknown> | null;
  /**
   * A blocked evaluation's computed classes, each eligible or not for the job (absent: never checked), and whether a
   * constraint escaped them: capacity appearing in an ineligible class does not wake it, unless escaped (Nomad's).
   */
  ClassEligibility: Record<string, boolean> | null;
  QuotaLimitReached: string;
  EscapedComputedClass: boolean;
  AnnotatePlan: boolean;
  /** Per task group, the allocations left unplaced. */
  QueuedAllocations: Record<string, number> | null;
  LeaderACL: string;
  SnapshotIndex: number;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime: number;
  ModifyTime: number;
}

export const evalStatuses = ['pending', 'blocked', 'complete', 'failed', 'canceled'] as const;

/** A new pending evaluation written at `index`, `nowMs` its creation time (nanoseconds in the record, as Nomad's). */
export function pendingEvaluation(
  fields: Pick<Evaluation, 'Namespace' | 'Priority' | 'Type' | 'TriggeredBy' | 'JobID' | 'JobModifyIndex'>,
  index: number,
  nowMs: number,
): Evaluation {
  const nanos = nowMs * 1e6;
  return {
    ID: randomUUID(),
    ...fields,
    NodeID: '',
    NodeModifyIndex: 0,
    DeploymentID: '',
    Status: 'pending',
    StatusDescription: '',
    Wait: 0,
    WaitUntil: null,
    NextEval: '',
    PreviousEval: '',
    BlockedEval: '',
    RelatedEvals: null,
    FailedTGAllocs: null,
    ClassEligibility: null,
    QuotaLimitReached: '',
    EscapedComputedClass: false,
    AnnotatePlan: false,
    QueuedAllocations: null,
    LeaderACL: '',
    SnapshotIndex: 0,
    CreateIndex: index,
    ModifyIndex: index,
    CreateTime: nanos,
    ModifyTime: nanos,
  };
}

/**
 * The evaluation as Nomad's HTTP API and event stream send it (`structs.Evaluation`, `_struct` omitempty): every empty
 * field left out (`""`, `0`, `false`, `null`, the zero `WaitUntil`, empty maps), in every route and event.
 */
export const evaluationJson = (evaluation: Evaluation): Partial<Evaluation> => omitEmpty(evaluation);

/** The Evaluation topic's event of a write that stored `evaluation` (Nomad's type is the write's: `JobRegistered`, …). */
export function evaluationEvent(type: string, evaluation: Evaluation): PendingEvent {
  return {
    Topic: 'Evaluation',
    Type: type,
    Key: evaluation.ID,
    Namespace: evaluation.Namespace,
    FilterKeys: [evaluation.JobID, evaluation.DeploymentID],
    Payload: { Evaluation: evaluationJson(evaluation) },
  };
}
