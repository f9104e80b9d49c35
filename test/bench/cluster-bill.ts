/**
 * The cluster's monthly bill, from what one heartbeat, one registration and one sweep cost (measured by
 * cluster-cost.bench.ts) and Nomad's heartbeat arithmetic, at AWS's published us-east-1 prices (November 2026; the
 * free tiers are left out). docs/performance.md explains each line.
 */

/** AWS us-east-1 list prices (USD). */
export const prices = {
  /** DynamoDB on demand, per million request units (after the November 2024 cut). */
  writeRequestUnit: 0.625 / 1e6,
  readRequestUnit: 0.125 / 1e6,
  /** DynamoDB provisioned, per capacity unit-hour. */
  writeCapacityUnitHour: 0.00065,
  readCapacityUnitHour: 0.00013,
  /** DynamoDB storage and continuous backups (point-in-time recovery), per GB-month. */
  storageGbMonth: 0.25,
  backupGbMonth: 0.2,
  /** Lambda, per request and per GB-second on arm64 (the stacks' architecture). */
  lambdaRequest: 0.2 / 1e6,
  lambdaArmGbSecond: 0.0000133334,
  /** API Gateway HTTP API, per request (first 300 million a month). A Lambda function URL costs nothing more. */
  httpApiRequest: 1.0 / 1e6,
  /** CloudFront HTTPS requests (North America and Europe), $0.0100 per 10,000. */
  cloudFrontRequest: 0.01 / 1e4,
  /** CloudWatch Logs ingestion, per GB. */
  logsIngestGb: 0.5,
} as const;

export const secondsPerMonth = 30.4375 * 86_400;
const hoursPerMonth = secondsPerMonth / 3600;

/** Nomad's heartbeat settings: `min_heartbeat_ttl`, `max_heartbeats_per_second`, `heartbeat_grace`. */
export const nomadHeartbeat = { minTtlSeconds: 10, maxPerSecond: 50, graceSeconds: 10 } as const;

/** Nomad's base TTL for `nodes`: the TTL handed out is this plus a stagger drawn from [0, base). */
export const baseTtlSeconds = (nodes: number) =>
  Math.max(nomadHeartbeat.minTtlSeconds, nodes / nomadHeartbeat.maxPerSecond);

/** Heartbeats a second from `nodes`, each beating after a TTL drawn from [base, base + stagger·base). */
export const beatsPerSecond = (nodes: number, staggerShare = 1) =>
  nodes / (baseTtlSeconds(nodes) * (1 + staggerShare / 2));

/**
 * The longest a dead node stays `ready`: its last beat's TTL (at most base + stagger) plus the grace, plus, where a
 * sweep finds it rather than a timer, up to one sweep period.
 */
export const worstDetectionSeconds = (nodes: number, sweepPeriodSeconds: number, staggerShare = 1) =>
  baseTtlSeconds(nodes) * (1 + staggerShare) + nomadHeartbeat.graceSeconds + sweepPeriodSeconds;

/** What the bench measured, per operation. */
export interface MeasuredCosts {
  heartbeat: { readUnits: number; writeUnits: number; dynamoCalls: number };
  registration: { readUnits: number; writeUnits: number; dynamoCalls: number; requests: number };
  /**
   * One sweep that finds nothing late: its read units per registered node (eventually consistent), its fixed part,
   * and its writes (the lease, when a heartbeat runs it).
   */
  sweep: { readUnitsPerNode: number; fixedReadUnits: number; writeUnits: number; dynamoCalls: number };
  /** The rest of the minute's sweep job (expired ACL tokens, the event buffer's oldest page): read units a run. */
  minuteJobReadUnits: number;
  /** One blocking allocation poll: table reads per second it waits. */
  allocationPollReadsPerSecond: number;
  /** Bytes stored per node (node item, beat item, its share of events). */
  bytesPerNode: number;
  /** Process CPU per heartbeat request in this bench (server and simulated client in one process: an upper bound). */
  cpuMsPerRequest: number;
}

