/**
 * Cluster nodes in the table. Two items per node, both sharded 16 ways by the node ID (`storage/due.ts`), so neither
 * registrations nor heartbeats of 10,000 nodes land on one partition:
 *
 * - the node (`NODE_PK`): the whole `Node`, its `SecretID` removed, authenticated (`storage/item-mac.ts`);
 * - its beat (`NODE_BEAT_PK`): the keyed hash of its `SecretID`, its status and pool, the index of its last
 *   registration or status change (authenticated), and its heartbeat `deadline` (epoch ms; outside the MAC, it is
 *   what a heartbeat rewrites).
 *
 * Every change of a node is one `SchedulerState.commit` (one index, its events in the same transaction) that writes
 * the node, and its beat when the status or the secret changes. A heartbeat that changes nothing is one conditional
 * update of the beat's deadline (no index, no event): the condition (same status, same secret) fails when there is
 * something to change, and the heartbeat then takes the committed path. Missed heartbeats are found by the sweep
 * (`expireMissed`): each late node is marked `down` in its own transaction, conditional on its deadline still being
 * past, so concurrent sweeps and a heartbeat racing the sweep leave each node either alive or down with its one event.
 */
import { MarkedItems } from '../../../storage/marked-items.ts';
import { badRequest, DomainError, notFound } from '../../../lib/errors.ts';
import { shardCount, shardKey } from '../../../storage/due.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import { ConditionFailed, type Item, type Key, type Write } from '../../../storage/store.ts';
import { unchangedSince, withoutKeys } from '../../acl/common.ts';
import { allocNodePk, META_PK, NODE_BEAT_PK, NODE_COUNT_SK, NODE_PK } from '../../keys.ts';
import {
  allocItemsIndexAttribute,
  beatKey,
  beatKind,
  marksOverflow,
  nodeItemIndexAttribute,
} from '../../beat-marks.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import type { NodePools } from '../node-pools/store.ts';
import { CapacityLog, nodeMadeRoom } from './capacity.ts';
import {
  appendEvents,
  type ClientEvent,
  type ClientNode,
  type ClusterNode,
  type DrainMetadata,
  type DrainStrategy,
  type Eligibility,
  type NodeStatus,
  nodeEvent,
  nodeMessages,
  nodeStub,
  nodeTopicEvent,
  registeredNode,
  validateClientNode,
  validUuid,
  zeroTime,
} from './model.ts';

/** A node item is authenticated whole: a forged, moved or MAC-less one does not exist. */
export const nodeKind = itemKind('scheduler-node');
/** A beat item is authenticated but for its deadline, which heartbeats rewrite without the keyring. */
export { beatKind };

/** Nomad's heartbeat settings (`min_heartbeat_ttl`, `max_heartbeats_per_second`, `heartbeat_grace`). */
export const heartbeatSettings = { minTtlMs: 10_000, maxPerSecond: 50, graceMs: 10_000 };
/** Nomad's base heartbeat TTL for `nodes` (ms): max(`min_heartbeat_ttl`, nodes / `max_heartbeats_per_second`). */
export const baseTtlMs = (nodes: number): number =>
  Math.max(heartbeatSettings.minTtlMs, (nodes / heartbeatSettings.maxPerSecond) * 1000);
/**
 * How often the node sweep runs at this size (ms): clamp(base / 4, 2.5 s, 60 s), inside heartbeats (`sweep-lease.ts`;
 * the minute job is the backstop). The stagger is what the period leaves of Nomad's ([0, base − S)): a shorter period
 * means longer TTLs and fewer beats, for one lease write and one sweep's reads a period (docs/performance.md: at 100
 * nodes, 2.5 s costs $0.79 a month less than 5 s).
 */
export const sweepPeriodMs = (nodes: number): number => Math.min(60_000, Math.max(2_500, baseTtlMs(nodes) / 4));
/** How long a process trusts the node count it read (the TTL is an estimate by design: Nomad's counts timers). */
const countCacheMs = 30_000;
/** Nomad's `DefaultNodePoolNodeIdentityTTL`, in nanoseconds as pools hold it. */
const defaultIdentityTtlNs = 24 * 3600 * 1e9;
/** Nomad's force drain (`nomad node drain -force`): a deadline of -1s. */
const forceDeadlineNs = -1e9;

export interface NodeBeat extends Item {
  secretHash: string;
  status: NodeStatus;
  pool: string;
  datacenter: string;
  nodeClass: string;
  /** The index of the node's last registration or status change. */
  modifyIndex: number;
  deadline: number;
  /**
   * The index of the last write that changed this node's allocations (the cluster's second part sets it in that
   * write) or whether it takes new ones (a drain, an eligibility change); absent is 0. The register and heartbeat answers carry it as `AllocIndex`, so the agent reads its
   * allocation map only when it moved instead of holding a blocking poll.
   */
  allocIndex?: number;
  /**
   * The index of the last write that changed any allocation item in the node's partition, a client's report among
   * them (`scheduler/beat-marks.ts`, which every commit applies); a registration that creates the beat starts it at
   * its own index. The snapshot reads the node's allocations again only when it moved.
   */
  allocItemsIndex?: number;
  /**
   * The index of the last write of the node's item (`scheduler/beat-marks.ts`): the snapshot reads the node again only
   * when it moved.
   */
  nodeItemIndex?: number;
}

