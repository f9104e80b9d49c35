/**
 * `GET /v1/event/stream`: newline-delimited JSON. A `{}` heartbeat first and then at a fixed interval; the
 * backlog from `index`, then live events; the events of one index on one line. The stream ends when the
 * client goes away, when its token no longer grants its topics (deleted, expired, a policy or role changed:
 * see `openStream`), or at `streamLimitMs` (in AWS a Lambda response stream must end before the function's
 * time limit; the client reconnects with the last index it saw).
 */
import * as z from 'zod/mini';
import { permissionDenied } from '../http/nomad.ts';
import { route, type SchedulerRoute } from '../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../composition/scheduler-core.ts';
import type { SchedulerEvent } from '../state.ts';

export interface TopicFilter {
  /** Topic name or `*`. */
  topic: string;
  /** Filter key or `*`. */
  key: string;
}

const managementTopics = new Set([
  'ACLToken',
  'ACLPolicy',
  'ACLRole',
  'ACLAuthMethod',
  'ACLBindingRule',
  'NodePool',
  'Operator',
]);
const jobTopics = new Set(['Job', 'Allocation', 'Deployment', 'Evaluation', 'Service']);
const nodeTopics = new Set(['Node', 'NodeDrain']);
/** The reference calls the role topic both `ACLRoles` and `ACLRole`; events are published on `ACLRole`. */
const topicAliases: Record<string, string> = { ACLRoles: 'ACLRole' };

/** `Topic` or `Topic:FilterKey`, split; undefined when the value is neither. */
function topicFilter(value: string): TopicFilter | undefined {
  const separator = value.indexOf(':');
  const topic = separator < 0 ? value : value.slice(0, separator);
  const key = separator < 0 ? '*' : value.slice(separator + 1);
  if (!/^(\*|[A-Za-z]+)$/.test(topic) || key === '' || key.includes(':')) return undefined;
  return { topic: topicAliases[topic] ?? topic, key };
}

/** A `topic` query parameter as its filter, or a 400 saying what is wrong (the route wrapper parses it). */
const topicParameter = z.pipe(
  z.string(),
  z.transform((value, ctx): TopicFilter => {
    const filter = topicFilter(value);
    if (filter) return filter;
    ctx.issues.push({
      code: 'custom',
      input: value,
      message: `Invalid topic query: "${value}": use Topic or Topic:FilterKey`,
    });
    return z.NEVER;
  }),
);

/** The reference's per-topic ACL: management for `*` and the ACL topics, `read-job` for job topics, `node:read` for nodes. */
export function allowedTopics(caller: SchedulerCaller, topics: TopicFilter[], namespace: string): boolean {
  if (caller.management) return true;
  return topics.every(({ topic }) => {
    if (topic === '*' || managementTopics.has(topic)) return false;
    if (jobTopics.has(topic)) {
      return namespace === '*'
        ? caller.acl.allowAllNamespaces('read-job')
        : caller.acl.allowNamespaceOperation(namespace, 'read-job');
    }
    if (nodeTopics.has(topic)) return caller.acl.allow('node', 'read');
    return false;
  });
}

/**
 * Whether the caller may read this one event: the subscription's check (`allowedTopics`) made again for the event's
 * own topic and namespace, as Nomad's subscription filter does. A token with `namespace "*" { policy = "read" }`
 * and a deny on `prod` subscribes to `namespace=*` but never receives a `prod` event. An event without a namespace
 * is the stream's.
 */
export function eventReadable(caller: SchedulerCaller, event: SchedulerEvent, streamNamespace: string): boolean {
  if (caller.management) return true;
  if (managementTopics.has(event.Topic)) return false;
  if (jobTopics.has(event.Topic)) {
    const namespace = event.Namespace || streamNamespace;
    return namespace === '*'
      ? caller.acl.allowAllNamespaces('read-job')
      : caller.acl.allowNamespaceOperation(namespace, 'read-job');
  }
  if (nodeTopics.has(event.Topic)) return caller.acl.allow('node', 'read');
  return false;
}

export function eventMatches(event: SchedulerEvent, topics: TopicFilter[], namespace: string): boolean {
  if (namespace !== '*' && event.Namespace !== '' && event.Namespace !== namespace) return false;
  return topics.some(
    ({ topic, key }) =>
      (topic === '*' || topic === event.Topic) &&
      (key === '*' || key === event.Key || (event.FilterKeys ?? []).includes(key)),
  );
}

