/**
 * A node pool (Nomad's `structs.NodePool`): a named set of nodes that jobs are placed in. `all` and `default` are
 * built in: they always exist, are never stored and can be neither changed nor deleted. Names, the description limit,
 * the default `NodeIdentityTTL` (24 h) and the error texts are Nomad's (`nomad/structs/node_pool.go`,
 * `nomad/node_pool_endpoint.go`). `SchedulerConfiguration` is Nomad Enterprise's (its community edition refuses it as
 * unlicensed): an algorithm of `binpack` or `spread` (empty: the cluster's) and a memory-oversubscription switch.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { DurationError, formatDuration, parseGoDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import { shown } from '../../acl/identifiers.ts';
import type { PendingEvent } from '../../state.ts';
import { metaProblem, metaSchema } from '../meta.ts';

export interface NodePoolSchedulerConfiguration {
  SchedulerAlgorithm: string;
  MemoryOversubscriptionEnabled: boolean | null;
}

export interface NodePool {
  Name: string;
  Description: string;
  Meta: Record<string, string> | null;
  SchedulerConfiguration: NodePoolSchedulerConfiguration | null;
  /** Nanoseconds, as Go's time.Duration is encoded. */
  NodeIdentityTTL: number;
  /** A digest of the pool's content (Nomad's replication diff), base64. */
  Hash: string;
  CreateIndex: number;
  ModifyIndex: number;
}

/** What a write sets (the indexes and the hash are the service's). */
export type NodePoolContent = Omit<NodePool, 'Hash' | 'CreateIndex' | 'ModifyIndex'>;

export const NODE_POOL_ALL = 'all';
export const NODE_POOL_DEFAULT = 'default';
const nanosecondsPerSecond = 1_000_000_000;
/** Nomad's DefaultNodePoolNodeIdentityTTL: 24 hours, in nanoseconds. */
export const defaultNodeIdentityTtl = 24 * 3600 * nanosecondsPerSecond;
const maxDescriptionLength = 256;

export const validNodePoolName = /^[a-zA-Z0-9\-_]{1,128}$/;
const nameRule = 'must match regex ^[a-zA-Z0-9-_]{1,128}$';

export const isBuiltInPool = (name: string): boolean => name === NODE_POOL_ALL || name === NODE_POOL_DEFAULT;

/**
 * Nomad's SetHash: a 32-byte digest of the fields a user sets, in its order. Nomad's is BLAKE2b-256, which Node's
 * crypto lacks (it has BLAKE2b-512 only, and a shorter BLAKE2b is a different function): SHA-256 stands in, and no
 * client compares the bytes with Nomad's (the hash only tells replicas whether a pool changed).
 */
export function poolHash(pool: NodePoolContent): string {
  const hash = createHash('sha256');
  hash.update(pool.Name);
  hash.update(pool.Description);
  // Go's Duration.String() of whole seconds (`24h0m0s`); a TTL with a fraction of a second hashes its nanoseconds.
  const ttl = pool.NodeIdentityTTL;
  hash.update(ttl % nanosecondsPerSecond === 0 ? formatDuration(ttl / nanosecondsPerSecond) : `${ttl}ns`);
  if (pool.SchedulerConfiguration) {
    hash.update(pool.SchedulerConfiguration.SchedulerAlgorithm);
    const oversubscription = pool.SchedulerConfiguration.MemoryOversubscriptionEnabled;
    if (oversubscription !== null)
      hash.update(oversubscription ? 'memory_oversubscription_enabled' : 'memory_oversubscription_disabled');
  }
  for (const key of Object.keys(pool.Meta ?? {}).sort()) hash.update(key).update(pool.Meta?.[key] ?? '');
  return hash.digest('base64');
}

function builtIn(name: string, description: string): NodePool {
  const content: NodePoolContent = {
    Name: name,
    Description: description,
    Meta: null,
    SchedulerConfiguration: null,
    NodeIdentityTTL: defaultNodeIdentityTtl,
  };
  return Object.freeze({ ...content, Hash: poolHash(content), CreateIndex: 1, ModifyIndex: 1 });
}

/** The built-in pools as Nomad creates them at index 1. */
export const builtInPools: readonly NodePool[] = [
  builtIn(NODE_POOL_ALL, 'Node pool with all nodes in the cluster.'),
  builtIn(NODE_POOL_DEFAULT, 'Default node pool.'),
];

/**
 * The longest `NodeIdentityTTL`: the most nanoseconds a JSON number (and a DynamoDB number written from one) holds
 * exactly, about 104 days. Nomad's limit is Go's (292 years); a node identity meant to outlive this is a credential
 * that outlives its purpose.
 */
const maxIdentityTtl = Number.MAX_SAFE_INTEGER;

/**
 * `NodeIdentityTTL` as Nomad's NodePool.UnmarshalJSON reads it: a Go duration string (`"1h"`; empty is unset) or a
 * number of nanoseconds. Unlike Nomad, a negative one is refused (a node identity cannot live less than nothing), and so
 * is one over `maxIdentityTtl`.
 */
