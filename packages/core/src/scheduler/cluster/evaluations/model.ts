/**
 * An evaluation (Nomad's `structs.Evaluation`): the scheduler's unit of work, created by a job's registration or
 * deregistration. Statuses are Nomad's (`pending`, `blocked`, `complete`, `failed`, `canceled`); until the scheduler
 * lands every evaluation stays `pending`.
 */
import { randomUUID } from 'node:crypto';
import type { PendingEvent } from '../../state.ts';

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
  WaitUntil: null;
  NextEval: string;
  PreviousEval: string;
  BlockedEval: string;
  RelatedEvals: null;
  FailedTGAllocs: null;
  ClassEligibility: null;
  QuotaLimitReached: string;
  EscapedComputedClass: boolean;
  AnnotatePlan: boolean;
  QueuedAllocations: null;
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

/** The Evaluation topic's event of a write that stored `evaluation` (Nomad's type is the write's: `JobRegistered`, …). */
export function evaluationEvent(type: string, evaluation: Evaluation): PendingEvent {
  return {
    Topic: 'Evaluation',
    Type: type,
    Key: evaluation.ID,
    Namespace: evaluation.Namespace,
    FilterKeys: [evaluation.JobID, evaluation.DeploymentID],
    Payload: { Evaluation: evaluation },
  };
}
