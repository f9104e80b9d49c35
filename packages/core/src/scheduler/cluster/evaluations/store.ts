/**
 * Evaluations in the table: one signed item per evaluation, sharded 16 ways by its ID (`EVAL_PK`), written inside
 * the writes that create them (a job's registration, an allocation's stop or failure, a node going down) and by the
 * worker that runs them. A pending evaluation is also on the evaluation queue (`EVAL_QUEUE` on the
 * `due` index, due at its `WaitUntil` or creation), a blocked one on the blocked queue (`EVAL_BLOCKED`), which the
 * worker reads; it leaves them when it leaves those statuses.
 */
import { dueKey, shardCount, shardedQueue, shardKey } from '../../../storage/due.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Write } from '../../../storage/store.ts';
import { withoutKeys } from '../../acl/common.ts';
import { EVAL_BLOCKED, EVAL_PK, EVAL_QUEUE } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import type { Evaluation } from './model.ts';

export const evaluationKind = itemKind('scheduler-evaluation');

export class Evaluations {
  constructor(private readonly state: SchedulerState) {}

  static key = (id: string) => ({ pk: shardKey(EVAL_PK, id), sk: id });

  /** The put of an evaluation, for the transaction of the write that creates or changes it (queued while pending). */
  put(evaluation: Evaluation, previous?: Evaluation): Write {
    const dueAt = evaluation.WaitUntil
      ? Math.ceil(Date.parse(evaluation.WaitUntil) / 1000)
      : Math.floor(evaluation.CreateTime / 1e9);
    const queue = evaluation.Status === 'pending' ? EVAL_QUEUE : evaluation.Status === 'blocked' ? EVAL_BLOCKED : '';
    const queued = queue ? { duePk: shardedQueue(queue, evaluation.ID), dueSk: dueKey(dueAt, evaluation.ID) } : {};
    return {
      put: this.state.store.signed(evaluationKind, { ...Evaluations.key(evaluation.ID), ...evaluation, ...queued }),
      ...(previous ? { when: { equals: { ModifyIndex: previous.ModifyIndex } } } : {}),
    };
  }

  async get(id: string): Promise<Evaluation | undefined> {
    const key = Evaluations.key(id);
    return withoutKeys<Evaluation>(await this.state.store.getVerified(evaluationKind, key.pk, key.sk));
  }

  /** Every evaluation, sorted by ID. */
  async list(): Promise<Evaluation[]> {
    const shards = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.state.store.list(`${EVAL_PK}#${String(shard).padStart(2, '0')}`),
      ),
    );
    return shards
      .flat()
      .filter((item) => this.state.store.verified(evaluationKind, item))
      .map((item) => withoutKeys<Evaluation>(item) as Evaluation)
      .sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  }

  /** The evaluations of one job, newest first (as Nomad's job evaluations list). */
  async ofJob(namespace: string, jobId: string): Promise<Evaluation[]> {
    return (await this.list())
      .filter((evaluation) => evaluation.Namespace === namespace && evaluation.JobID === jobId)
      .sort((a, b) => b.CreateIndex - a.CreateIndex);
  }
}