/** What a node presented: its secret (hashed) or a verified identity (nothing more to check). */
export type NodeCredential = { secretHash: string } | { identity: true };

/** A heartbeat's outcome. */
export interface BeatResult {
  /** The index the answer carries: the write's, or the node's last status change. */
  index: number;
  /** The write's index, when there was one. */
  written?: number;
  /** The node's allocation index (`NodeBeat.allocIndex`, 0 when absent). */
  allocIndex: number;
  node?: ClusterNode;
  ttlMs: number;
  pool: string;
}

export interface DrainRequest {
  spec: { Deadline: number; IgnoreSystemJobs: boolean } | null;
  markEligible: boolean;
  meta: Record<string, string> | null;
  accessorId: string;
}

const denied = (message = 'Permission denied') => new DomainError('denied', message);

/** What a node's change writes besides the node: the evaluations of the jobs on it (`Allocations.nodeEvaluations`). */
export type NodeEvaluations = (
  node: ClusterNode,
  index: number,
  trigger: 'node-update' | 'node-drain',
) => Promise<{ items: Write[]; events: PendingEvent[]; tables: TableName[] }>;

/** The most nodes `snapshot` holds verified between reads. */
const heldNodes = 20_000;

/** What the scheduler's snapshot reads of the nodes: every node, and every node's beat. */
export interface NodesSnapshot {
  /** Every node with a verified beat, sorted by ID (frozen). */
  nodes: ClusterNode[];
  /** Every verified beat, by node ID, read before the nodes. */
  beats: Map<string, NodeBeat>;
  /** The overflow mark, read before the beats (`scheduler/beat-marks.ts` `marksOverflow`). */
  overflow: number;
}

export class ClusterNodes {
  private counted: { value: number; at: number } | undefined;
  private held: MarkedItems<ClusterNode> | undefined;
  private overflowSeen: number | undefined;
  private evaluations: NodeEvaluations | undefined;

  constructor(
    private readonly state: SchedulerState,
    private readonly pools: NodePools,
    /** The keyed hash a node's secret is stored and compared as (bound to the node's ID: a moved beat matches no other node). */
    readonly secretHash: (id: string, secret: string) => string,
    private readonly random: () => number = Math.random,
  ) {
    // A pool with nodes in it cannot be deleted; a pool's node list is its nodes' stubs (every node for `all`).
    pools.addUsageCheck(async (pool) =>
      (await this.list()).some((node) => node.NodePool === pool)
        ? `node pool ${JSON.stringify(pool)} has nodes`
        : undefined,
    );
    pools.listMembersWith(async (pool) =>
      (await this.list()).filter((node) => pool === 'all' || node.NodePool === pool).map((node) => nodeStub(node)),
    );
  }

  private get store() {
    return this.state.store;
  }

  /**
   * Has the writes that mark a node down, make it ready or start its drain also create the evaluations of the jobs
   * on it (Nomad's createNodeEvals, `node-update`, with its system jobs when it becomes ready; its drainer's
   * `node-drain`), in the same transaction.
   */
  evaluateNodesWith(evaluations: NodeEvaluations): void {
    this.evaluations = evaluations;
  }

  static nodeKey = (id: string): Key => ({ pk: shardKey(NODE_PK, id), sk: id });
  static beatKey = beatKey;

  /** The node of that ID (an ID that is not a UUID finds none). */
  async get(id: string): Promise<ClusterNode | undefined> {
    if (!validUuid.test(id)) return undefined;
    const key = ClusterNodes.nodeKey(id);
    return withoutKeys<ClusterNode>(await this.store.getVerified(nodeKind, key.pk, key.sk));
  }

  /** The node's beat item, verified. */
  async beat(id: string): Promise<NodeBeat | undefined> {
    if (!validUuid.test(id)) return undefined;
    const key = ClusterNodes.beatKey(id);
    return this.store.getVerified<NodeBeat>(beatKind, key.pk, key.sk);
  }

  /** The beat items of these nodes, verified, by node ID: batch reads of 100, a few at once (plan apply's). */
  async beats(ids: string[]): Promise<Map<string, NodeBeat>> {
    const keys = [...new Set(ids)].filter((id) => validUuid.test(id)).map((id) => ClusterNodes.beatKey(id));
    const chunks: Key[][] = [];
    for (let start = 0; start < keys.length; start += 100) chunks.push(keys.slice(start, start + 100));
    const found = new Map<string, NodeBeat>();
    for (let start = 0; start < chunks.length; start += 8) {
      const read = await Promise.all(chunks.slice(start, start + 8).map((chunk) => this.store.batchGet(chunk)));
      for (const items of read)
        for (const item of items.values()) {
          const beat = this.store.verified(beatKind, item as NodeBeat);
          if (beat) found.set(beat.sk, beat);
        }
    }
    return found;
  }

