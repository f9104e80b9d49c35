import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { killableCore } from '../support/killable-core.ts';

/**
 * The evaluation worker (`scheduler/worker/evaluation-worker.ts`) in a process of its own, for
 * test/scheduler/cluster-worker-kill.test.ts, which has it killed mid-apply (`WORKER_*`: test/support/killable-core.ts).
 */
const { core, transactions } = await killableCore('WORKER');
const outcomes = await new EvaluationWorker(schedulerFor(core)).runDue();
process.stdout.write(`ran ${outcomes.size} evaluations in ${transactions()} transactions\n`);
process.exit(0);
