/**
 * What each node holds while one placement call runs (Nomad's `EvalContext.ProposedAllocs`): its allocations that
 * are not terminal on the client, less those this plan stops (the allocations placements replace), plus the
 * placements made earlier in the same call; kept as running totals (CPU, memory, disk, which job's groups) and a
 * port index built the first time a node is looked at, so that scoring a node costs the same however many
 * allocations it runs.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { AllocatedResources } from '../cluster/allocations/resources.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { NetworkIndex } from './ports.ts';
import { addUsage, type Capacity, subtractUsage, type Usage, usageOf } from './resources.ts';

/** What placement reads of an allocation (an existing one, or one this call placed). */
export interface HeldAlloc {
  ID: string;
  Namespace: string;
  JobID: string;
  TaskGroup: string;
  NodeID: string;
  AllocatedResources: AllocatedResources | null;
}

/** What the checks answered for a computed class: for the job, and for each group. */
export interface ClassEligibility {
  generation: number;
  job: 'eligible' | 'ineligible' | undefined;
  groups: Map<string, 'eligible' | 'ineligible'>;
}

export interface NodeState {
  usage: Usage;
  /** What the node offers (its resources less its reserved ones), read on first use. */
  capacity?: Capacity;
  /** The cores its allocations reserve, found on first use (forgotten when its allocations change). */
  cores?: Set<number>;
  /** The eligibility answers of the node's computed class (shared by the nodes of the class), found on first use. */
  eligibility?: ClassEligibility;
  allocs: HeldAlloc[];
  /** The node's port index, built on first use; `error` when the node's or its allocations' ports are unusable. */
  ports?: { index: NetworkIndex; error: string };
}

/** Nomad's `ClientTerminalStatus`: the client no longer runs it, so it holds nothing. */
export const clientTerminal = (alloc: Pick<Allocation, 'ClientStatus'>): boolean =>
  alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';

export class ProposedState {
  private readonly byNode = new Map<string, HeldAlloc[]>();
  private readonly states = new Map<string, NodeState>();
  /** Allocations this plan stops: they hold nothing while it places. */
  readonly stopping = new Set<string>();

  constructor(allocs: readonly HeldAlloc[]) {
    for (const alloc of allocs) {
      const list = this.byNode.get(alloc.NodeID);
      if (list) list.push(alloc);
      else this.byNode.set(alloc.NodeID, [alloc]);
    }
  }

  /** The node's state, built from its allocations on first use. */
  node(nodeId: string): NodeState {
    let state = this.states.get(nodeId);
    if (!state) {
      const allocs = (this.byNode.get(nodeId) ?? []).filter((alloc) => !this.stopping.has(alloc.ID));
      const usage: Usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
      for (const alloc of allocs) addUsage(usage, usageOf(alloc.AllocatedResources));
      state = { usage, allocs };
      this.states.set(nodeId, state);
    }
    return state;
  }

  /** The node's port index with its allocations' ports, built on first use. */
  ports(node: ClusterNode, state: NodeState = this.node(node.ID)): { index: NetworkIndex; error: string } {
    if (!state.ports) {
      const index = new NetworkIndex();
      const invalid = index.setNode(node);
      let error = invalid ? 'network: invalid node' : '';
      if (!error) for (const alloc of state.allocs) if (index.addAlloc(alloc)) error = 'network: port collision';
      state.ports = { index, error };
    }
    return state.ports;
  }

  /** The cores the node's allocations reserve. */
  consumedCores(state: NodeState): Set<number> {
    if (!state.cores) {
      state.cores = new Set();
      for (const alloc of state.allocs)
        for (const task of Object.values(alloc.AllocatedResources?.Tasks ?? {}))
          for (const core of task.Cpu?.ReservedCores ?? []) state.cores.add(core);
    }
    return state.cores;
  }

  /** Marks an allocation stopped by this plan (it frees its node's resources), or undoes that. */
  setStopping(alloc: HeldAlloc, stopping: boolean): void {
    if (stopping === this.stopping.has(alloc.ID)) return;
    if (stopping) this.stopping.add(alloc.ID);
    else this.stopping.delete(alloc.ID);
    const state = this.states.get(alloc.NodeID);
    if (!state) return; // built later, from the set
    const held = (this.byNode.get(alloc.NodeID) ?? []).find((each) => each.ID === alloc.ID);
    if (!held) return;
    if (stopping) {
      state.allocs = state.allocs.filter((each) => each.ID !== alloc.ID);
      subtractUsage(state.usage, usageOf(held.AllocatedResources));
    } else {
      state.allocs.push(held);
      addUsage(state.usage, usageOf(held.AllocatedResources));
    }
    state.ports = undefined; // rebuilt with or without its ports
    state.cores = undefined;
  }

  /** Adds a placement made by this call to its node. */
  place(alloc: HeldAlloc): void {
    const state = this.node(alloc.NodeID);
    state.allocs.push(alloc);
    addUsage(state.usage, usageOf(alloc.AllocatedResources));
    state.cores = undefined;
    if (state.ports && !state.ports.error) {
      const ports = alloc.AllocatedResources?.Shared.Ports;
      if (ports && ports.length > 0) state.ports.index.addPorts(ports);
    }
  }
}