  /** Every node whose ID starts with `prefix` and is at least `from`, sorted by ID (each shard read, then merged). */
  async list(options: { prefix?: string; from?: string } = {}): Promise<ClusterNode[]> {
    const pages = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.store.list(`${NODE_PK}#${String(shard).padStart(2, '0')}`, {
          ...(options.from ? { range: { from: options.from } } : options.prefix ? { prefix: options.prefix } : {}),
        }),
      ),
    );
    return pages
      .flat()
      .filter((item) => this.store.verified(nodeKind, item))
      .map((item) => withoutKeys<ClusterNode>(item) as ClusterNode)
      .filter((node) => node.ID.startsWith(options.prefix ?? ''))
      .sort((a, b) => (a.ID < b.ID ? -1 : 1));
  }

  /**
   * Every beat (the 16 shards of small items, strongly consistent), then every node that has one, through verified
   * nodes held from earlier reads (`storage/marked-items.ts`): a node is read whole (batch reads) only when its beat's
   * node mark (`nodeItemIndex`, moved by every write of the node, `scheduler/beat-marks.ts`) is not the one it is held
   * under. For the scheduler's snapshot (`worker/decide.ts`), read on every evaluation and plan: over unchanged nodes,
   * 16 Queries. A node without a verified beat is left out (plan apply places nothing on one either).
   */
  async snapshot(): Promise<NodesSnapshot> {
    this.held ??= new MarkedItems(
      () => this.store,
      nodeKind,
      (item) => withoutKeys<ClusterNode>(item) as ClusterNode,
      heldNodes,
    );
    // A write whose marks did not fit its transaction moved the overflow mark instead: no held node is trusted then.
    const overflow = await marksOverflow(this.store);
    if (this.overflowSeen !== undefined && this.overflowSeen !== overflow) this.held.forget();
    this.overflowSeen = overflow;
    const shards = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.store.list<NodeBeat>(`${NODE_BEAT_PK}#${String(shard).padStart(2, '0')}`),
      ),
    );
    const beats = new Map<string, NodeBeat>();
    for (const item of shards.flat()) {
      const beat = this.store.verified(beatKind, item);
      if (beat) beats.set(beat.sk, beat);
    }
    const nodes = await this.held.get(
      [...beats.values()].map((beat) => ({ key: ClusterNodes.nodeKey(beat.sk), mark: beat.nodeItemIndex })),
    );
    return { nodes: nodes.sort((a, b) => (a.ID < b.ID ? -1 : 1)), beats, overflow };
  }

  /** The registered nodes, as counted by registration and purge (read at most every 30 s per process). */
  async count(): Promise<number> {
    const now = this.state.clock.now();
    if (!this.counted || now - this.counted.at >= countCacheMs || now < this.counted.at) {
      const item = await this.store.get(META_PK, NODE_COUNT_SK);
      this.counted = { value: Math.max(0, Number(item?.value ?? 0)), at: now };
    }
    return this.counted.value;
  }

  /**
   * Nomad's heartbeat TTL, base max(10 s, nodes / 50 per second), plus a random stagger in [0, base − S), S the sweep
   * period (`sweepPeriodMs`): Nomad's stagger is [0, base), and a sweep finds a dead node up to S after its deadline,
   * so the worst detection, 2·base + grace, stays Nomad's.
   */
  async heartbeatTtlMs(): Promise<number> {
    const nodes = await this.count();
    const base = baseTtlMs(nodes);
    return Math.floor(base + this.random() * (base - sweepPeriodMs(nodes)));
  }

  /**
   * Registers a node (Nomad's `Node.Register`). `admit` decides, inside the write, whether the caller may register
   * this node given what is stored (its beat, or none for a new node) and throws when not. A known node must present
   * its own secret; its status, eligibility, drain and events are kept. A missing pool is created in the same write.
   */
  async register(
    input: ClientNode,
    admit: (beat: NodeBeat | undefined) => void,
  ): Promise<{ node: ClusterNode; index: number; ttlMs: number; identityTtlMs: number; allocIndex: number }> {
    validateClientNode(input);
    const id = input.ID as string;
    const secretHash = this.secretHash(id, input.SecretID as string);
    const ttlMs = await this.heartbeatTtlMs();
    let node: ClusterNode | undefined;
    let identityTtlMs = defaultIdentityTtlNs / 1e6;
    let allocIndex = 0;
    const index = await this.commitOrExplain(async (index) => {
      const now = this.state.clock.now();
      const beat = await this.beat(id);
      admit(beat);
      if (beat && beat.secretHash !== secretHash) throw denied('node secret ID does not match. Not registering node.');
      // A node new to the beat items (first registration, or again after a purge) starts at version 0, unless
      // allocations of its earlier life are still in its partition: then at this write's index, so that an
      // evaluation's snapshot, which skips the allocation read of nodes at version 0 (`worker/decide.ts`), reads them.
      allocIndex = beat?.allocIndex ?? ((await this.store.list(allocNodePk(id), { limit: 1 })).length > 0 ? index : 0);
      const existing = beat ? await this.get(id) : undefined;
      node = registeredNode(input, existing, index, now);
      const { pool, creation } = await this.pools.ensureWrite(node.NodePool, index);
      identityTtlMs = pool.NodeIdentityTTL > 0 ? pool.NodeIdentityTTL / 1e6 : defaultIdentityTtlNs / 1e6;
      return {
        items: [
          ...(creation?.items ?? []),
          this.nodeWrite(node, existing),
          {
            put: this.beatItem(
              node,
              secretHash,
              index,
              now + ttlMs + heartbeatSettings.graceMs,
              allocIndex,
              beat ? beat.allocItemsIndex : index,
            ),
            when: beat ? { equals: { mac: beat.mac } } : { absent: true },
          },
          ...(beat ? [] : [{ update: { pk: META_PK, sk: NODE_COUNT_SK }, change: { add: { value: 1 } } }]),
          ...this.roomMade(existing, node, index),
        ],
        tables: ['nodes', ...(creation?.tables ?? [])],
        events: [...(creation?.events ?? []), nodeTopicEvent('NodeRegistration', node)],
      };
    });
    return { node: node as ClusterNode, index: index as number, ttlMs, identityTtlMs, allocIndex };
  }

  /**
   * A heartbeat (Nomad's `Node.UpdateStatus` from the node): `status` is what the node reports (`initializing` or
   * `ready`), `event` a node event it attaches. Nothing to change: the deadline alone moves. Otherwise one write:
   * a `down` node comes back `initializing` (event `Node reregistered by heartbeat`), else the status reported.
   */
  async heartbeat(
    id: string,
    credential: NodeCredential,
    status: 'initializing' | 'ready',
    event: ClientEvent | undefined,
  ): Promise<BeatResult> {
    const ttlMs = await this.heartbeatTtlMs();
    if (!event) {
      const deadlineOnly = await this.moveDeadline(id, credential, status, ttlMs);
      if (deadlineOnly) return deadlineOnly;
    }
    let result: BeatResult | undefined;
    const index = await this.commitOrExplain(async (index) => {
      const now = this.state.clock.now();
      const beat = await this.authenticated(id, credential);
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      const next: NodeStatus = node.Status === 'down' || node.Status === 'disconnected' ? 'initializing' : status;
      const added = event
        ? [
            nodeEvent(
              event.Message,
              event.Subsystem ?? '',
              clientTime(event.Timestamp, now),
              index,
              event.Details ?? null,
            ),
          ]
        : node.Status === 'down'
          ? [nodeEvent(nodeMessages.reregisteredByHeartbeat, 'Cluster', now, index)]
          : [];
      if (next === node.Status && added.length === 0) {
        result = { index: beat.modifyIndex, ttlMs, pool: beat.pool, allocIndex: beat.allocIndex ?? 0 };
        return undefined;
      }
      const updated: ClusterNode = {
        ...node,
        Status: next,
        StatusUpdatedAt: Math.floor(now / 1000),
        Events: appendEvents(node, added),
        LastMissedHeartbeatIndex: next === 'ready' ? 0 : node.LastMissedHeartbeatIndex,
        ModifyIndex: index,
      };
      result = { index, written: index, node: updated, ttlMs, pool: beat.pool, allocIndex: beat.allocIndex ?? 0 };
      // A node that becomes ready can take work: its system jobs and the jobs on it are evaluated (Nomad's
      // createNodeEvals on a transition to ready), in the same write.
      const evaluations =
        next === 'ready' && node.Status !== 'ready'
          ? await this.evaluations?.(updated, index, 'node-update')
          : undefined;
      return {
        items: [
          this.nodeWrite(updated, node),
          {
            put: this.beatItem(
              updated,
              beat.secretHash,
              index,
              now + ttlMs + heartbeatSettings.graceMs,
              beat.allocIndex,
              beat.allocItemsIndex,
            ),
            when: { equals: { mac: beat.mac } },
          },
          ...this.roomMade(node, updated, index),
          ...(evaluations?.items ?? []),
        ],
        tables: ['nodes', ...(evaluations?.tables ?? [])],
        events: [nodeTopicEvent('NodeStreamEvent', updated), ...(evaluations?.events ?? [])],
      };
    });
    if (index === undefined) {
      // Nothing changed after all (a racing beat made the change): the deadline still moves.
      await this.moveDeadline(id, credential, (result as BeatResult).node?.Status ?? status, ttlMs);
    }
    return result as BeatResult;
  }

  /** The deadline of a node whose stored status is `status` and whose secret matches, moved; undefined otherwise. */
  private async moveDeadline(
    id: string,
    credential: NodeCredential,
    status: NodeStatus,
    ttlMs: number,
  ): Promise<BeatResult | undefined> {
    if (!validUuid.test(id)) return undefined;
    try {
      const after = await this.store.update<NodeBeat>(
        ClusterNodes.beatKey(id),
        { set: { deadline: this.state.clock.now() + ttlMs + heartbeatSettings.graceMs } },
        { when: { equals: { status, ...('secretHash' in credential ? { secretHash: credential.secretHash } : {}) } } },
      );
      // An item without the keyring's MAC (a table writer's) answers nothing: the full path then finds no node.
      if (!this.store.verified(beatKind, after)) return undefined;
      return { index: after.modifyIndex, ttlMs, pool: after.pool, allocIndex: after.allocIndex ?? 0 };
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
  }

  /** The node's beat when the credential is its own; 404 for an unknown node, 403 for another's secret. */
  async authenticated(id: string, credential: NodeCredential): Promise<NodeBeat> {
    const beat = await this.beat(id);
    if (!beat) throw notFound('node not found');
    if ('secretHash' in credential && credential.secretHash !== beat.secretHash) throw denied();
    return beat;
  }

  /** Node events a node sends (Nomad's `Node.EmitEvents`): appended, the last 10 kept; one `NodeStreamEvent`. */
  async emitEvents(id: string, credential: NodeCredential, events: ClientEvent[]): Promise<number> {
    return this.written(async (index) => {
      const now = this.state.clock.now();
      await this.authenticated(id, credential);
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      const updated: ClusterNode = {
        ...node,
        Events: appendEvents(
          node,
          events.map((event) =>
            nodeEvent(
              event.Message,
              event.Subsystem ?? '',
              clientTime(event.Timestamp, now),
              index,
              event.Details ?? null,
            ),
          ),
        ),
        ModifyIndex: index,
      };
      return {
        items: [this.nodeWrite(updated, node)],
        tables: ['nodes'],
        events: [nodeTopicEvent('NodeStreamEvent', updated)],
      };
    });
  }

  /**
   * Sets, updates or cancels a node's drain (Nomad's `Node.UpdateDrain`). A request that changes nothing (the same
   * drain again, no drain on an undrained node that is already as eligible as asked) writes nothing, so concurrent
   * identical drains make one change and one event.
   */
  async drain(id: string, request: DrainRequest): Promise<{ index: number; written: boolean }> {
    const spec = request.spec;
    if (spec && spec.Deadline < 0 && spec.Deadline !== forceDeadlineNs)
      throw badRequest(
        `invalid DrainSpec.Deadline ${spec.Deadline}: a deadline may not be negative (but -1s, ${forceDeadlineNs} ns, which is -force)`,
      );
    let unchanged: number | undefined;
    const index = await this.commitOrExplain(async (index) => {
      const now = this.state.clock.now();
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      const current = node.DrainStrategy;
      const sameSpec =
        current && spec && current.Deadline === spec.Deadline && current.IgnoreSystemJobs === spec.IgnoreSystemJobs;
      const sameMeta = !request.meta || sameMap(request.meta, node.LastDrain?.Meta ?? null);
      const eligibility: Eligibility = spec
        ? 'ineligible'
        : request.markEligible
          ? 'eligible'
          : node.SchedulingEligibility;
      if ((sameSpec && sameMeta) || (!current && !spec && eligibility === node.SchedulingEligibility)) {
        unchanged = node.ModifyIndex;
        return undefined;
      }
      const nowText = new Date(now).toISOString();
      const strategy: DrainStrategy | null = spec
        ? {
            Deadline: spec.Deadline,
            IgnoreSystemJobs: spec.IgnoreSystemJobs,
            ForceDeadline: spec.Deadline > 0 ? new Date(now + spec.Deadline / 1e6).toISOString() : zeroTime,
            StartedAt: current?.StartedAt ?? nowText,
          }
        : null;
      const message =
        !current && spec
          ? nodeMessages.drainSet
          : current && spec
            ? nodeMessages.drainUpdated
            : current
              ? nodeMessages.drainDisabled
              : undefined;
      const updatedAt = new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
      let lastDrain: DrainMetadata | null = node.LastDrain;
      if (current || strategy) {
        const base: DrainMetadata =
          !current || !lastDrain
            ? { StartedAt: updatedAt, UpdatedAt: updatedAt, Status: 'draining', AccessorID: '', Meta: request.meta }
            : { ...lastDrain };
        lastDrain = {
          ...base,
          UpdatedAt: updatedAt,
          ...(request.meta && Object.keys(request.meta).length > 0 ? { Meta: request.meta } : {}),
          ...(request.accessorId ? { AccessorID: request.accessorId } : {}),
          Status: strategy ? 'draining' : 'canceled',
        };
      }
      const updated: ClusterNode = {
        ...node,
        DrainStrategy: strategy,
        SchedulingEligibility: eligibility,
        LastDrain: lastDrain,
        StatusUpdatedAt: Math.floor(now / 1000),
        Events: message ? appendEvents(node, [nodeEvent(message, 'Drain', now, index)]) : node.Events,
        ModifyIndex: index,
      };
      // A drain that starts moves the node's allocations (the reconciler migrates them): their jobs are evaluated.
      const evaluations = !current && strategy ? await this.evaluations?.(updated, index, 'node-drain') : undefined;
      return {
        items: [
          this.nodeWrite(updated, node),
          ...(await this.placementGuard(id, index)),
          ...this.roomMade(node, updated, index),
          ...(evaluations?.items ?? []),
        ],
        tables: ['nodes', ...(evaluations?.tables ?? [])],
        events: [nodeTopicEvent('NodeDrain', updated), ...(evaluations?.events ?? [])],
      };
    });
    return index === undefined ? { index: unchanged as number, written: false } : { index, written: true };
  }

  /**
   * Marks a node eligible or ineligible (Nomad's `Node.UpdateEligibility`); the same again writes nothing. A node made
   * eligible again can take work: its jobs are evaluated (`node-update`) in the same write, as Nomad's createNodeEvals.
   */
  async setEligibility(
    id: string,
    eligibility: Eligibility,
  ): Promise<{ index: number; written: boolean; evalIds: string[] }> {
    let unchanged: number | undefined;
    let evalIds: string[] = [];
    const index = await this.commitOrExplain(async (index) => {
      const now = this.state.clock.now();
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      if (node.DrainStrategy && eligibility === 'eligible')
        throw badRequest("can not set node's scheduling eligibility to eligible while it is draining");
      if (node.SchedulingEligibility === eligibility) {
        unchanged = node.ModifyIndex;
        return undefined;
      }
      const message = eligibility === 'eligible' ? nodeMessages.eligible : nodeMessages.ineligible;
      const updated: ClusterNode = {
        ...node,
        SchedulingEligibility: eligibility,
        StatusUpdatedAt: Math.floor(now / 1000),
        Events: appendEvents(node, [nodeEvent(message, 'Cluster', now, index)]),
        ModifyIndex: index,
      };
      const evaluations =
        eligibility === 'eligible' ? await this.evaluations?.(updated, index, 'node-update') : undefined;
      evalIds = (evaluations?.events ?? []).map((event) => event.Key);
      return {
        items: [
          this.nodeWrite(updated, node),
          ...(await this.placementGuard(id, index)),
          ...this.roomMade(node, updated, index),
          ...(evaluations?.items ?? []),
        ],
        tables: ['nodes', ...(evaluations?.tables ?? [])],
        events: [nodeTopicEvent('NodeEligibility', updated), ...(evaluations?.events ?? [])],
      };
    });
    return index === undefined
      ? { index: unchanged as number, written: false, evalIds: [] }
      : { index, written: true, evalIds };
  }

  /**
   * Nomad's `Node.Evaluate` (`nomad node eval`): a `node-update` evaluation of each job running on the node (and of a
   * ready node's system jobs), one write of `EvaluationUpdated` events; nothing written when there is none. 404 for
   * an unknown node.
   */
  async evaluate(id: string): Promise<{ node: ClusterNode; evalIds: string[]; index: number }> {
    let found: ClusterNode | undefined;
    let evalIds: string[] = [];
    const index = await this.commitOrExplain(async (index) => {
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      found = node;
      const evaluations = await this.evaluations?.(node, index, 'node-update');
      evalIds = (evaluations?.events ?? []).map((event) => event.Key);
      if (!evaluations || evaluations.items.length === 0) return undefined;
      return { items: evaluations.items, tables: evaluations.tables, events: evaluations.events };
    });
    return { node: found as ClusterNode, evalIds, index: index ?? 0 };
  }

  /**
   * Removes a node (Nomad's `Node.Deregister`, `nomad node purge`): its node and beat, one `NodeDeregistration`, and a
   * `node-update` evaluation of each job with an allocation on it (Nomad's createNodeEvals after the deregistration):
   * the scheduler finds the node gone, marks those allocations lost and places them again.
   */
  async purge(id: string): Promise<{ index: number; evalIds: string[] }> {
    let evalIds: string[] = [];
    const index = await this.written(async (index) => {
      const node = await this.get(id);
      if (!node) throw notFound('node not found');
      const evaluations = await this.evaluations?.(node, index, 'node-update');
      evalIds = (evaluations?.events ?? []).map((event) => event.Key);
      return {
        items: [
          { delete: ClusterNodes.nodeKey(id), when: { equals: { ModifyIndex: node.ModifyIndex } } },
          { delete: ClusterNodes.beatKey(id) },
          { update: { pk: META_PK, sk: NODE_COUNT_SK }, change: { add: { value: -1 } } },
          ...(evaluations?.items ?? []),
        ],
        tables: ['nodes', ...(evaluations?.tables ?? [])],
        events: [nodeTopicEvent('NodeDeregistration', node), ...(evaluations?.events ?? [])],
      };
    });
    return { index, evalIds };
  }

  /**
   * The IDs of the nodes whose beat says `down`: what the node garbage collection looks at, read from the small beat
   * items (eventually consistent: `reapDown` reads the node again inside its write), not the whole nodes.
   */
  async downIds(): Promise<string[]> {
    if (Number((await this.store.get(META_PK, NODE_COUNT_SK))?.value ?? 0) <= 0) return [];
    const pages = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.store.list<NodeBeat>(`${NODE_BEAT_PK}#${String(shard).padStart(2, '0')}`, {
          where: { equals: { status: 'down' } },
          eventual: true,
        }),
      ),
    );
    return pages
      .flat()
      .filter((beat) => this.store.verified(beatKind, beat))
      .map((beat) => beat.sk);
  }

  /**
   * Nomad's node garbage collection (`nomad/core_sched.go` nodeGC, then `Node.BatchDeregister`): a node `down` since
   * at or before `cutoffSeconds` whose allocations are all terminal (`allTerminal`) is removed with its beat, in a
   * write conditional on the node unchanged since read (a node that beat again meanwhile stays). No event: Nomad's
   * `NodeBatchDeregisterRequestType` is not one of the messages `nomad/state/events.go` publishes; and no evaluation,
   * as a node with no live allocation gives createNodeEvals no job. False when the node is not (or no longer) one to reap.
   */
  async reapDown(id: string, cutoffSeconds: number, allTerminal: (id: string) => Promise<boolean>): Promise<boolean> {
    try {
      const index = await this.state.commit(async () => {
        const node = await this.get(id);
        if (node?.Status !== 'down' || node.StatusUpdatedAt > cutoffSeconds) return undefined;
        if (!(await allTerminal(id))) return undefined;
        return {
          items: [
            { delete: ClusterNodes.nodeKey(id), when: { equals: { ModifyIndex: node.ModifyIndex } } },
            { delete: ClusterNodes.beatKey(id) },
            { update: { pk: META_PK, sk: NODE_COUNT_SK }, change: { add: { value: -1 } } },
          ],
          tables: ['nodes'],
        };
      });
      return index !== undefined;
    } catch (error) {
      if (error instanceof WriteConditionFailed) return false;
      throw error;
    }
  }

  /**
   * The heartbeat sweep: every node not `down` whose deadline has passed is marked `down` with the node event
   * `Node heartbeat missed` and one `NodeStreamEvent`, each in its own transaction conditional on its deadline still
   * being past (a heartbeat that lands first keeps the node alive; a concurrent sweep finds it down and does nothing).
   * Reads each shard of the beats (small items), unless no node is registered; returns the nodes it marked down.
   */
  async expireMissed(): Promise<string[]> {
    return (await this.sweepLate()).down;
  }

  /**
   * `expireMissed` for at most `limit` late nodes (the sweep a heartbeat runs stays short); `more` says whether late
   * nodes were left for the next sweep. The beats are read eventually consistent: each node is marked down by a write
   * conditional on its deadline, so a stale read costs a read, never a wrong write.
   */
  async sweepLate(limit = Number.POSITIVE_INFINITY): Promise<{ down: string[]; more: boolean }> {
    const now = this.state.clock.now();
    // No node registered (the count registration and purge keep): one read instead of sixteen queries.
    if (Number((await this.store.get(META_PK, NODE_COUNT_SK))?.value ?? 0) <= 0) return { down: [], more: false };
    const overdue = { all: [{ below: { deadline: now } }, { not: { equals: { status: 'down' } } }] };
    const pages = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.store.list<NodeBeat>(`${NODE_BEAT_PK}#${String(shard).padStart(2, '0')}`, {
          where: overdue,
          eventual: true,
        }),
      ),
    );
    const down: string[] = [];
    // In a random order, so concurrent sweeps mostly take different nodes rather than racing for the same index.
    const late = pages.flat();
    for (let i = late.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [late[i], late[j]] = [late[j] as NodeBeat, late[i] as NodeBeat];
    }
    for (const beat of late.slice(0, limit)) {
      if (!this.store.verified(beatKind, beat)) continue;
      if (await this.markDown(beat.sk, now)) down.push(beat.sk);
    }
    return { down, more: late.length > limit };
  }

  private async markDown(id: string, now: number): Promise<boolean> {
    try {
      const index = await this.state.commit(async (index) => {
        const beat = await this.beat(id);
        if (!beat || beat.status === 'down' || beat.deadline >= now) return undefined;
        const node = await this.get(id);
        if (!node) return undefined;
        const updated: ClusterNode = {
          ...node,
          Status: 'down',
          StatusUpdatedAt: Math.floor(now / 1000),
          Events: appendEvents(node, [nodeEvent(nodeMessages.heartbeatMissed, 'Cluster', now, index)]),
          LastMissedHeartbeatIndex: index,
          ModifyIndex: index,
        };
        const evaluations = await this.evaluations?.(updated, index, 'node-update');
        return {
          items: [
            this.nodeWrite(updated, node),
            {
              put: this.beatItem(updated, beat.secretHash, index, beat.deadline, beat.allocIndex, beat.allocItemsIndex),
              when: { all: [{ equals: { mac: beat.mac } }, { below: { deadline: now } }] },
            },
            ...(evaluations?.items ?? []),
          ],
          tables: ['nodes', ...(evaluations?.tables ?? [])],
          events: [nodeTopicEvent('NodeStreamEvent', updated), ...(evaluations?.events ?? [])],
        };
      });
      return index !== undefined;
    } catch (error) {
      // A heartbeat moved the deadline (or changed the node) after the read: the node is alive.
      if (error instanceof WriteConditionFailed) return false;
      throw error;
    }
  }

  /**
   * The write that records, on the node's beat, that a write at `index` changed the node's allocations (its
   * `AllocIndex`), for that write's transaction. It is conditional on the beat being as read (`beat`): the beat's
   * `allocIndex` is the node's allocation version, so a plan computed on an older view of the node fails to commit
   * (`evaluations/plan-apply.ts`). An update, not a put, so a heartbeat's deadline written meanwhile stays.
   */
  /** The record that this write of the node made room (`capacity.ts`), when it does: for its transaction. */
  private roomMade(before: ClusterNode | undefined, after: ClusterNode, index: number): Write[] {
    return nodeMadeRoom(before, after) ? [new CapacityLog(this.state).roomMade(after.ID, index)] : [];
  }

  /**
   * What a drain or an eligibility change writes besides the node: the node's allocation version moved (its beat's
   * `allocIndex`), so a plan computed before the change cannot commit onto the node after it (plan apply's
   * conditional write on that version, `cluster/evaluations/plan-apply.ts`). The agent re-reads its allocations once.
   */
  private async placementGuard(id: string, index: number): Promise<Write[]> {
    const beat = await this.beat(id);
    return beat ? [this.allocIndexWrite(beat, index, true)] : [];
  }

  allocIndexWrite(beat: NodeBeat, index: number, nodeWritten = false): Write {
    // The marks move with it (`scheduler/beat-marks.ts`): a beat a write changes must carry them itself. The
    // allocation mark always (plan apply changes allocations; a drain's moves it needlessly: one read again), the
    // node mark when the write also writes the node (a drain, an eligibility change).
    const set: Record<string, number> = {
      allocIndex: index,
      [allocItemsIndexAttribute]: index,
      ...(nodeWritten ? { [nodeItemIndexAttribute]: index } : {}),
    };
    return {
      update: ClusterNodes.beatKey(beat.sk),
      change: { set: { ...set, mac: this.store.macOf(beatKind, { ...beat, ...set }) } },
      when: { equals: { mac: beat.mac } },
    };
  }

  /** The write of a node's item, conditional on it being as read (`existing`); registration's (and a bench's seeding). */
  nodeWrite(node: ClusterNode, existing: ClusterNode | undefined): Write {
    return {
      put: this.store.signed(nodeKind, { ...ClusterNodes.nodeKey(node.ID), ...node, SecretID: '' }),
      when: unchangedSince(existing),
    };
  }

  /** A node's beat item as registration writes it (a bench seeds a fleet with it, without a commit per node). */
  beatItem(
    node: ClusterNode,
    secretHash: string,
    index: number,
    deadline: number,
    allocIndex: number | undefined,
    allocItemsIndex: number | undefined,
  ): NodeBeat {
    return this.store.signed(beatKind, {
      ...ClusterNodes.beatKey(node.ID),
      secretHash,
      status: node.Status,
      pool: node.NodePool,
      datacenter: node.Datacenter,
      nodeClass: node.NodeClass,
      modifyIndex: index,
      deadline,
      ...(allocIndex ? { allocIndex } : {}),
      ...(allocItemsIndex ? { allocItemsIndex } : {}),
      // Every put of a beat goes with a write of the node at the same index (registration, status).
      [nodeItemIndexAttribute]: index,
    });
  }

  /** How long a node identity in `pool` lives: the pool's `NodeIdentityTTL`, 24 hours when there is no such pool. */
  async identityTtlMs(pool: string): Promise<number> {
    const ttl = (await this.pools.nodeIdentityTtl(pool)) ?? defaultIdentityTtlNs;
    return ttl > 0 ? ttl / 1e6 : defaultIdentityTtlNs / 1e6;
  }

  /** A commit of a plan that always writes. */
  private async written(plan: Parameters<SchedulerState['commit']>[0]): Promise<number> {
    return (await this.commitOrExplain(plan)) as number;
  }

  /** A commit whose own conditions failing means another writer changed the node between read and write: 409. */
  private async commitOrExplain(plan: Parameters<SchedulerState['commit']>[0]): Promise<number | undefined> {
    try {
      return await this.state.commit(plan);
    } catch (error) {
      if (error instanceof WriteConditionFailed)
        throw new DomainError('conflict', 'the node was changed concurrently; the request did not happen, retry it');
      throw error;
    }
  }
}

/** A client's event time, or the server's when it sent none. */
const clientTime = (timestamp: string | undefined, now: number): number =>
  timestamp === undefined ? now : Date.parse(timestamp);

function sameMap(a: Record<string, string> | null, b: Record<string, string> | null): boolean {
  const left = Object.entries(a ?? {}).sort(([x], [y]) => (x < y ? -1 : 1));
  const right = Object.entries(b ?? {}).sort(([x], [y]) => (x < y ? -1 : 1));
  return JSON.stringify(left) === JSON.stringify(right);
}