export interface Design {
  name: string;
  capacity: 'on-demand' | 'provisioned';
  /** Provisioned capacity's target utilisation (DynamoDB autoscaling allows 20–90%). */
  targetUtilisation: number;
  /** What the agents' requests pass before the function (`CloudFront + HTTP API`: `{scheduler_url}`). */
  front: 'function URL' | 'HTTP API' | 'CloudFront + HTTP API';
  /** How often the sweep looks for late nodes at this cluster size (s). */
  sweepPeriodSeconds: (nodes: number) => number;
  /** The share of base TTL the stagger may add ([0, share·base)) at this size; Nomad's is 1. */
  staggerShare: (nodes: number) => number;
  /** Whether each agent holds a blocking allocation poll open on Lambda (the protocol before `AllocIndex`). */
  blockingAllocPolls: boolean;
  /** Lambda memory (MB) of the function that answers the client protocol. */
  memoryMb: number;
  /** Whether Lambda writes its START/END/REPORT lines (off with JSON logs at system log level WARN). */
  platformLogs: boolean;
  /** Whether heartbeats run the sweep every period (its lease); the minute job then sweeps besides, as the backstop. */
  sweepInRequests?: boolean;
}

export interface BillLine {
  item: string;
  dollars: number;
}

/** Billed milliseconds of one request: its CPU plus its DynamoDB round trips at `roundTripMs` each (in-region). */
const billedMs = (cpuMs: number, dynamoCalls: number, roundTripMs = 5) =>
  Math.max(1, Math.ceil(cpuMs + dynamoCalls * roundTripMs));

/** Provisioned units for an average rate at the target utilisation (at least 1). */
const provisioned = (unitsPerSecond: number, target: number) => Math.max(1, Math.ceil(unitsPerSecond / target));

export function monthlyBill(nodes: number, design: Design, costs: MeasuredCosts): { lines: BillLine[]; total: number } {
  const stagger = design.staggerShare(nodes);
  const beats = beatsPerSecond(nodes, stagger);
  const sweepPeriod = design.sweepPeriodSeconds(nodes);
  // Sweeps a second: every period inside heartbeats, plus (as an upper bound) the minute job's, which sweeps regardless.
  const sweeps = design.sweepInRequests ? 1 / sweepPeriod + 1 / 60 : 1 / sweepPeriod;
  const gb = design.memoryMb / 1024;
  const lines: BillLine[] = [];
  const add = (item: string, dollars: number) => lines.push({ item, dollars });

  // Requests: heartbeats, and (with held polls) one blocking allocation poll per node every 30 s. Without them an
  // allocation read follows only a change of the node's allocations (none at steady state: part 1 has no jobs).
  const polls = design.blockingAllocPolls ? nodes / 30 : 0;
  const requests = (beats + polls) * secondsPerMonth;
  // The scheduled sweep runs once a minute (EventBridge's finest rate); a shorter period runs inside heartbeats.
  const sweepInvocations = secondsPerMonth / 60;
  add('Lambda requests (heartbeats, polls, sweeps)', (requests + sweepInvocations) * prices.lambdaRequest);
  const beatSeconds = (billedMs(costs.cpuMsPerRequest, costs.heartbeat.dynamoCalls) / 1000) * beats * secondsPerMonth;
  const sweepSeconds = (billedMs(costs.cpuMsPerRequest, costs.sweep.dynamoCalls) / 1000) * sweeps * secondsPerMonth;
  add('Lambda duration: heartbeats and sweeps', (beatSeconds + sweepSeconds) * gb * prices.lambdaArmGbSecond);
  if (design.blockingAllocPolls)
    add(
      'Lambda duration: blocking allocation polls held open',
      nodes * secondsPerMonth * gb * prices.lambdaArmGbSecond,
    );
  if (design.front !== 'function URL') add('API Gateway HTTP API requests', requests * prices.httpApiRequest);
  if (design.front === 'CloudFront + HTTP API') add('CloudFront requests', requests * prices.cloudFrontRequest);
  if (design.platformLogs)
    add(
      'CloudWatch Logs (Lambda platform lines, ~0.3 kB an invocation)',
      ((requests + sweepInvocations) * 300 * prices.logsIngestGb) / 1e9,
    );

  // DynamoDB.
  const writeUnitsPerSecond = beats * costs.heartbeat.writeUnits + sweeps * costs.sweep.writeUnits;
  const readUnitsPerSecond =
    beats * costs.heartbeat.readUnits +
    sweeps * (costs.sweep.fixedReadUnits + costs.sweep.readUnitsPerNode * nodes) +
    costs.minuteJobReadUnits / 60 +
    polls * 30 * costs.allocationPollReadsPerSecond;
  if (design.capacity === 'on-demand') {
    add('DynamoDB writes (on demand)', writeUnitsPerSecond * secondsPerMonth * prices.writeRequestUnit);
    add('DynamoDB reads (on demand)', readUnitsPerSecond * secondsPerMonth * prices.readRequestUnit);
  } else {
    const target = `provisioned, ${Math.round(design.targetUtilisation * 100)}% target`;
    add(
      `DynamoDB write capacity (${target})`,
      provisioned(writeUnitsPerSecond, design.targetUtilisation) * hoursPerMonth * prices.writeCapacityUnitHour,
    );
    add(
      `DynamoDB read capacity (${target})`,
      provisioned(readUnitsPerSecond, design.targetUtilisation) * hoursPerMonth * prices.readCapacityUnitHour,
    );
    // The `due` index has capacity of its own; no beat or sweep writes it, so it stays at its floor (1 and 1).
    add(
      'DynamoDB index capacity floor (1 read, 1 write unit)',
      hoursPerMonth * (prices.readCapacityUnitHour + prices.writeCapacityUnitHour),
    );
  }
  const gigabytes = (nodes * costs.bytesPerNode) / 1e9;
  add('DynamoDB storage and point-in-time recovery', gigabytes * (prices.storageGbMonth + prices.backupGbMonth));
  const total = lines.reduce((sum, line) => sum + line.dollars, 0);
  return { lines, total };
}