export interface StreamOptions {
  heartbeatMs: number;
  /** End the stream after this long (ms); none means until the client goes away. */
  limitMs?: number;
}

/** Nomad's `ErrSubscriptionClosed`: the last line of a stream whose token no longer grants its topics. */
export const SUBSCRIPTION_CLOSED = 'subscription closed by server, client should resubscribe';
/** Nomad's `ErrTokenExpired`: the last line of a stream whose token's ExpirationTime has passed. */
export const TOKEN_EXPIRED = 'ACL token expired';

/** The ACL topics whose events may change what a stream's token grants (the scheduler publishes them in the write's transaction). */
const aclChangeTopics = new Set(['ACLToken', 'ACLPolicy', 'ACLRole']);

/** Whether an event may change what `caller` is granted: its own token's events, and any policy or role event. */
function changesAccess(event: SchedulerEvent, caller: SchedulerCaller): boolean {
  if (!aclChangeTopics.has(event.Topic)) return false;
  if (event.Topic === 'ACLToken') return caller.token !== undefined && event.Key === caller.token.AccessorID;
  return true;
}

/** An ACL change a stream has read in the buffer, at its index (the changed item's ModifyIndex). */
interface AclChange {
  topic: string;
  type: string;
  key: string;
  index: number;
}

/**
 * The stream's caller resolved again from the table (Nomad's `aclObjFromSnapshotForTokenSecretID`): the token by its
 * accessor, its policies and its roles' policies as they are now; anonymous resolves the anonymous policy again.
 * An item read older than a change the stream has already seen (a replica region's table may show the event before
 * the item the same transaction changed) ends the stream rather than trusting it: the client resubscribes.
 * Returns the message the stream ends with when access has ended.
 */
async function recheck(
  scheduler: Scheduler,
  caller: SchedulerCaller,
  request: { topics: TopicFilter[]; namespace: string },
  changes: AclChange[],
): Promise<SchedulerCaller | { ended: string }> {
  const closed = { ended: SUBSCRIPTION_CLOSED };
  let fresh: SchedulerCaller;
  if (caller.token) {
    const token = await scheduler.tokens.get(caller.token.AccessorID);
    if (!token) return closed;
    if (scheduler.tokens.expired(token)) return { ended: TOKEN_EXPIRED };
    if (
      changes.some(
        (change) =>
          change.topic === 'ACLToken' && (change.type === 'ACLTokenDeleted' || token.ModifyIndex < change.index),
      )
    )
      return closed;
    fresh = await scheduler.callerOf(token);
  } else {
    fresh = await scheduler.resolve(undefined);
  }
  for (const change of changes) {
    let seen: { ModifyIndex: number } | undefined;
    if (change.topic === 'ACLPolicy' && fresh.policyNames.includes(change.key))
      seen = await scheduler.policies.get(change.key);
    if (change.topic === 'ACLRole' && fresh.token?.Roles.some((link) => link.ID === change.key))
      seen = await scheduler.roles.get(change.key);
    if (seen && seen.ModifyIndex < change.index) return closed;
  }
  return allowedTopics(fresh, request.topics, request.namespace) ? fresh : closed;
}

/**
 * The stream of one subscription. Access is checked again, as Nomad's event broker does on every ACL change
 * (`handleACLUpdates`), before any event is delivered: the caller's ACL is cached and marked stale by an event of
 * its own token, or of any policy or role, in the buffer the stream reads (so an ACL change in another process or
 * Lambda is seen in order, before any event written after it); a stale ACL is resolved again from the table before
 * the next delivery and before the stream waits. The token's ExpirationTime is compared with the scheduler's clock
 * before each delivery and at least once a second; the whole ACL is resolved again at each heartbeat. When the
 * token is gone or expired, or no longer grants every requested topic, the stream writes Nomad's error message as
 * its last line and ends; a new stream with the token is refused (403).
 */
