/**
 * Placement alone (issue 41, "Speed"): the pure placement function (`scheduler/placement/place.ts`) over 5,000
 * simulated nodes built as the agent's seeded fleet builds them (`seededNode`, stored as `registeredNode` stores a
 * registration, marked ready), placing a service job of count 10,000 (one task of 100 MHz and 256 MB, one dynamic
 * port), then a job of count 1,000 as `PUT /v1/job/:id/plan` would (the issue's goal: under 1 s). Figures: nodes
 * scored per millisecond (the placements' `NodesEvaluated` over the time), placements per second, the count-1,000
 * time, and the ratio to a baseline measured in the same run: a bare loop that takes as many nodes in the same
 * round-robin order and only does bin-packing's arithmetic (fit and `ScoreFitBinPack` on plain numbers, the best of
 * each candidate set kept) — what scoring a node costs with nothing of Nomad's checks, metrics or ports around it.
 * Rounds are interleaved and the best of each is shown (the machine is shared). No DynamoDB: placement is pure.
 * Run: `npx tsx test/bench/placement.bench.ts` (NODES, COUNT, PLAN_COUNT, ROUNDS to change the sizes; defaults 5000,
 * 10000, 1000, 3). BENCH_SMOKE=1: 200 nodes, count 400, plan 100, one round.
 */
import { seededNode } from '../../packages/agent/src/fleet/seeded-nodes.ts';
import { canonicalJob, type Job, validateJob } from '../../packages/core/src/scheduler/cluster/jobs/model.ts';
import { type ClusterNode, registeredNode } from '../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { candidateLimit, place } from '../../packages/core/src/scheduler/placement/place.ts';
import { binPackFitness, capacityOf } from '../../packages/core/src/scheduler/placement/resources.ts';
import { seededRandom, shuffle } from '../../packages/core/src/scheduler/placement/shuffle.ts';
import type { PlacementRequest } from '../../packages/core/src/scheduler/placement/types.ts';
import { collectGarbage, figure, sized } from './summary.ts';
import { serviceJobSpec } from './bench-job.ts';

const nodeCount = sized('NODES', 5000, 200);
const count = sized('COUNT', 10_000, 400);
const planCount = sized('PLAN_COUNT', 1000, 100);
const rounds = sized('ROUNDS', 3, 1);
const bench = 'placement';

const nodes: ClusterNode[] = Array.from({ length: nodeCount }, (_, position) => ({
  ...registeredNode(seededNode(position, { seed: 41 }) as never, undefined, position + 1, Date.UTC(2026, 0, 1)),
  Status: 'ready',
}));

function serviceJob(id: string, groupCount: number): Job {
  const job = canonicalJob(serviceJobSpec(id, groupCount), 'default', 'global');
  job.NodePool = 'default';
  return validateJob(job);
}

const requestsFor = (job: Job, groupCount: number): PlacementRequest[] =>
  Array.from({ length: groupCount }, (_, i) => ({ group: 'web', name: `${job.ID}.web[${i}]` }));

interface Run {
  ms: number;
  placed: number;
  evaluated: number;
  failed: number;
}

function runPlacement(job: Job, groupCount: number, seed: string): Run {
  const requests = requestsFor(job, groupCount);
  collectGarbage();
  const started = performance.now();
  const result = place({ nodes, allocs: [] }, job, requests, seed);
  const ms = performance.now() - started;
  let evaluated = 0;
  for (const placement of result.placements) evaluated += placement.metrics.NodesEvaluated;
  for (const metric of Object.values(result.failed)) evaluated += metric.NodesEvaluated;
  const failed = Object.values(result.failed).reduce((sum, metric) => sum + 1 + metric.CoalescedFailures, 0);
  return { ms, placed: result.placements.length, evaluated, failed };
}

/**
 * The baseline: as many node evaluations as placement made, in round-robin order over the shuffled nodes, each
 * only the arithmetic of bin-packing (fit check and score), the best of every `limit` kept and charged.
 */
