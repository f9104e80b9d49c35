/**
 * Cluster nodes over HTTP, as Nomad serves them (`command/agent/node_endpoint.go`): `/v1/nodes`, `/v1/node/:id`,
 * `/v1/node/:id/{allocations,drain,eligibility,purge,evaluate}`. Reads need `node:read`, writes `node:write`.
 * Where Nomad's RPC answers a plain error (a 500 over its HTTP API: `node not found`, eligible while draining), this
 * service answers the 4xx it means, with Nomad's text.
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { listParameters, paginate, parsedFilter } from '../../http/list-query.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { SchedulerCaller } from '../../composition/scheduler-core.ts';
import { allocationJson } from '../allocations/json.ts';
import { withJobs } from '../allocations/stub.ts';
import { nodeStub, sanitized } from './model.ts';

const nodeId = z.string().check(z.describe('The node ID (a UUID).'));

/** `?os`, `?resources`: flags, set when present with any value but `false`. */
const flag = (description: string) =>
  z
    .optional(
      z.pipe(
        z.string(),
        z.transform((value) => value !== 'false'),
      ),
    )
    .check(z.describe(description));

async function needs(caller: () => Promise<SchedulerCaller>, level: 'read' | 'write'): Promise<SchedulerCaller> {
  const who = await caller();
  if (!who.acl.allow('node', level)) throw permissionDenied();
  return who;
}

/** The answer to a node write (Nomad's `NodeUpdateResponse` / `NodeDrainUpdateResponse`). */
const updateResponse = (index: number, evalIds: string[] = []) => ({
  EvalIDs: evalIds.length > 0 ? evalIds : null,
  EvalCreateIndex: evalIds.length > 0 ? index : 0,
  NodeModifyIndex: index,
  Index: index,
});

