import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  allSecretsFamilies,
  backendsOf,
  type Core,
  createCore,
  defaultMountsOf,
  fileKeySource,
  initialize,
  initialisation,
  onTableChange,
  periodicJobs,
  secretsNodeListener,
  sweepExpired,
} from '@keyhaven/core';
import type { Clock } from '@keyhaven/core/lib/clock.ts';
import type { Logger } from '@keyhaven/core/lib/log.ts';
import { storeClientOptions } from '@keyhaven/core/storage/store-client.ts';
import { schedulerAuditFromEnvironment } from '@keyhaven/core/scheduler/audit.ts';
import { schedulerNodeListener } from '@keyhaven/core/scheduler/composition/scheduler-app.ts';
import { runTriggeredEvaluations } from '@keyhaven/core/scheduler/sweep.ts';
import { consoleHandler } from '@keyhaven/ui/serve.ts';
import { type DynamoDbLocal, localClientConfig, sharedTestCredentials, startDynamoDbLocal } from './dynamodb-local.ts';
import { guardedListener } from './guarded-listener.ts';
import { allowedHosts, hostChecked } from './host-check.ts';
import { countCalls, InFlight, unansweredRequests } from './in-flight.ts';
import { closeGracefully, listenWithListMethod } from './list-method.ts';
import { type StreamPoller, startStreamPoller } from './stream-poller.ts';
import { ensureTable } from './table.ts';

/** How long a start waits for the stream poller to be positioned before it answers anyway. */
const STREAM_READY_MS = 10_000;

/** How long a stop waits for requests in flight to answer (and then for their last table calls). */
const DRAIN_MS = 2_000;

export interface LocalOptions {
  dataDir: string;
  /** An existing DynamoDB-compatible endpoint; none means start DynamoDB Local under `dataDir`. */
  dynamoDbEndpoint?: string;
  tableName?: string;
  secretsPort: number;
  schedulerPort: number;
  /** The address both listeners bind; default 127.0.0.1 (this machine only). */
  host?: string;
  /** Host names the listeners answer to besides their loopback names and address (`host-check.ts`). */
  allowedHosts?: readonly string[];
  devRootToken?: string;
  sweepIntervalMs?: number;
  clock?: Clock;
  log?: Logger;
  /** What each listener tolerates of a client (tests shorten it); default `listenerLimits`. */
  limits?: ListenerLimits;
}

/**
 * What each listener tolerates of a client, so that nobody can hold it with half-sent requests: a request's headers
 * must arrive within `headersTimeoutMs` and the whole request (its body too) within `requestTimeoutMs` (Vault's
 * listener defaults, `http_read_header_timeout` and `http_read_timeout`), else node answers 408 and closes the
 * connection; at most `maxConnections` connections at once per listener, each of which may buffer up to the 1 MiB body
 * limit (`front/body-limit.ts`), and a connection beyond them is closed at once. Answers are not timed: a blocking
 * query or an event stream is written for as long as it lasts. Node checks the timeouts every `checkEveryMs`.
 */
export interface ListenerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
  checkEveryMs: number;
}

export const listenerLimits: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxConnections: 256,
  checkEveryMs: 1_000,
};

export interface LocalRuntime {
  core: Core;
  secretsUrl: string;
  schedulerUrl: string;
  /** Set only when this start initialised the store (the dev root token is printed once). */
  rootToken: string | undefined;
  stop(): Promise<void>;
}

/** A dev-mode mount: where, of what type, its options, and whether the console's sign-in page offers it. */
interface DevMount {
  table: 'secret' | 'auth';
  path: string;
  type: string;
  options?: Record<string, string>;
  /** `unauth`: listed by `sys/internal/ui/mounts` without a token, so the console's sign-in page offers it. */
  listingVisibility?: 'unauth';
}

/**
 * Dev-mode default mounts: every backend of the family list at its default path (`defaultMountsOf`, as the stages
 * that list no mounts have them), so a new engine is served by `npm start` with nothing else edited. As `vault server
 * -dev`, `secret/` is kv version 2, and `kv/` beside it version 1, whose secrets may carry a leased `ttl`; the jwt
 * login method is offered on the console's sign-in page.
 */
/**
 * The backends less the aliases: a type that serves the same paths as one listed before it (Vault registers the jwt
 * method as `oidc` too) is not mounted again, as `vault server -dev` mounts no `auth/oidc`, so a client's
 * `vault auth enable oidc` finds the path free.
 */
function onePerImplementation<T extends { paths: unknown }>(backends: T[]): T[] {
  const seen = new Set<unknown>();
  return backends.filter((backend) => !seen.has(backend.paths) && seen.add(backend.paths) !== undefined);
}