/** S = clamp(base / 4, 2.5 s, 60 s): the node sweep's period (`cluster/nodes/store.ts`, `sweepPeriodMs`). */
export const sweepPeriodSeconds = (nodes: number) => Math.min(60, Math.max(2.5, baseTtlSeconds(nodes) / 4));

/**
 * As built (issue 40): the sweep every S inside heartbeats (one at a time, by a conditional lease; the minute job the
 * backstop), the stagger cut to [0, base − S) so the worst detection is exactly Nomad's 2·base + grace, the allocation
 * index on the heartbeat answer (no held polls), provisioned capacity with autoscaling at 90%, the client protocol on
 * its own 128 MB function behind its Function URL, no platform log lines.
 */
export const asBuilt: Design = {
  name: 'as built: provisioned 90%, Function URL 128 MB, sweep every clamp(base/4, 2.5, 60) s in heartbeats, stagger [0, base − sweep), allocation index on the heartbeat, no platform logs',
  capacity: 'provisioned',
  targetUtilisation: 0.9,
  front: 'function URL',
  sweepPeriodSeconds,
  staggerShare: (nodes) => 1 - sweepPeriodSeconds(nodes) / baseTtlSeconds(nodes),
  blockingAllocPolls: false,
  memoryMb: 128,
  platformLogs: false,
  sweepInRequests: true,
};

/**
 * Before issue 40's cost work: Nomad's stagger, the sweep once a minute (EventBridge), on demand, the agents through
 * `{scheduler_url}` (CloudFront, the HTTP API, the 512 MB API function), platform log lines; the allocation index
 * already on the heartbeat.
 */
export const previous: Design = {
  name: 'before: on demand, CloudFront + HTTP API to the 512 MB API function, sweep every minute, allocation index on the heartbeat, platform logs',
  capacity: 'on-demand',
  targetUtilisation: 1,
  front: 'CloudFront + HTTP API',
  sweepPeriodSeconds: () => 60,
  staggerShare: () => 1,
  blockingAllocPolls: false,
  memoryMb: 512,
  platformLogs: true,
};

/** Earlier still: every agent held a blocking allocation poll open. */
export const withBlockingPolls: Design = {
  ...previous,
  name: 'before AllocIndex (each agent holding a blocking allocation poll): on demand, CloudFront + HTTP API, sweep every minute, platform logs',
  blockingAllocPolls: true,
};
