/**
 * What every bench shares: the list of benches (run by `npm run bench` through run-all.ts, and in smoke mode by
 * benches-smoke.test.ts, which fails when a bench in this folder is missing from the list), the smoke switch, and
 * `figure`, which prints one figure line and, under `npm run bench`, adds it to the run's summary table.
 *
 * Smoke mode (`BENCH_SMOKE=1`): each bench runs its real code paths with tiny counts, in a few seconds, so a bench
 * that breaks fails `npm test`. Its figures are printed but mean nothing and are never asserted.
 */
import { appendFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const smoke = process.env.BENCH_SMOKE === '1';

/** `value` in smoke mode, otherwise `full`; an environment variable named by the bench wins over both. */
export function sized(variable: string, full: number, smokeValue: number): number {
  const given = process.env[variable];
  if (given !== undefined && given !== '') return Number(given);
  return smoke ? smokeValue : full;
}

let fullCollection: (() => void) | undefined;

/**
 * V8's full garbage collection, exposed to this process only (the flag does nothing to code that never asks for it):
 * a bench runs one before each timed part, so that no part pays for the garbage the part before it left.
 */
export function collectGarbage(): void {
  if (!fullCollection) {
    setFlagsFromString('--expose-gc');
    fullCollection = runInNewContext('gc') as () => void;
  }
  fullCollection();
}

export interface BenchEntry {
  /** File name in test/bench/. */
  file: string;
  /** The figures (names given to `figure`) this bench prints on every run, smoke or full. */
  figures: string[];
}

/** Every bench, in the order `npm run bench` runs them. */
export const benches: BenchEntry[] = [
  {
    file: 'key-distribution.bench.ts',
    figures: ['sharded: busiest partition key, workload ops/s at 1,000 w/s'],
  },
  {
    file: 'lease-storm.bench.ts',
    figures: [
      'kv storm: revocations/s',
      'kv storm: leases dropped',
      'read p99 during storm / before',
      'mesh storm: leases dropped',
    ],
  },
  {
    file: 'authenticated-read.bench.ts',
    figures: [
      'kv read, service token, app.request / raw GetItem',
      'kv read, batch token, app.request / raw GetItem',
      'kv read, service token, HTTP / raw GetItem',
      'kv read, batch token, HTTP / raw GetItem',
    ],
  },
  {
    file: 'jwt-login.bench.ts',
    figures: [
      'RS256 service login CPU / floor (verify + raw TransactWriteItems)',
      'ES256 service login CPU / floor (verify + raw TransactWriteItems)',
      'RS256 service login CPU / bare verify',
      'ES256 service login CPU / bare verify',
      'RS256 batch login CPU / bare verify (Lambda adapter)',
      'ES256 batch login CPU / bare verify (Lambda adapter)',
    ],
  },
  {
    file: 'ldap.bench.ts',
    figures: [
      'ldap static-cred reads/s',
      'ldap verification binds/s',
      'ldap dynamic creds issue+revoke/s',
      'ldap library check-out+in/s',
    ],
  },
  {
    file: 'dynamodb-local-kill.bench.ts',
    figures: ['acknowledged transactions lost on SIGKILL', 'acknowledged PutItems lost on SIGKILL'],
  },
  { file: 'mesh-creds.bench.ts', figures: ['mesh creds issue+revoke/s'] },
  {
    file: 'cloud-tokens.bench.ts',
    figures: ['cloud roleset tokens (cached)/s', 'cloud JWT-bearer mint (uncached)/s', 'cloud key issue+revoke/s'],
  },
  {
    file: 'event-stream.bench.ts',
    figures: ['event stream delivered / expected', 'event stream delivery p99 ms'],
  },
  {
    file: 'stream-cost.bench.ts',
    figures: ['idle subscriber table reads/min', 'idle subscriber-month at 128 MB, arm64 $'],
  },
  {
    file: 'cluster-cost.bench.ts',
    figures: [
      'heartbeat write units per beat',
      'registration: busiest partition key share',
      'node boots/s before a partition key reaches 1,000 WU/s',
      '10,000 nodes $/month with held allocation polls (before)',
      '10,000 nodes $/month before',
      '10,000 nodes $/month as built',
      '100 nodes $/month with held allocation polls (before)',
      '100 nodes $/month before',
      '100 nodes $/month as built',
      '100 nodes worst failure detection s, before / Nomad',
      '100 nodes worst failure detection s, as built / Nomad',
      "the sweep's lease taken per beat",
      'mass boot of 10,000 from the provisioned floor: minutes',
    ],
  },
  {
    file: 'placement.bench.ts',
    figures: [
      'placement: nodes scored/ms',
      'placement: placements/s',
      'placement: plan ms',
      'placement: time / bare bin-packing loop',
    ],
  },
  {
    file: 'plan-apply.bench.ts',
    figures: [
      'plan apply: allocations placed and written/s',
      'plan apply: raw BatchWriteItem allocations/s',
      'plan apply / raw BatchWriteItem',
      'job plan ms',
      'job plan ms, first call',
      'job plan DynamoDB requests, warm',
    ],
  },
  {
    file: 'deployment-sweep.bench.ts',
    figures: [
      'first sweep after placement: ms per deployment',
      'first sweep after placement: DynamoDB calls per deployment',
      'idle sweep: ms in all',
      'idle sweep: DynamoDB calls in all',
      'idle sweep: read units in all',
    ],
  },
  {
    file: 'gc.bench.ts',
    figures: [
      'gc: terminal jobs reaped/s',
      'gc: raw BatchWriteItem jobs deleted/s',
      'gc / raw BatchWriteItem',
      'gc: DynamoDB calls per job',
      'gc: write units per job',
      'gc: read units per job',
      'PUT /v1/system/gc answer ms',
    ],
  },
  {
    file: 'bundles.bench.ts',
    figures: ['largest module-init p50 ms', 'largest bundle gzip kB', 'largest gzip kB loaded at init'],
  },
];

export interface Figure {
  bench: string;
  name: string;
  value: number;
  goal: string;
  note?: string;
}

/** The line a figure prints as (benches-smoke.test.ts looks for it). */
export const figureLine = (name: string, value: number, goal: string, note = '') =>
  `figure: ${name} = ${formatValue(value)} (goal: ${goal})${note ? `; ${note}` : ''}`;

export const formatValue = (value: number) =>
  Number.isInteger(value) ? String(value) : Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(2);

/**
 * Prints one figure; under run-all.ts (`BENCH_SUMMARY` names a file) also records it for the summary table. `goal`
 * is the goal from issue 28 (or the earlier issue named in it), `—` where none was set.
 */
export function figure(bench: string, name: string, value: number, goal: string, note?: string): void {
  console.log(figureLine(name, value, goal, note));
  const file = process.env.BENCH_SUMMARY;
  if (file)
    appendFileSync(
      file,
      `${JSON.stringify({ bench, name, value, goal, ...(note ? { note } : {}) } satisfies Figure)}\n`,
    );
}
