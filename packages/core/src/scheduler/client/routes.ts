/**
 * The client protocol (`docs/client-protocol.md`): Nomad's client RPCs (`Node.Register`, `Node.UpdateStatus`,
 * `Node.EmitEvents`, `Node.GetClientAllocs`) as HTTP JSON under `/v1/client/`, and the introduction tokens that let
 * a new node register (`/v1/acl/identity/client-introduction-token`, Nomad 1.11's route). A node authenticates with
 * its SecretID or its identity JWT in `X-Nomad-Token`; neither is an ACL token, so these routes resolve it here
 * (`access: 'anyone'`) and every other route refuses it as an unknown token.
 */
import * as z from 'zod/mini';
import { DurationError, parseGoDuration } from '../../lib/duration.ts';
import { badRequest, DomainError } from '../../lib/errors.ts';
import { agentMustSee } from '../cluster/allocations/store.ts';
import { clientAllocUpdateBody, maxClientUpdates } from '../cluster/allocations/client-body.ts';
import {
  type ClientNode,
  clientEventBody,
  clientNodeBody,
  validateClientEvents,
  validPoolName,
} from '../cluster/nodes/model.ts';
import type { NodeBeat, NodeCredential } from '../cluster/nodes/store.ts';
import { allocationRefusal, serviceBody, validateServices } from '../cluster/services/model.ts';
import { permissionDenied } from '../http/nomad.ts';
import { route, type SchedulerRoute } from '../http/route.ts';
import type { Scheduler } from '../composition/scheduler-core.ts';
import { introductionTtl, isJwt, type NodeIdentityClaims, renewalDue, type VerifiedIdentity } from './identity.ts';

const nodeId = z.string().check(z.describe('The node ID (a UUID).'));

/** The credential of a client call, as presented (`X-Nomad-Token` or `Authorization: Bearer`); none is 403. */
function required(credential: string | undefined): string {
  if (!credential) throw permissionDenied();
  return credential;
}

/** A node's credential for node `id`: its secret (checked by the store against the stored hash) or its identity. */
async function nodeCredential(
  scheduler: Scheduler,
  credential: string,
  id: string,
): Promise<{ credential: NodeCredential; identity?: NodeIdentityClaims }> {
  if (!isJwt(credential)) return { credential: { secretHash: scheduler.nodes.secretHash(id, credential) } };
  const identity = await scheduler.identities.verify(credential);
  if (identity?.kind !== 'node' || identity.nodeId !== id) throw permissionDenied();
  return { credential: { identity: true }, identity };
}

/** `TTL` as Nomad's request decodes it: a Go duration string or nanoseconds; 0 or absent is the default. */
const ttlField = z
  .optional(
    z.pipe(
      z.union([z.string(), z.number()]),
      z.transform((value, ctx): number => {
        if (typeof value === 'number') return value / 1e6;
        if (value === '') return 0;
        try {
          // Go's ParseDuration takes a sign; a negative TTL is then refused by name.
          return value.startsWith('-') ? -parseGoDuration(value.slice(1)) * 1000 : parseGoDuration(value) * 1000;
        } catch (error) {
          if (!(error instanceof DurationError)) throw error;
          ctx.issues.push({ code: 'custom', input: value, message: `invalid duration "${value.slice(0, 64)}"` });
          return z.NEVER;
        }
      }),
    ),
  )
  .check(z.describe('How long the token lives: a Go duration (`10m`) or nanoseconds; default 5 minutes, at most 30.'));

/**
 * Who may register `node`, given what is stored: a known node by its own secret (the store compares the body's
 * SecretID with the stored hash), presented as the credential too, or by its identity (expired or not), or by an
 * introduction token; a new node only by a valid introduction token for its pool (and name, when the token has one).
 */
function admission(
  node: ClientNode,
  credential: string,
  verified: VerifiedIdentity | undefined,
  expiredIdentity: VerifiedIdentity | undefined,
): (beat: NodeBeat | undefined) => void {
  const pool = node.NodePool || 'default';
  const introduced =
    verified?.kind === 'introduction' &&
    verified.pool === pool &&
    (verified.name === '' || verified.name === node.Name);
  return (beat) => {
    if (!beat) {
      if (!introduced) throw permissionDenied();
      return;
    }
    const ownSecret = credential === node.SecretID;
    const ownIdentity = expiredIdentity?.kind === 'node' && expiredIdentity.nodeId === node.ID;
    if (!ownSecret && !ownIdentity && !introduced) throw permissionDenied();
  };
}