export function openStream(
  scheduler: Scheduler,
  caller: SchedulerCaller,
  request: { index: number; topics: TopicFilter[]; namespace: string },
  options: StreamOptions,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let closed = false;
  let release: (() => void) | undefined;
  const broker = scheduler.events;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      release = broker.attach();
      const startedAt = Date.now();
      const finish = (message?: string) => {
        if (closed) return;
        closed = true;
        release?.();
        try {
          if (message !== undefined) controller.enqueue(encoder.encode(`${message}\n`));
          controller.close();
        } catch {
          // Already cancelled by the client.
        }
      };
      const send = (line: unknown) => {
        if (!closed) controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
      };
      let current = caller;
      /** The ACL changes read since the caller was last resolved: while there are any, its cached ACL is stale. */
      let changes: AclChange[] = [];
      let stale = false;
      /** Resolves the caller again; false (and the stream ended) when access has ended. */
      const stillAllowed = async (): Promise<boolean> => {
        const verdict = await recheck(scheduler, current, request, changes);
        if ('ended' in verdict) {
          finish(verdict.ended);
          return false;
        }
        current = verdict;
        changes = [];
        stale = false;
        return true;
      };
      const expired = () => current.token !== undefined && scheduler.tokens.expired(current.token);
      void (async () => {
        send({});
        let cursor = request.index;
        let lastBeat = Date.now();
        try {
          while (!closed) {
            const batches = await broker.after(cursor);
            for (const batch of batches) {
              if (closed) return;
              for (const event of batch.events) {
                if (!changesAccess(event, current)) continue;
                changes.push({ topic: event.Topic, type: event.Type, key: event.Key, index: batch.index });
                stale = true;
              }
              const matching = batch.events.filter((event) => eventMatches(event, request.topics, request.namespace));
              if (matching.length > 0) {
                if (expired()) return finish(TOKEN_EXPIRED);
                if (stale && !(await stillAllowed())) return;
                // Each event against its own namespace (a `namespace=*` stream is not a grant of every namespace).
                const events = matching.filter((event) => eventReadable(current, event, request.namespace));
                if (events.length > 0) send({ Index: batch.index, Events: events });
              }
              cursor = batch.index;
            }
            if (expired()) return finish(TOKEN_EXPIRED);
            if (stale && !(await stillAllowed())) return;
            const now = Date.now();
            if (now - lastBeat >= options.heartbeatMs) {
              if (!(await stillAllowed())) return;
              send({});
              lastBeat = now;
            }
            if (options.limitMs !== undefined && now - startedAt >= options.limitMs) break;
            await broker.wait(Math.max(1, Math.min(options.heartbeatMs - (Date.now() - lastBeat), 1000)));
          }
        } catch (error) {
          scheduler.core.log.error('event stream failed', {
            error: error instanceof Error ? error.message : String(error),
          });
        }
        finish();
      })();
    },
    cancel() {
      closed = true;
      release?.();
    },
  });
}

export const eventRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/event/stream',
    summary:
      'Stream events as newline-delimited JSON: the backlog from `index`, then live events, with `{}` heartbeats.',
    access: 'token',
    query: {
      index: z
        .optional(
          z.pipe(
            z
              .string()
              .check(z.refine((index) => /^\d+$/.test(index), { error: 'Unable to parse index: invalid syntax' })),
            z.transform(Number),
          ),
        )
        .check(z.describe('Send the buffered events after this index first (default 0: the whole buffer).')),
      topic: z
        .optional(z.array(topicParameter))
        .check(
          z.describe(
            'A topic to receive, `Topic` or `Topic:FilterKey` (`*` for all); repeatable; default every topic.',
          ),
        ),
      namespace: z
        .optional(z.string())
        .check(z.describe('The namespace of the job events (default `default`; `*` for all).')),
    },
    returns: 'A stream of JSON lines: `{}` heartbeats and `{"Index": …, "Events": […]}` batches.',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const namespace = query.namespace || 'default';
      const topics = query.topic?.length ? query.topic : [{ topic: '*', key: '*' }];
      if (!allowedTopics(who, topics, namespace)) throw permissionDenied();
      const limitMs = scheduler.options.streamLimitMs;
      const body = openStream(
        scheduler,
        who,
        { index: query.index ?? 0, topics, namespace },
        {
          heartbeatMs: scheduler.options.heartbeatMs ?? 10_000,
          ...(limitMs ? { limitMs } : {}),
        },
      );
      return { stream: body, headers: { 'content-type': 'application/json', 'cache-control': 'no-cache' } };
    },
  }),
];