export const nodeRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/nodes',
    summary: 'List the cluster’s nodes (stubs), sorted by ID.',
    access: 'token',
    query: {
      prefix: z.optional(z.string()).check(z.describe('Only nodes whose ID starts with this.')),
      os: flag('Add `Attributes` with `os.name` to each stub.'),
      resources: flag('Add `NodeResources` and `ReservedResources` to each stub.'),
      ...listParameters,
    },
    blocking: ['nodes'],
    returns: 'The node stubs (Nomad `NodeListStub`s), sorted by ID; `X-Nomad-NextToken` when a page follows.',
    handler: async ({ scheduler, caller, query }) => {
      await needs(caller, 'read');
      const expression = await parsedFilter(query.filter);
      return {
        read: async () => {
          const nodes = await scheduler.nodes.list(query.prefix ? { prefix: query.prefix } : {});
          const fields = { os: query.os ?? false, resources: query.resources ?? false };
          return paginate(
            nodes.map((node) => nodeStub(node, fields)),
            { ...query, expression, idOf: (stub) => stub.ID },
          );
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/node/:id',
    summary: 'Read a node (its `SecretID` is never shown).',
    access: 'token',
    params: { id: nodeId },
    blocking: ['nodes'],
    returns: 'The node (Nomad `Node`), `SecretID` empty.',
    handler: async ({ scheduler, caller, params }) => {
      await needs(caller, 'read');
      return {
        read: async () => {
          const node = await scheduler.nodes.get(params.id);
          if (!node) throw notFound('node not found');
          return sanitized(node);
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/node/:id/allocations',
    summary: 'List the allocations placed on a node.',
    description:
      'Needs `node:read`; only the allocations of namespaces where the caller has `read-job` are listed, as Nomad’s `Node.GetAllocs`.',
    access: 'token',
    params: { id: nodeId },
    blocking: ['allocs'],
    returns: 'The allocations (Nomad `Allocation`s, their jobs rehydrated), sorted by ID.',
    handler: async ({ scheduler, caller, params }) => {
      const who = await needs(caller, 'read');
      return {
        read: async () =>
          (
            await withJobs(
              scheduler.allocations,
              (
                await scheduler.allocations.onNode(params.id)
              ).filter((alloc) => who.acl.allowNamespaceOperation(alloc.Namespace, 'read-job')),
            )
          ).map(allocationJson),
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/:id/drain',
    summary: 'Drain a node, update its drain, or cancel it (`DrainSpec: null`).',
    access: 'token',
    params: { id: nodeId },
    body: z.object({
      DrainSpec: z
        .optional(
          z.nullable(
            z.object({
              Deadline: z
                .optional(z.number().check(z.int()))
                .check(
                  z.describe('Nanoseconds until what is left is stopped; 0 no deadline; -1s (`-1000000000`) force.'),
                ),
              IgnoreSystemJobs: z.optional(z.boolean()).check(z.describe('Leave system jobs’ allocations running.')),
            }),
          ),
        )
        .check(z.describe('The drain, or null to cancel it.')),
      MarkEligible: z.optional(z.boolean()).check(z.describe('When cancelling, make the node eligible again.')),
      Meta: z
        .optional(z.nullable(z.record(z.string(), z.string())))
        .check(z.describe('Operator metadata kept in the node’s `LastDrain`.')),
      NodeID: z.optional(z.string()).check(z.describe('Ignored: the node is the one in the path.')),
    }),
    returns: '`{"NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "Index"}`.',
    handler: async ({ scheduler, caller, params, body }) => {
      const who = await needs(caller, 'write');
      const spec = body.DrainSpec
        ? { Deadline: body.DrainSpec.Deadline ?? 0, IgnoreSystemJobs: body.DrainSpec.IgnoreSystemJobs ?? false }
        : null;
      const { index } = await scheduler.nodes.drain(params.id, {
        spec,
        markEligible: body.MarkEligible ?? false,
        meta: body.Meta ?? null,
        accessorId: who.token?.AccessorID ?? '',
      });
      return { json: updateResponse(index), index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/:id/eligibility',
    summary: 'Mark a node eligible or ineligible for scheduling.',
    access: 'token',
    params: { id: nodeId },
    body: z.object({
      Eligibility: z.optional(z.string()).check(z.describe('`eligible` or `ineligible`.')),
      NodeID: z.optional(z.string()).check(z.describe('Ignored: the node is the one in the path.')),
    }),
    returns: '`{"NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "Index"}`.',
    handler: async ({ scheduler, caller, params, body }) => {
      await needs(caller, 'write');
      const eligibility = body.Eligibility ?? '';
      if (eligibility !== 'eligible' && eligibility !== 'ineligible')
        throw badRequest(`invalid scheduling eligibility "${eligibility.slice(0, 64)}"`);
      const { index, evalIds } = await scheduler.nodes.setEligibility(params.id, eligibility);
      return { json: updateResponse(index, evalIds), index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/:id/purge',
    summary: 'Remove a node from the cluster (it must be introduced again to come back).',
    access: 'token',
    params: { id: nodeId },
    returns: '`{"NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "Index"}`.',
    handler: async ({ scheduler, caller, params }) => {
      await needs(caller, 'write');
      const { index, evalIds } = await scheduler.nodes.purge(params.id);
      return { json: updateResponse(index, evalIds), index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/node/:id/evaluate',
    summary: 'Create evaluations for the jobs with allocations on a node (and a ready node’s system jobs).',
    description: 'A node that runs nothing gets no evaluation, and nothing is written (`EvalIDs` null).',
    access: 'token',
    params: { id: nodeId },
    returns: '`{"NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "Index"}`.',
    handler: async ({ scheduler, caller, params }) => {
      await needs(caller, 'write');
      const { node, evalIds, index } = await scheduler.nodes.evaluate(params.id);
      if (evalIds.length === 0) return { json: updateResponse(node.ModifyIndex), index: node.ModifyIndex };
      return {
        json: { EvalIDs: evalIds, EvalCreateIndex: index, NodeModifyIndex: node.ModifyIndex, Index: index },
        index,
      };
    },
  }),
];
