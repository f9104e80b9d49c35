import type { CancellationReason } from './intent.ts';

/** A write whose condition did not hold: nothing was written, and the invariant the caller relied on stands. */
export class ConditionFailed extends Error {
  constructor(
    message: string,
    /** A cancelled transaction's reasons, one per write in order (`Code` is `None` for a write that passed). */
    readonly reasons?: CancellationReason[],
  ) {
    super(message);
  }
}

/** How `batchGet` names an item. */
export const itemKey = (pk: string, sk: string) => `${pk}|${sk}`;