const identityTtl = z.pipe(
  z.nullish(z.union([z.string(), z.number()])),
  z.transform((value, ctx): number => {
    if (value === null || value === undefined || value === '') return 0;
    let nanoseconds: number;
    if (typeof value === 'number') nanoseconds = Math.trunc(value);
    else {
      try {
        nanoseconds = Math.round(parseGoDuration(value) * nanosecondsPerSecond);
      } catch (error) {
        if (!(error instanceof DurationError)) throw error;
        ctx.issues.push({ code: 'custom', input: value, message: `time: invalid duration ${JSON.stringify(value)}` });
        return z.NEVER;
      }
    }
    if (!Number.isFinite(nanoseconds) || nanoseconds < 0 || nanoseconds > maxIdentityTtl) {
      ctx.issues.push({
        code: 'custom',
        input: value,
        message: `must be a duration from 0 to ${maxIdentityTtl} nanoseconds (about 104 days), got ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return nanoseconds;
  }),
);

export const nodePoolBody = z.object({
  Name: z.optional(z.string()).check(z.describe('The pool name: 1 to 128 letters, digits, dashes and underscores.')),
  Description: z.optional(z.string()).check(z.describe('A description of the pool (at most 256 characters).')),
  Meta: metaSchema('The pool'),
  SchedulerConfiguration: z
    .nullish(
      z.object({
        SchedulerAlgorithm: z
          .optional(z.string())
          .check(z.describe('`binpack` or `spread`; empty uses the cluster-wide algorithm.')),
        MemoryOversubscriptionEnabled: z
          .nullish(z.boolean())
          .check(z.describe('Whether memory oversubscription is on in this pool; null uses the cluster-wide setting.')),
      }),
    )
    .check(z.describe("The pool's own scheduler configuration (Nomad Enterprise's node pool governance).")),
  NodeIdentityTTL: identityTtl.check(
    z.describe('How long a node identity of this pool lives: a duration such as `"12h"` or nanoseconds; 0: 24h.'),
  ),
});

export type NodePoolBody = z.output<typeof nodePoolBody>;

/**
 * The pool a body describes, canonicalised (no TTL: 24 h) and validated as Nomad's UpsertNodePools does: every
 * problem named in one 400, and a built-in pool refused.
 */
export function validateNodePool(body: NodePoolBody): NodePoolContent {
  const name = body.Name ?? '';
  const description = body.Description ?? '';
  const problems: string[] = [];
  if (!validNodePoolName.test(name)) problems.push(`invalid name ${JSON.stringify(shown(name))}, ${nameRule}`);
  if (description.length > maxDescriptionLength) problems.push(`description longer than ${maxDescriptionLength}`);
  const meta = body.Meta ?? null;
  const metaError = metaProblem(meta);
  if (metaError) problems.push(metaError);
  const configuration = body.SchedulerConfiguration
    ? {
        SchedulerAlgorithm: body.SchedulerConfiguration.SchedulerAlgorithm ?? '',
        MemoryOversubscriptionEnabled: body.SchedulerConfiguration.MemoryOversubscriptionEnabled ?? null,
      }
    : null;
  if (configuration && !['', 'binpack', 'spread'].includes(configuration.SchedulerAlgorithm))
    problems.push(
      `invalid scheduler algorithm ${JSON.stringify(shown(configuration.SchedulerAlgorithm))}: use binpack or spread`,
    );
  if (problems.length > 0) throw badRequest(`invalid node pool ${JSON.stringify(shown(name))}: ${problems.join('; ')}`);
  if (isBuiltInPool(name)) throw badRequest(`modifying node pool ${JSON.stringify(name)} is not allowed`);
  return {
    Name: name,
    Description: description,
    Meta: meta,
    SchedulerConfiguration: configuration,
    NodeIdentityTTL: body.NodeIdentityTTL === 0 ? defaultNodeIdentityTtl : body.NodeIdentityTTL,
  };
}

/** A pool created for a node that names a missing one (Nomad's fetchOrCreateNodePoolTxn): its name, canonicalised. */
export function implicitPool(name: string): NodePoolContent {
  return {
    Name: name,
    Description: '',
    Meta: null,
    SchedulerConfiguration: null,
    NodeIdentityTTL: defaultNodeIdentityTtl,
  };
}

/**
 * Nomad publishes pools on the topic `NodePool`, keyed by name, outside any namespace; the type is the write's (a pool
 * a node's registration creates is a `NodeRegistration` event, as every change of Nomad's NodeRegister message).
 */
export const nodePoolEvent = (
  type: 'NodePoolUpserted' | 'NodePoolDeleted' | 'NodeRegistration',
  pool: NodePool,
): PendingEvent => ({
  Topic: 'NodePool',
  Type: type,
  Key: pool.Name,
  Namespace: '',
  FilterKeys: null,
  Payload: { NodePool: pool },
});
