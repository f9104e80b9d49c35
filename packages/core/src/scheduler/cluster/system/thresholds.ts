/**
 * How old a finished object must be before the garbage collection (`gc.ts`) reaps it: Nomad's server settings
 * `job_gc_threshold`, `eval_gc_threshold`, `batch_eval_gc_threshold`, `deployment_gc_threshold` and
 * `node_gc_threshold`, with Nomad's
 * defaults. Operator configuration, never a request field: `npm start` and the sweep function read them from the
 * environment (`KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD`, …, Go durations such as `4h` or `90m`).
 */
import { DurationError, parseGoDuration } from '../../../lib/duration.ts';

/** The thresholds, in milliseconds. */
export interface GcThresholds {
  jobMs: number;
  evalMs: number;
  batchEvalMs: number;
  deploymentMs: number;
  nodeMs: number;
}

const hour = 3_600_000;

/**
 * Nomad's defaults (`nomad/config.go` DefaultConfig): jobs 4h, evaluations 1h, batch evaluations 24h, deployments 1h,
 * down nodes 24h.
 */
export const nomadGcThresholds: GcThresholds = {
  jobMs: 4 * hour,
  evalMs: hour,
  batchEvalMs: 24 * hour,
  deploymentMs: hour,
  nodeMs: 24 * hour,
};

/** What `PUT /v1/system/gc` runs with: every threshold at zero (Nomad's forceGC). */
export const forcedGcThresholds: GcThresholds = { jobMs: 0, evalMs: 0, batchEvalMs: 0, deploymentMs: 0, nodeMs: 0 };

/** The environment variable of each threshold. */
export const gcThresholdVariables: Record<keyof GcThresholds, string> = {
  jobMs: 'KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD',
  evalMs: 'KEYHAVEN_SCHEDULER_EVAL_GC_THRESHOLD',
  batchEvalMs: 'KEYHAVEN_SCHEDULER_BATCH_EVAL_GC_THRESHOLD',
  deploymentMs: 'KEYHAVEN_SCHEDULER_DEPLOYMENT_GC_THRESHOLD',
  nodeMs: 'KEYHAVEN_SCHEDULER_NODE_GC_THRESHOLD',
};

/**
 * The thresholds the environment sets, Nomad's default for each it does not. A value that is not a Go duration
 * throws, naming the variable: a mistyped setting must not silently become the default.
 */
export function gcThresholdsFromEnvironment(env: Record<string, string | undefined>): GcThresholds {
  const thresholds = { ...nomadGcThresholds };
  for (const [field, variable] of Object.entries(gcThresholdVariables) as Array<[keyof GcThresholds, string]>) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    try {
      thresholds[field] = Math.round(parseGoDuration(value) * 1000);
    } catch (error) {
      if (error instanceof DurationError) throw new Error(`${variable} ${error.message}`);
      throw error;
    }
  }
  return thresholds;
}
