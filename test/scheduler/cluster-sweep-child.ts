import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { killableCore } from '../support/killable-core.ts';

/**
 * The scheduler's sweep job (`scheduler/sweep.ts`) in a process of its own, for test/scheduler/cluster-sweep.test.ts,
 * which has it killed mid-way (`SWEEP_*`: test/support/killable-core.ts).
 */
const { core, transactions } = await killableCore('SWEEP');
await sweepScheduler(core);
process.stdout.write(`swept after ${transactions()} transactions\n`);
process.exit(0);
