/** The `DesiredDescription`s the reconciler gives a stopped allocation, Nomad's (`scheduler/structs/const.go`). */
export const stopDescriptions = {
  notNeeded: 'alloc not needed due to job update',
  migrating: 'alloc is being migrated',
  updating: 'alloc is being updated due to job update',
  lost: 'alloc is lost since its node is down',
  rescheduled: 'alloc was rescheduled because it failed',
  /** A system job's allocation on a node it no longer runs on (Nomad's StatusAllocNodeTainted). */
  nodeTainted: 'alloc not needed as node is tainted',
} as const;

/** Nomad's follow-up evaluation for a delayed reschedule. */
export const followupEvaluation = {
  /** A group's first batch; Nomad gives the later batches `alloc-failure` and no description. */
  triggeredBy: 'alloc-reschedule',
  laterTriggeredBy: 'alloc-failure',
  statusDescription: 'created for delayed rescheduling',
  /** Failures within this of a batch's first share its evaluation (Nomad's batchedFailedAllocWindowSize). */
  windowMs: 5000,
} as const;
