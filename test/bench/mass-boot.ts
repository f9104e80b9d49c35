/**
 * A mass boot on provisioned capacity (issue 40: "registration of 10,000 nodes with no throttling"): what the table
 * `stacks/Storage.ts` makes — provisioned, target tracking at `targetPercent` between `min` and `max` write units
 * (`stacks/stage-config.ts`) — does when every node of a fleet registers at once, second by second, from the write
 * units one boot costs (measured by cluster-cost.bench.ts on DynamoDB Local, which never throttles).
 *
 * The model, AWS's documented behaviour reduced to what matters here:
 * - a second's writes are served up to the provisioned units plus burst capacity (DynamoDB keeps up to 300 s of
 *   unused units); what is beyond is throttled (ProvisionedThroughputExceeded), and the agent tries again after its
 *   backoff (`packages/agent/src/agent.ts`, 1–30 s with jitter), so the demand stays at what the service can take;
 * - the service takes at most `bootsPerSecond` boots (every boot is two commits at the scheduler's one index);
 * - target tracking scales out when two consecutive one-minute averages of consumed units exceed the target, to the
 *   last minute's consumption over the target, taking effect a minute later; it sees consumed units only (a throttled
 *   write consumes none), so while throttled it grows by at most 1/target a step.
 */
export interface MassBootInput {
  nodes: number;
  writeUnitsPerBoot: number;
  /** What the service takes at most (the index's commits a second, two per boot). */
  bootsPerSecond: number;
  /** Write units provisioned when the boot starts (the floor, or what the heartbeats of the fleet keep). */
  startUnits: number;
  /** Autoscaling's bounds and target (0.9 for 90%). */
  minUnits: number;
  maxUnits: number;
  target: number;
}

export interface MassBoot {
  seconds: number;
  /** Boot attempts throttled (each retried by its agent). */
  throttledBoots: number;
  /** The first second at which the table took the service's whole boot rate without burst. */
  caughtUpAtSecond: number | undefined;
  peakUnits: number;
  /** Write units a second the service's boot rate needs. */
  neededUnits: number;
}

/** Simulates the boot second by second (at most a day). */
export function massBoot(input: MassBootInput): MassBoot {
  const needed = input.bootsPerSecond * input.writeUnitsPerBoot;
  let provisioned = Math.max(input.minUnits, input.startUnits);
  let burst = 300 * provisioned;
  let remaining = input.nodes;
  let throttled = 0;
  let caughtUp: number | undefined;
  let peak = provisioned;
  const minutes: number[] = [];
  let minuteUnits = 0;
  let pending: { at: number; units: number } | undefined;
  let second = 0;
  for (; remaining > 0 && second < 86_400; second++) {
    if (pending && second >= pending.at) {
      provisioned = Math.min(input.maxUnits, Math.max(provisioned, pending.units));
      peak = Math.max(peak, provisioned);
      pending = undefined;
    }
    const wanted = Math.min(input.bootsPerSecond, remaining);
    const wantedUnits = wanted * input.writeUnitsPerBoot;
    if (caughtUp === undefined && provisioned >= needed) caughtUp = second;
    const available = provisioned + burst;
    const servedBoots = Math.min(wanted, Math.floor(available / input.writeUnitsPerBoot));
    const used = servedBoots * input.writeUnitsPerBoot;
    burst = Math.min(300 * provisioned, burst - Math.max(0, used - provisioned) + Math.max(0, provisioned - used));
    throttled += wantedUnits > used ? wanted - servedBoots : 0;
    remaining -= servedBoots;
    minuteUnits += used;
    if ((second + 1) % 60 === 0) {
      minutes.push(minuteUnits / 60);
      minuteUnits = 0;
      const [before, last] = minutes.slice(-2);
      if (
        !pending &&
        before !== undefined &&
        last !== undefined &&
        before > input.target * provisioned &&
        last > input.target * provisioned
      )
        pending = { at: second + 60, units: Math.ceil(last / input.target) };
    }
  }
  return {
    seconds: second,
    throttledBoots: throttled,
    caughtUpAtSecond: caughtUp,
    peakUnits: peak,
    neededUnits: needed,
  };
}