export const clientRoutes: SchedulerRoute[] = [
  route({
    method: ['PUT', 'POST'],
    path: '/v1/acl/identity/client-introduction-token',
    summary: 'Create a node introduction token (a JWT a new node registers with).',
    access: 'token',
    body: z.object({
      NodeName: z.optional(z.string()).check(z.describe('The node name the token is for (any name when empty).')),
      NodePool: z.optional(z.string()).check(z.describe('The node pool the token is for (default `default`).')),
      TTL: ttlField,
    }),
    returns: '`{"JWT": "<introduction token>"}`.',
    handler: async ({ scheduler, caller, body }) => {
      const who = await caller();
      if (!who.acl.allow('node', 'write')) throw permissionDenied();
      const pool = body.NodePool || 'default';
      if (!validPoolName.test(pool)) throw badRequest(`invalid node pool: invalid name "${pool.slice(0, 64)}"`);
      const name = body.NodeName ?? '';
      if (name.length > 256) throw badRequest('NodeName is longer than 256 characters');
      const requested = body.TTL ?? 0;
      if (requested < 0) throw badRequest('TTL may not be negative');
      const ttlMs = requested === 0 ? introductionTtl.defaultMs : Math.min(requested, introductionTtl.maxMs);
      return { json: { JWT: await scheduler.identities.introduction(pool, name, ttlMs) } };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/client/register',
    summary: 'Register a node, or register it again (Nomad’s `Node.Register`).',
    description:
      'A new node presents an introduction token for its pool (and name); a known node its SecretID or identity, and its SecretID in the body.',
    access: 'anyone',
    body: z.object({ Node: z.optional(clientNodeBody).check(z.describe('The node (Nomad `structs.Node`).')) }),
    returns:
      '`{"HeartbeatTTL", "Index", "NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "AllocIndex", "SignedIdentity"}`; `HeartbeatTTL` in nanoseconds; `AllocIndex` the node’s allocation index.',
    handler: async ({ scheduler, body, presented }) => {
      const credential = required(presented);
      if (!body.Node) throw badRequest('missing node for client registration');
      const node = body.Node;
      const verified = isJwt(credential) ? await scheduler.identities.verify(credential) : undefined;
      const anyAge = isJwt(credential)
        ? await scheduler.identities.verify(credential, { allowExpired: true })
        : undefined;
      const registered = await scheduler.nodes.register(node, admission(node, credential, verified, anyAge));
      const stillValid = verified?.kind === 'node' && !renewalDue(verified, scheduler.core.clock.now());
      const identity = stillValid
        ? undefined
        : await scheduler.identities.node(registered.node, registered.identityTtlMs);
      return {
        json: {
          HeartbeatTTL: registered.ttlMs * 1e6,
          Index: registered.index,
          NodeModifyIndex: registered.index,
          EvalIDs: [],
          EvalCreateIndex: 0,
          AllocIndex: registered.allocIndex,
          ...(identity ? { SignedIdentity: identity } : {}),
        },
        index: registered.index,
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/client/node/:id/status',
    summary: 'A node’s heartbeat and status (Nomad’s `Node.UpdateStatus`).',
    description:
      'A heartbeat that changes nothing moves the node’s deadline only: no index, no event. An accepted heartbeat that finds the node sweep’s lease lapsed runs the sweep before it answers.',
    access: 'anyone',
    params: { id: nodeId },
    body: z.object({
      Status: z.optional(z.string()).check(z.describe('`initializing` or `ready`.')),
      NodeEvent: z.optional(z.nullable(clientEventBody)).check(z.describe('A node event to record.')),
    }),
    returns:
      '`{"HeartbeatTTL", "Index", "NodeModifyIndex", "EvalIDs", "EvalCreateIndex", "AllocIndex"}`, and `SignedIdentity` when the identity was renewed; the agent reads its allocations only when `AllocIndex` moved.',
    handler: async ({ scheduler, params, body, presented }) => {
      const { credential, identity } = await nodeCredential(scheduler, required(presented), params.id);
      const status = body.Status ?? '';
      if (status !== 'initializing' && status !== 'ready') throw badRequest('invalid status for node');
      if (body.NodeEvent) validateClientEvents([body.NodeEvent]);
      const beat = await scheduler.nodes.heartbeat(params.id, credential, status, body.NodeEvent ?? undefined);
      // An accepted beat runs the node sweep when its lease has lapsed (once per period across every process).
      await scheduler.nodeSweep.sweepIfDue();
      let renewed: string | undefined;
      if (identity && renewalDue(identity, scheduler.core.clock.now())) {
        const node = await scheduler.nodes.get(params.id);
        if (node) renewed = await scheduler.identities.node(node, await scheduler.nodes.identityTtlMs(node.NodePool));
      }
      return {
        json: {
          HeartbeatTTL: beat.ttlMs * 1e6,
          Index: beat.index,
          NodeModifyIndex: beat.written ?? 0,
          EvalIDs: [],
          EvalCreateIndex: 0,
          AllocIndex: beat.allocIndex,
          ...(renewed ? { SignedIdentity: renewed } : {}),
        },
        index: beat.index,
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/client/node/:id/events',
    summary: 'Record node events (Nomad’s `Node.EmitEvents`).',
    access: 'anyone',
    params: { id: nodeId },
    body: z.object({
      Events: z.optional(z.nullable(z.array(clientEventBody))).check(z.describe('1 to 10 node events.')),
    }),
    returns: '`{"Index": n}`.',
    handler: async ({ scheduler, params, body, presented }) => {
      const { credential } = await nodeCredential(scheduler, required(presented), params.id);
      const events = body.Events ?? [];
      validateClientEvents(events);
      const index = await scheduler.nodes.emitEvents(params.id, credential, events);
      return { json: { Index: index }, index };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/client/node/:id/allocations',
    summary: 'The allocations a node should run, as a map of ID to modify index (Nomad’s `Node.GetClientAllocs`).',
    description:
      'The agent reads it (without blocking) when the heartbeat’s `AllocIndex` moved; it also blocks on `index`/`wait` as every blocking query. Every allocation on the node whose client status is not terminal: those to run, and those told to stop that the agent has not yet reported stopped.',
    access: 'anyone',
    params: { id: nodeId },
    blocking: ['allocs'],
    // The node, authenticated by the handler before any wait, holds a node's places, not an anonymous caller's second.
    waitsAs: async ({ params }) => `node#${params.id}`,
    returns: '`{"Allocs": {"<alloc ID>": <AllocModifyIndex>}, "Index": n}`.',
    handler: async ({ scheduler, params, presented }) => {
      const { credential } = await nodeCredential(scheduler, required(presented), params.id);
      const beat = await scheduler.nodes.beat(params.id);
      if (!beat) throw new DomainError('not-found', 'node not found');
      if ('secretHash' in credential && credential.secretHash !== beat.secretHash) throw permissionDenied();
      return {
        read: async () => {
          // The index first: an allocation written after it is then either in the map or announced by a later one.
          const index = await scheduler.state.tableIndex(['allocs']);
          const allocs = (await scheduler.allocations.onNode(params.id)).filter(agentMustSee);
          return {
            Allocs: Object.fromEntries(allocs.map((alloc) => [alloc.ID, alloc.AllocModifyIndex])),
            Index: index,
          };
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/client/allocation/:allocId',
    summary: 'One of the node’s own allocations in full, its job rehydrated (Nomad’s `Alloc.GetAllocs` from a client).',
    access: 'anyone',
    params: { allocId: z.string().check(z.describe('The allocation ID.')) },
    returns: 'The Allocation, with `Job` the job at the allocation’s `JobVersion`.',
    handler: async ({ scheduler, params, presented }) => {
      const credential = required(presented);
      const alloc = await scheduler.allocations.get(params.allocId);
      if (!alloc) throw new DomainError('not-found', 'alloc not found');
      await ownNode(scheduler, credential, alloc.NodeID);
      return { json: await scheduler.allocations.withJob(alloc), index: await scheduler.state.tableIndex(['allocs']) };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/client/node/:id/allocations',
    summary: 'A node reports its allocations’ client state (Nomad’s `Node.UpdateAlloc`).',
    description: `Only the node’s own allocations; the client’s fields only (status, description, task states, deployment health); at most ${maxClientUpdates} per call; one write, one index, an \`AllocationUpdated\` event per changed allocation, an \`alloc-failure\` evaluation for a job whose allocation failed, and a changed deployment health counted in its deployment (then checked by the deployment watcher).`,
    access: 'anyone',
    params: { id: nodeId },
    body: z.object({
      Allocs: z
        .optional(z.nullable(z.array(clientAllocUpdateBody)))
        .check(z.describe(`The allocations’ client state, 1 to ${maxClientUpdates}.`)),
    }),
    returns: '`{"Index": n}`.',
    handler: async ({ scheduler, params, body, presented }) => {
      const beat = await ownNode(scheduler, required(presented), params.id);
      const updates = body.Allocs ?? [];
      if (updates.length === 0) throw badRequest('must update at least one allocation');
      if (updates.length > maxClientUpdates)
        throw badRequest(`at most ${maxClientUpdates} allocations may be updated at once; got ${updates.length}`);
      if (beat.status === 'down' || beat.status === 'disconnected')
        throw badRequest(`node ${params.id} is not allowed to update allocs while in status ${beat.status}`);
      const { index, deployments } = await scheduler.allocations.updateFromClient(params.id, updates);
      // Nomad's deployment watcher sees the new health: a failure, a promotion or the next batch's evaluation. The
      // report is written whatever the check does; a check that fails here runs again in the sweep.
      for (const id of deployments)
        await scheduler.deploymentWatcher.check(id).catch((error) =>
          scheduler.core.log.error('deployment check failed; the sweep checks it again', {
            deployment: id,
            error: String(error),
          }),
        );
      return { json: { Index: index }, index };
    },
  }),
];

/**
 * A node's service registrations (Nomad's `ServiceRegistration.Upsert` and `DeleteByID`, RPC-only in Nomad). A node
 * registers only with its own `NodeID` (Nomad's `AuthorizeSameNodeServiceRegistrations`) and deletes only its own
 * registrations; the credential is checked against the node the registration names, inside the write.
 */
export const clientServiceRoutes: SchedulerRoute[] = [
  route({
    method: ['PUT', 'POST'],
    path: '/v1/client/services',
    summary: 'Register or update a node’s service registrations (Nomad’s `ServiceRegistration.Upsert`).',
    description:
      'Every registration names the calling node as `NodeID`; one equal to what is stored writes nothing. One transaction, one index, a `ServiceRegistration` event per registration written.',
    access: 'anyone',
    body: z.object({
      Services: z
        .optional(z.nullable(z.array(serviceBody)))
        .check(z.describe('The registrations (Nomad `structs.ServiceRegistration`), 1 to 32.')),
    }),
    returns: '`{"Index": n}`.',
    handler: async ({ scheduler, body, presented }) => {
      const secret = required(presented);
      const services = body.Services ?? [];
      if (services.length === 0) throw badRequest('Services must hold at least one registration');
      const nodeIds = new Set(services.map((service) => service.NodeID));
      const [nodeId] = nodeIds;
      // Nomad's AuthorizeSameNode: every registration is the caller's own node's.
      if (nodeIds.size !== 1 || nodeId === undefined) throw permissionDenied();
      const { credential } = await nodeCredential(scheduler, secret, nodeId);
      const beat = await scheduler.nodes.authenticated(nodeId, credential);
      const registrations = validateServices(services, beat.datacenter);
      const index = await scheduler.services.upsert(registrations, async () => {
        // Inside the write, so what it finds holds when the write lands: the node is still there with this
        // credential, and each allocation is the node's own, not terminal, of the registration's namespace and job.
        await scheduler.nodes.authenticated(nodeId, credential);
        const allocations = new Map(
          await Promise.all(
            [...new Set(registrations.map((registration) => registration.AllocID))].map(
              async (id) => [id, await scheduler.allocations.get(id)] as const,
            ),
          ),
        );
        for (const registration of registrations) {
          const refusal = allocationRefusal(registration, allocations.get(registration.AllocID), nodeId);
          if (refusal) throw refusal;
        }
      });
      return { json: { Index: index }, index };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/client/service/:serviceId',
    summary: 'Delete one of the node’s service registrations (Nomad’s `ServiceRegistration.DeleteByID`).',
    description:
      'Only a registration of the calling node; 404 `service registration not found` when there is none. One `ServiceDeregistration` event.',
    access: 'anyone',
    params: { serviceId: z.string().check(z.describe('The registration ID.')) },
    returns: '`{"Index": n}`.',
    handler: async ({ scheduler, params, presented }) => {
      const secret = required(presented);
      const index = await scheduler.services.deleteById(params.serviceId, async (registration) => {
        const { credential } = await nodeCredential(scheduler, secret, registration.NodeID);
        await scheduler.nodes.authenticated(registration.NodeID, credential).catch((error: unknown) => {
          // Another node's registration: the caller learns nothing about that node.
          throw error instanceof DomainError && error.kind === 'not-found' ? permissionDenied() : error;
        });
      });
      return { json: { Index: index }, index };
    },
  }),
];
/** The node's beat when `credential` is node `id`'s own (its secret or its identity); 404 / 403 otherwise. */
async function ownNode(scheduler: Scheduler, credential: string, id: string): Promise<NodeBeat> {
  const { credential: presentedAs } = await nodeCredential(scheduler, credential, id);
  const beat = await scheduler.nodes.beat(id);
  if (!beat) throw new DomainError('not-found', 'node not found');
  if ('secretHash' in presentedAs && presentedAs.secretHash !== beat.secretHash) throw permissionDenied();
  return beat;
}
