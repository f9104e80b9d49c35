/**
 * Node pools in the table: one signed item per pool (`NODE_POOL_PK`, the name). The built-in pools are not stored:
 * they are answered as Nomad creates them (index 1) and no write can reach them. Every write is one transaction at
 * one index with its event (`state.ts`); the reads a write depends on are made in its plan, so they stay true until
 * it lands.
 *
 * For node registration (`ensureWrite`): the items and event that create a missing pool inside the registration's
 * own transaction, as Nomad's fetchOrCreateNodePoolTxn does. For deletion: the checks that a pool is unused
 * (`addUsageCheck`: nodes in the pool, live jobs in it), run inside the delete's plan.
 */
import { badRequest, conflict, notFound } from '../../../lib/errors.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Write } from '../../../storage/store.ts';
import { sameContent, unchangedSince, withoutKeys } from '../../acl/common.ts';
import { shown } from '../../acl/identifiers.ts';
import { NODE_POOL_PK } from '../../keys.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import {
  builtInPools,
  implicitPool,
  isBuiltInPool,
  type NodePool,
  type NodePoolContent,
  nodePoolEvent,
  poolHash,
  validNodePoolName,
} from './model.ts';

/** A pool item is authenticated whole (`storage/item-mac.ts`): a forged or moved pool does not exist. */
export const nodePoolKind = itemKind('scheduler-node-pool');

/** Why a pool cannot be deleted now (`node pool "x" has nodes`), or undefined when this user of pools has none in it. */
export type PoolUsageCheck = (pool: string) => Promise<string | undefined>;

/** What a write adds to its transaction to create a missing pool. */
export interface PoolCreation {
  items: Write[];
  tables: TableName[];
  events: PendingEvent[];
}

/** A node as a pool's node list shows it (Nomad's NodeListStub): at least its ID. */
export interface PoolMember {
  ID: string;
  [field: string]: unknown;
}

export class NodePools {
  private readonly usageChecks: PoolUsageCheck[] = [];
  private listMembers: (pool: string) => Promise<PoolMember[]> = async () => [];

  constructor(private readonly state: SchedulerState) {}

  /** Adds a check that a deletion runs in its plan (the node store adds "has nodes", the job store "has jobs"). */
  addUsageCheck(check: PoolUsageCheck): void {
    this.usageChecks.push(check);
  }

  /** Sets how a pool's nodes are listed (the node store: stubs of the nodes in the pool, every node for `all`). */
  listMembersWith(list: (pool: string) => Promise<PoolMember[]>): void {
    this.listMembers = list;
  }

  /** The nodes in the pool, as `listMembersWith` lists them (none until a node store is attached). */
  members(pool: string): Promise<PoolMember[]> {
    return this.listMembers(pool);
  }

  /** The pool of that name (a built-in one as Nomad has it); a name no pool can have finds none. */
  async get(name: string): Promise<NodePool | undefined> {
    const builtIn = builtInPools.find((pool) => pool.Name === name);
    if (builtIn) return builtIn;
    if (!validNodePoolName.test(name)) return undefined;
    return withoutKeys<NodePool>(await this.state.store.getVerified(nodePoolKind, NODE_POOL_PK, name));
  }

  /** Every pool, the built-in ones included, in no particular order. */
  async list(): Promise<NodePool[]> {
    const stored = (await this.state.store.list(NODE_POOL_PK))
      .filter((item) => this.state.store.verified(nodePoolKind, item))
      .map((item) => withoutKeys<NodePool>(item) as NodePool)
      .filter((pool) => !isBuiltInPool(pool.Name));
    return [...builtInPools, ...stored];
  }

  /** How long node identities of the pool live (nanoseconds); undefined when there is no such pool. */
  async nodeIdentityTtl(name: string): Promise<number | undefined> {
    return (await this.get(name))?.NodeIdentityTTL;
  }

  /**
   * Creates or replaces a pool (validated by the caller: `validateNodePool`); an unchanged pool is not rewritten and
   * keeps its index, so of concurrent identical writes one changes the pool and publishes the event. Returns the
   * index the pool is at.
   */
  async upsert(content: NodePoolContent): Promise<number> {
    let result = 0;
    try {
      await this.state.commit(async (index) => {
        const existing = await this.get(content.Name);
        if (existing && sameContent(content, contentOf(existing))) {
          result = existing.ModifyIndex;
          return undefined;
        }
        const stored = this.stored(content, existing?.CreateIndex ?? index, index);
        result = index;
        return {
          items: [
            {
              put: this.state.store.signed(nodePoolKind, { pk: NODE_POOL_PK, sk: content.Name, ...stored }),
              when: unchangedSince(existing),
            },
          ],
          tables: ['node_pools'],
          events: [nodePoolEvent('NodePoolUpserted', stored)],
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed) throw conflict('the node pool was modified concurrently; retry');
      throw error;
    }
    return result;
  }

  /**
   * Deletes a pool: 400 for a built-in one, 404 for none, 409 while it is in use (every usage check's reason, in one
   * message). Returns the index of the deletion.
   */
  async delete(name: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(name);
      if (!existing) throw notFound(`node pool ${shown(name)} not found`);
      if (isBuiltInPool(name)) throw badRequest(`deleting node pool ${JSON.stringify(name)} is not allowed`);
      const reasons: string[] = [];
      for (const check of this.usageChecks) {
        const reason = await check(name);
        if (reason) reasons.push(reason);
      }
      if (reasons.length > 0) throw conflict(reasons.join('; '));
      return {
        items: [{ delete: { pk: NODE_POOL_PK, sk: name }, when: { equals: { ModifyIndex: existing.ModifyIndex } } }],
        tables: ['node_pools'],
        events: [nodePoolEvent('NodePoolDeleted', existing)],
      };
    });
  }

  /**
   * For a write at `index` that places something in the pool `name` (a node registering): the pool, and, when it does
   * not exist yet, what the write's transaction must carry to create it (its item, conditioned on its absence, the
   * `node_pools` table index and its event, of the registration's type `NodeRegistration`, as Nomad's). Call it inside the write's `commit` plan, so the
   * answer holds until the write lands. The name must be valid (`validNodePoolName`).
   */
  async ensureWrite(name: string, index: number): Promise<{ pool: NodePool; creation?: PoolCreation }> {
    const existing = await this.get(name);
    if (existing) return { pool: existing };
    const pool = this.stored(implicitPool(name), index, index);
    return {
      pool,
      creation: {
        items: [
          {
            put: this.state.store.signed(nodePoolKind, { pk: NODE_POOL_PK, sk: name, ...pool }),
            when: { absent: true },
          },
        ],
        tables: ['node_pools'],
        events: [nodePoolEvent('NodeRegistration', pool)],
      },
    };
  }

  private stored(content: NodePoolContent, createIndex: number, modifyIndex: number): NodePool {
    return { ...content, Hash: poolHash(content), CreateIndex: createIndex, ModifyIndex: modifyIndex };
  }
}

function contentOf(pool: NodePool): NodePoolContent {
  return {
    Name: pool.Name,
    Description: pool.Description,
    Meta: pool.Meta,
    SchedulerConfiguration: pool.SchedulerConfiguration,
    NodeIdentityTTL: pool.NodeIdentityTTL,
  };
}
