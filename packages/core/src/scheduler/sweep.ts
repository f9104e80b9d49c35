import { AclPolicies } from './acl/policies/store.ts';
import { AclRoles } from './acl/roles/store.ts';
import { AclTokens } from './acl/tokens/store.ts';
import { NodePools } from './cluster/node-pools/store.ts';
import { ClusterNodes } from './cluster/nodes/store.ts';
import { NodeSweepLease } from './cluster/nodes/sweep-lease.ts';
import { nodeSecretHash, type SchedulerBase, schedulerSecretHash } from './scheduler-base.ts';
import { SchedulerState } from './state.ts';

/**
 * The scheduler's scheduled work: its expired ACL tokens, the nodes whose heartbeat is late (marked `down`: see
 * `cluster/nodes/store.ts` `expireMissed`; heartbeats also sweep between runs, `cluster/nodes/sweep-lease.ts`) and the events past their expiry. Built on the state
 * alone, so the sweep job carries none of the scheduler's HTTP surface (login, OIDC, binding-rule selectors).
 */
export async function sweepScheduler(core: SchedulerBase): Promise<void> {
  const state = new SchedulerState(core.store, core.clock);
  const roles = new AclRoles(state, new AclPolicies(state));
  await new AclTokens(state, roles, (secret) => schedulerSecretHash(core, secret), core.log).sweepExpired();
  const nodes = new ClusterNodes(state, new NodePools(state), (id, secret) => nodeSecretHash(core, id, secret));
  // The backstop of the sweep heartbeats run (`cluster/nodes/sweep-lease.ts`): every late node, lease or no lease.
  await new NodeSweepLease(state, nodes, core.log).sweepNow();
  await state.sweepEvents();
}

/** How the scheduler stores a token's secret: a keyed hash, apart from the secrets service's tokens. */