const devMounts: readonly DevMount[] = [
  ...defaultMountsOf(onePerImplementation(backendsOf(allSecretsFamilies))).map(({ path, type, kind }): DevMount => {
    const mount: DevMount =
      kind === 'auth' ? { table: 'auth', path: path.replace(/^auth\//, ''), type } : { table: 'secret', path, type };
    if (path === 'secret' && type === 'kv') mount.options = { version: '2' };
    if (path === 'auth/jwt') mount.listingVisibility = 'unauth';
    return mount;
  }),
  { table: 'secret', path: 'kv', type: 'kv' },
];

/**
 * `npm start`: DynamoDB Local (or a given endpoint), the table as the stacks define it, both services on
 * one process running the Lambdas' code, and the jobs that EventBridge and the stream run in AWS.
 */
export async function startLocal(options: LocalOptions): Promise<LocalRuntime> {
  const host = options.host ?? '127.0.0.1';
  const tableName = options.tableName ?? 'keyhaven';
  const dynamo: DynamoDbLocal | undefined = options.dynamoDbEndpoint
    ? undefined
    : await startDynamoDbLocal({ dataDir: path.join(options.dataDir, 'dynamodb') });
  const endpoint = dynamo?.endpoint ?? (options.dynamoDbEndpoint as string);
  // Stopped in this order: the jobs (they use the table) and the listeners with their requests, then the table.
  const jobs: Array<{ stop(): Promise<void> }> = [];
  const listeners: Array<{
    drained(timeoutMs: number): Promise<void>;
    close(drained: Promise<unknown>): Promise<void>;
  }> = [];
  const shutdown = new AbortController();
  const tableCalls = new InFlight();
  // DynamoDB Local started here keeps its data under this folder's own access key; a given endpoint gets the shared one.
  const credentials = dynamo?.credentials ?? sharedTestCredentials;
  const client = new DynamoDBClient({ ...localClientConfig(endpoint, credentials), ...storeClientOptions() });
  countCalls(client, tableCalls);
  const stopAll = async () => {
    shutdown.abort(); // blocking queries answer now
    const drained = Promise.all(listeners.map((listener) => listener.drained(DRAIN_MS)));
    const closing = Promise.all(listeners.map((listener) => listener.close(drained)));
    await Promise.all(jobs.map((job) => job.stop()));
    await closing;
    // What the closed connections cut off (an event stream's loop) may finish its last table call.
    await tableCalls.quiet(50, DRAIN_MS);
    client.destroy();
    await dynamo?.stop();
  };
  try {
    await ensureTable(client, tableName);
    const core = await createCore({
      dynamodb: client,
      tableName,
      keySource: fileKeySource(path.join(options.dataDir, 'keyring.key')),
      backends: backendsOf(allSecretsFamilies),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    const rootToken = await initialiseDevMode(core, options.devRootToken);

    const audit = schedulerAuditFromEnvironment(process.env);
    // The console at the secrets port's `/ui/` calls the scheduler from that origin: it alone may read the answers.
    let consoleOrigin = '';
    let consoleOriginAlias = '';
    // Both services straight on node's request and response (`http/node-listener.ts`: no web objects). The
    // scheduler's reads see the shutdown signal: a blocking query answers at once when the process stops.
    const schedulerApi = schedulerNodeListener({
      core: async () => core,
      consoleOrigins: () => [consoleOrigin, consoleOriginAlias],
      ...(audit ? { audit } : {}),
      shutdown: shutdown.signal,
    });
    const secretsApi = secretsNodeListener({
      core: async () => core,
      consoleOrigins: () => [consoleOrigin, consoleOriginAlias],
    });
    // The web console at `/ui/` beside the secrets API (Vault's path), built here at start: no separate step.
    let schedulerUrl = '';
    const serveConsole = await consoleHandler(() => ({ secretsUrl: '', schedulerUrl }));
    const limits = options.limits ?? listenerLimits;
    const serverOptions = {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.checkEveryMs,
    };
    // No request ends the process: what throws in a listener is answered 500 and logged (`guarded-listener.ts`). A
    // request to a host name the listener does not answer to (DNS rebinding) is refused first (`host-check.ts`).
    const log = core.log;
    const hosts = allowedHosts(host, options.allowedHosts ?? []);
    const jsonError = (message: string) => ({
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ errors: [message] }),
    });
    const textError = (message: string) => ({ headers: { 'Content-Type': 'text/plain' }, body: message });
    const secrets = createServer(
      serverOptions,
      guardedListener(
        hostChecked(
          (request, response) => {
            if (!serveConsole(request, response)) secretsApi(request, response);
          },
          hosts,
          jsonError,
        ),
        () => jsonError('internal error'),
        log,
      ),
    );
    const scheduler = createServer(
      serverOptions,
      guardedListener(hostChecked(schedulerApi, hosts, textError), () => textError('internal error'), log),
    );
    const fronts: AddressInfo[] = [];
    for (const [server, port] of [
      [secrets, options.secretsPort],
      [scheduler, options.schedulerPort],
    ] as const) {
      const unanswered = unansweredRequests(server);
      const front = await listenWithListMethod(server, port, host);
      front.maxConnections = limits.maxConnections;
      fronts.push(front.address() as AddressInfo);
      listeners.push({
        drained: unanswered.drained,
        close: (drained) => closeGracefully(server, front, DRAIN_MS, drained),
      });
    }
    const [secretsAddress, schedulerAddress] = fronts as [AddressInfo, AddressInfo];
    schedulerUrl = `http://${urlHost(host)}:${schedulerAddress.port}`;
    consoleOrigin = `http://${urlHost(host)}:${secretsAddress.port}`;
    if (host === '127.0.0.1') consoleOriginAlias = `http://localhost:${secretsAddress.port}`;

    jobs.push(
      repeatEvery(
        options.sweepIntervalMs ?? 1000,
        async () => {
          await sweepExpired(core);
        },
        (error) => core.log.error('sweep failed', { error: String(error) }),
      ),
    );
    // Each engine's periodic work (directory rotations, cloud clean-up): in AWS its job, which EventBridge starts every
    // minute; here a timer of its own at the engine's cadence.
    for (const { engine, job } of periodicJobs(core.backends.values())) {
      // What a job does when a process starts (the directory's account check falls due at once).
      await job
        .start?.(core)
        .catch((error) => core.log.error(`${engine} ${job.name}: start failed`, { error: String(error) }));
      jobs.push(
        repeatEvery(
          options.sweepIntervalMs ?? job.everySeconds * 1000,
          async () => {
            await job.run(core);
          },
          (error) => core.log.error(`${engine} ${job.name} job failed`, { error: String(error) }),
        ),
      );
    }
    const poller: StreamPoller = startStreamPoller({
      endpoint,
      credentials,
      tableName,
      // The stream's two consumers in AWS, in one: the TTL backstop, and the evaluations written pending run at once
      // (`runTriggeredEvaluations`, what functions/jobs/evaluation-trigger.ts runs). An evaluation that fails stays
      // pending and is logged by the worker; the sweep's timer delivers it again, so the TTL backstop's records are not
      // offered twice for it.
      onChanges: async (changes) => {
        await onTableChange(core, changes);
        await runTriggeredEvaluations(core, changes);
      },
      // The local stand-in for the stream consumer's dead-letter queue in AWS.
      deadLetterFile: path.join(options.dataDir, 'stream-dead-letters.jsonl'),
      onError: (error) =>
        core.log.error('table stream', { error: error instanceof Error ? error.message : String(error) }),
    });
    jobs.push(poller);
    // Writes from here on are delivered (the poller reads from LATEST): a job submitted once the process answers has
    // its evaluation run from the stream. A stream that cannot be read yet does not hold the start: the poller keeps
    // trying (and says so in the log), and the sweep's timer runs the evaluations meanwhile.
    const positioned = await Promise.race([
      poller.ready.then(() => true),
      sleep(STREAM_READY_MS, undefined, { ref: false }).then(() => false),
    ]);
    if (!positioned)
      core.log.error('table stream: not positioned at start; evaluations wait for the sweep until it is', {
        waitedMs: STREAM_READY_MS,
      });

    return {
      core,
      rootToken,
      secretsUrl: `http://${urlHost(host)}:${secretsAddress.port}`,
      schedulerUrl: `http://${urlHost(host)}:${schedulerAddress.port}`,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }
}

/** Initialises a fresh store with the dev root token and the default mounts; returns the token if it made one. */
async function initialiseDevMode(core: Core, devRootToken: string | undefined): Promise<string | undefined> {
  let rootToken: string | undefined;
  const state = await initialisation(core.store);
  // A data directory whose init marker is gone while its keyring says it was initialised: said at start, not re-made.
  if (state.state === 'tampered')
    core.log.error('storage integrity: the init marker is missing from the data directory; not initialising again', {
      reason: state.reason,
    });
  if (state.state === 'fresh') {
    rootToken = await initialize(core, devRootToken ?? `hvs.${randomBytes(18).toString('base64url')}`);
  } else if (devRootToken && !(await core.tokens.lookup(devRootToken))) {
    throw new Error(
      'KEYHAVEN_DEV_ROOT_TOKEN does not match this data directory; remove it or the directory to start afresh',
    );
  }
  for (const mount of devMounts) {
    if (!core.backends.has(mount.type) || (await core.mounts.find(mount.table, mount.path))) continue;
    await core.mounts.enable(mount.table, mount.path, {
      type: mount.type,
      description: `${mount.type} (dev default)`,
      options: mount.options ?? {},
      ...(mount.listingVisibility ? { config: { listingVisibility: mount.listingVisibility } } : {}),
    });
  }
  return rootToken;
}

/**
 * Runs `job` every `intervalMs`, one run at a time (a slow sweep is not overlapped by the next, which would
 * revoke the same leases twice); `stop` waits for the run in flight, so nothing touches the table after it.
 */
function repeatEvery(intervalMs: number, job: () => Promise<void>, onError: (error: unknown) => void) {
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = job()
      .catch(onError)
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** An IPv6 address in a URL is bracketed. */
const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);