function bareBinPack(evaluations: number, placements: number, seed: string): number {
  const order = shuffle([...nodes], seededRandom(seed));
  const capacity = order.map(capacityOf);
  const used = order.map(() => ({ cpu: 0, memoryMB: 0, diskMB: 0 }));
  const limit = Math.max(1, Math.round(evaluations / Math.max(1, placements)));
  collectGarbage();
  const started = performance.now();
  let offset = 0;
  for (let done = 0; done < evaluations; ) {
    let best = -1;
    let bestScore = -Infinity;
    for (let k = 0; k < limit && done < evaluations; k++, done++) {
      const i = offset;
      offset = (offset + 1) % order.length;
      const have = used[i] as { cpu: number; memoryMB: number; diskMB: number };
      const cap = capacity[i] as { cpu: number; memoryMB: number; diskMB: number };
      const next = { cpu: have.cpu + 100, memoryMB: have.memoryMB + 256, diskMB: have.diskMB + 300 };
      if (next.cpu > cap.cpu || next.memoryMB > cap.memoryMB || next.diskMB > cap.diskMB) continue;
      const score = binPackFitness(cap, next) / 18;
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    }
    if (best >= 0) {
      const chosen = used[best] as { cpu: number; memoryMB: number; diskMB: number };
      chosen.cpu += 100;
      chosen.memoryMB += 256;
      chosen.diskMB += 300;
    }
  }
  return performance.now() - started;
}

console.log(
  `placement: ${nodeCount} seeded nodes, count ${count} and ${planCount}, ${rounds} round(s); limit per placement ${candidateLimit('service', nodeCount)} (service)`,
);
// Warm-up, untimed: the first calls pay for compiling the code, not for placing.
runPlacement(serviceJob('warm', Math.min(count, 200)), Math.min(count, 200), 'warm-up');
bareBinPack(2000, 200, 'warm-up');
const big: Run[] = [];
const plan: Run[] = [];
const bare: number[] = [];
for (let round = 0; round < rounds; round++) {
  const seed = `bench-eval-${round}`;
  const full = runPlacement(serviceJob('c10k', count), count, seed);
  big.push(full);
  bare.push(bareBinPack(full.evaluated, full.placed, seed));
  plan.push(runPlacement(serviceJob('c1k', planCount), planCount, `${seed}-plan`));
  console.log(
    `  round ${round + 1}: count ${count}: ${full.ms.toFixed(0)} ms, ${full.placed} placed, ${full.failed} failed, ${full.evaluated} nodes evaluated; bare loop ${(bare.at(-1) as number).toFixed(1)} ms; count ${planCount}: ${(plan.at(-1) as Run).ms.toFixed(0)} ms`,
  );
}

const best = big.reduce((a, b) => (b.ms < a.ms ? b : a));
const bestPlan = plan.reduce((a, b) => (b.ms < a.ms ? b : a));
const bestBare = Math.min(...bare);
figure(
  bench,
  'placement: nodes scored/ms',
  best.evaluated / best.ms,
  '—',
  `count ${count} over ${nodeCount} nodes; NodesEvaluated of every placement over the time`,
);
figure(
  bench,
  'placement: placements/s',
  (best.placed / best.ms) * 1000,
  '≥ 1,000/s placed and written (this is placement alone)',
  `count ${count} over ${nodeCount} nodes`,
);
figure(
  bench,
  'placement: plan ms',
  bestPlan.ms,
  '< 1,000 ms at count 1,000',
  `count ${planCount} over ${nodeCount} nodes`,
);
figure(
  bench,
  'placement: time / bare bin-packing loop',
  best.ms / bestBare,
  '—',
  'the same node evaluations, arithmetic only, in the same run',
);
if (best.failed > 0) console.log(`note: ${best.failed} of count ${count} could not be placed`);
