/**
 * Node pools over HTTP, as Nomad's (`command/agent/node_pool_endpoint.go`, `nomad/node_pool_endpoint.go`):
 * `/v1/node/pools`, `/v1/node/pool/:name`, `/v1/node/pool/:name/nodes`, `/v1/node/pool/:name/jobs`. Each operation
 * needs the pool's `node_pool` capability (`read`, `write`, `delete`; a management token has all): the list shows
 * only the pools the caller may read, a write needs `write` on the pool it names, the nodes of a pool also need
 * `node:read`, the jobs of a pool `list-jobs` in their namespace.
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { listParameters, paginate, parsedFilter } from '../../http/list-query.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerReply, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { jobsInPool } from '../jobs-in-use.ts';
import { type NodePoolBody, nodePoolBody, validateNodePool } from './model.ts';

const poolName = z.string().check(z.describe('The node pool name.'));
const prefix = z.optional(z.string()).check(z.describe('Only pools whose name starts with this.'));
/** `/nodes` and `/jobs` refuse `prefix`: it would be ambiguous (the pool's name or the listed items'?). */
const noPrefix = z.optional(z.string()).check(
  z.refine((value) => value === undefined || value === '', { error: 'prefix argument not allowed' }),
  z.describe('Not allowed here.'),
);
const namespace = z
  .optional(z.string())
  .check(z.describe('The namespace whose jobs are listed (default `default`; `*` for all).'));

/** The fields of Nomad's JobListStub a stored job carries. */
const jobStubFields = [
  'ID',
  'ParentID',
  'Name',
  'Namespace',
  'Datacenters',
  'NodePool',
  'Multiregion',
  'Type',
  'Priority',
  'Periodic',
  'ParameterizedJob',
  'Stop',
  'Status',
  'StatusDescription',
  'JobSummary',
  'CreateIndex',
  'ModifyIndex',
  'JobModifyIndex',
  'SubmitTime',
  'Meta',
] as const;

/** A pool write: `write` on the pool the body names (checked before the pool is validated, as Nomad does). */
async function writePool({
  scheduler,
  caller,
  body,
}: {
  scheduler: Scheduler;
  caller: () => Promise<SchedulerCaller>;
  body: NodePoolBody;
}): Promise<SchedulerReply> {
  if (!(await caller()).acl.allowNodePoolOperation(body.Name ?? '', 'write')) throw permissionDenied();
  return { empty: true, index: await scheduler.nodePools.upsert(validateNodePool(body)) };
}

export const nodePoolRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/node/pools',
    summary: 'List the node pools the caller may read.',
    access: 'token',
    query: { prefix, ...listParameters },
    blocking: ['node_pools'],
    returns: 'The pools, sorted by name (paginated: `X-Nomad-NextToken`).',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const expression = await parsedFilter(query.filter);
      return {
        read: async () =>
          paginate(
            (await scheduler.nodePools.list()).filter((pool) => pool.Name.startsWith(query.prefix ?? '')),
            {
              ...query,
              expression,
              idOf: (pool) => pool.Name,
              // Go's nil map is still a map: a key missing from it is "not present", not an error.
              datum: (pool) => ({ ...pool, Meta: pool.Meta ?? {} }),
              allowed: (pool) => who.acl.allowNodePoolOperation(pool.Name, 'read'),
            },
          ),
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/pools',
    summary: 'Create or update a node pool (not `all` or `default`).',
    access: 'token',
    body: nodePoolBody,
    returns: 'An empty body; the index headers carry the write index.',
    handler: writePool,
  }),
  route({
    method: 'GET',
    path: '/v1/node/pool/:name',
    summary: 'Read a node pool.',
    access: 'token',
    params: { name: poolName },
    blocking: ['node_pools'],
    returns: 'The pool.',
    handler: async ({ scheduler, caller, params: { name } }) => {
      if (!(await caller()).acl.allowNodePoolOperation(name, 'read')) throw permissionDenied();
      return {
        read: async () => {
          const pool = await scheduler.nodePools.get(name);
          if (!pool) throw notFound('node pool not found');
          return pool;
        },
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/pool/:name',
    summary: 'Create or update the node pool named in the path (the body names the same pool).',
    access: 'token',
    params: { name: poolName },
    body: nodePoolBody,
    returns: 'An empty body; the index headers carry the write index.',
    handler: async (context) => {
      if ((context.body.Name ?? '') !== context.params.name)
        throw badRequest('Node pool name does not match request path');
      return writePool(context);
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/node/pool/:name',
    summary: 'Delete a node pool that no node and no live job uses (not `all` or `default`).',
    access: 'token',
    params: { name: poolName },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, caller, params: { name } }) => {
      if (!(await caller()).acl.allowNodePoolOperation(name, 'delete')) throw permissionDenied();
      return { empty: true, index: await scheduler.nodePools.delete(name) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/node/pool/:name/nodes',
    summary: 'List the nodes in a node pool (`all`: every node).',
    description: 'Needs `node:read` and `read` on the pool. A pool that does not exist has no nodes.',
    access: 'token',
    params: { name: poolName },
    query: { prefix: noPrefix, ...listParameters },
    blocking: ['nodes', 'node_pools'],
    returns: 'Node list stubs, sorted by ID (paginated: `X-Nomad-NextToken`).',
    handler: async ({ scheduler, caller, params: { name }, query }) => {
      const who = await caller();
      if (!who.acl.allow('node', 'read') || !who.acl.allowNodePoolOperation(name, 'read')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      return {
        read: async () => {
          if (!(await scheduler.nodePools.get(name))) return paginate([], { idOf: () => '' });
          return paginate(await scheduler.nodePools.members(name), {
            ...query,
            expression,
            idOf: (node) => node.ID,
          });
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/node/pool/:name/jobs',
    summary: 'List the jobs placed in a node pool, in namespaces where the caller may list jobs.',
    access: 'token',
    params: { name: poolName },
    query: { prefix: noPrefix, namespace, ...listParameters },
    blocking: ['jobs', 'node_pools'],
    returns: 'Job list stubs (paginated: `X-Nomad-NextToken`).',
    handler: async ({ scheduler, caller, params: { name }, query }) => {
      const who = await caller();
      if (!who.acl.allowNodePoolOperation(name, 'read')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      const wanted = query.namespace || 'default';
      return {
        read: async () => {
          if (!(await scheduler.nodePools.get(name))) return paginate([], { idOf: () => '' });
          const namespaces = (await scheduler.namespaces.list())
            .map((ns) => ns.Name)
            .filter((ns) => (wanted === '*' || ns === wanted) && who.acl.allowNamespaceOperation(ns, 'list-jobs'));
          const stubs = (await jobsInPool(scheduler.core.store, namespaces, name)).map((job) =>
            Object.fromEntries(jobStubFields.filter((field) => field in job).map((field) => [field, job[field]])),
          );
          return paginate(stubs, { ...query, expression, idOf: (job) => `${job.Namespace}.${job.ID}` });
        },
      };
    },
  }),
];
