/**
 * When the heartbeat sweep runs. EventBridge runs the minute job at most once a minute, but a dead node must be found
 * within Nomad's time (TTL + grace): so the sweep also runs inside heartbeat requests, every S =
 * `sweepPeriodMs(nodes)` (clamp(base TTL / 4, 2.5 s, 60 s)), one sweeper at a time, chosen by a conditional write on
 * one lease item (`NODE_SWEEP_PK` / `lease`): a heartbeat that finds the lease lapsed takes it until now + S and runs
 * the sweep before it answers. Nothing in a request decides the lease: not its length (the server's clock and node
 * count), nor who takes it (the first beat after it lapses, whoever sent it).
 *
 * What it costs: a process remembers until when the lease is held (`notBefore`) and sends nothing before then, so
 * most beats add no read and no write; past it, one conditional write (and, when another process holds the lease,
 * one read of it) per process per period. A lease that claims more than one period from now (a forged item, or one
 * written when the cluster was larger) counts as lapsed. A sweeper that dies mid-way leaves the lease to lapse: each
 * node it reached is down with its event or untouched (`ClusterNodes.markDown` is one conditional transaction each),
 * and the next sweep finishes. A request's sweep marks at most `perRequest` nodes, then hands the lease back, so the
 * next beat continues a mass failure rather than one request carrying it.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../../lib/log.ts';
import { ConditionFailed, type Item } from '../../../storage/store.ts';
import { NODE_SWEEP_LEASE_SK, NODE_SWEEP_PK } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import { type ClusterNodes, sweepPeriodMs } from './store.ts';

export const sweepLeaseKey = { pk: NODE_SWEEP_PK, sk: NODE_SWEEP_LEASE_SK };

/** The lease item: until when it is held (epoch ms), by which process, and how many times it was taken. */
export interface SweepLease extends Item {
  until: number;
  holder: string;
  taken: number;
}

export class NodeSweepLease {
  /** Until when this process knows the lease to be held (epoch ms): no beat before then sends anything. */
  private notBefore = 0;
  /** This process, as the lease names its holder. */
  private readonly holder = randomUUID();

  constructor(
    private readonly state: SchedulerState,
    private readonly nodes: ClusterNodes,
    private readonly log?: Logger,
    /** The most late nodes a heartbeat's sweep marks down before handing the lease on. */
    private readonly perRequest = 16,
  ) {}

  /**
   * From a heartbeat that was accepted: the sweep, when the lease has lapsed and this process takes it; the nodes it
   * marked down. Never throws: a failing sweep is logged and left to the next period (or the minute job), and the
   * beat it rides on has already been written.
   */
  async sweepIfDue(): Promise<string[]> {
    if (this.state.clock.now() < this.notBefore) return [];
    try {
      // The beat's node is registered, whatever this process's cached count says.
      const until = await this.take(Math.max(1, await this.nodes.count()));
      if (until === undefined) return [];
      const { down, more } = await this.nodes.sweepLate(this.perRequest);
      if (more) await this.handBack(until);
      return down;
    } catch (error) {
      this.log?.error('node sweep in a heartbeat failed', { error: String(error) });
      return [];
    }
  }

  /**
   * The minute job (the backstop): takes the lease when it has lapsed, so the heartbeats of the next period do not
   * sweep again, and sweeps every late node whether it took it or not (a stuck or forged lease cannot stop it).
   */
  async sweepNow(): Promise<string[]> {
    // With no node registered there is nothing to sweep and no lease to write.
    const nodes = await this.nodes.count();
    if (nodes > 0) await this.take(nodes);
    return this.nodes.expireMissed();
  }

  /** Takes the lease when it has lapsed: until when it is now held, or undefined when another holds it. */
  private async take(nodes: number): Promise<number | undefined> {
    const now = this.state.clock.now();
    const until = now + sweepPeriodMs(nodes);
    try {
      await this.state.store.update(
        sweepLeaseKey,
        { set: { until, holder: this.holder }, add: { taken: 1 } },
        // Lapsed at `until` itself: a process that read `until` as when to try again must be able to take it then.
        { when: { any: [{ missing: ['until'] }, { atMost: { until: now } }, { above: { until } }] } },
      );
      this.notBefore = until;
      return until;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      const held = await this.state.store.get<SweepLease>(sweepLeaseKey.pk, sweepLeaseKey.sk);
      const heldUntil = Number(held?.until);
      // Held by another: try again when it lapses (never later than one period from now).
      this.notBefore = Number.isFinite(heldUntil) ? Math.min(heldUntil, until) : now;
      return undefined;
    }
  }

  /** Ends the lease this process holds (`until`), so the next beat, here or elsewhere, sweeps on. */
  private async handBack(until: number): Promise<void> {
    this.notBefore = 0;
    try {
      await this.state.store.update(
        sweepLeaseKey,
        { set: { until: this.state.clock.now() - 1 } },
        { when: { equals: { holder: this.holder, until } } },
      );
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }
}
