import type * as z from 'zod';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { PasswordPolicy } from '../../lib/password.ts';
import type { RequestHeaders } from '../../lib/request-headers.ts';
import type { LeaseRecord } from '../leases/lease-hooks.ts';
import type { Secret } from '../leases/secret.ts';
import type { MountItemKinds, MountStorage } from '../mounts/mount-storage.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import type { StoredItemKind } from '../../storage/item-kind-row.ts';
import type { Caller } from '../tokens/caller.ts';
import type { TokenEntry } from '../tokens/token-entry.ts';

export type { Secret } from '../leases/secret.ts';

/** How a backend is written: its paths as data, the way Vault's plugin framework does it. */

/** `patch` is HTTP PATCH (a JSON merge patch), for the paths that declare it, as Vault's kv v2 does. */
export type Operation = 'read' | 'create' | 'update' | 'delete' | 'list' | 'patch';

export interface Request<Data = Record<string, unknown>> {
  operation: Operation;
  /** Path inside the mount, e.g. `static-role/app` for `/v1/ldap/static-role/app`. */
  path: string;
  data: Data;
  /** The JSON body as sent, for backends that store free-form data (kv) rather than declared fields. */
  body: Record<string, unknown>;
  mount: MountEntry;
  storage: MountStorage;
  caller: Caller | undefined;
  /** The services a handler may use besides its data and its mount's storage. */
  system: System;
  requestId: string;
  clientIp: string;
  headers: RequestHeaders;
}

/** What a handler gives back; the pipeline renders it in Vault's envelope. */
export interface Reply<Internal = Record<string, unknown>> {
  data?: Record<string, unknown>;
  /** A leased secret: the pipeline records the lease and answers with its id. */
  secret?: Secret<Internal>;
  /** A successful login: the pipeline mints a token from it. */
  auth?: LoginResult;
  /** A token the handler itself issued or renewed (token store): shown as the envelope's `auth`. */
  token?: { token: string; entry: TokenEntry };
  warnings?: string[];
  /**
   * An answer Vault gives without its envelope, as is with status 200: `sys/health`, `sys/init`, `sys/seal-status`,
   * `sys/leader`, the identity OIDC discovery document and keys.
   */
  unwrapped?: object;
  /** An existing lease the request renewed (`sys/leases/renew`): the envelope shows its id, renewability and TTL. */
  renewed?: { leaseId: string; renewable: boolean; ttl: number };
  /** Vault's `RespondWithStatusCode`: the envelope with a 404 (kv v2's deleted or destroyed version, with its metadata). */
  status?: 404;
}

export interface LoginResult {
  policies: string[];
  displayName: string;
  metadata?: Record<string, string>;
  entityId?: string;
  ttl?: number;
  maxTtl?: number;
  explicitMaxTtl?: number;
  period?: number;
  numUses?: number;
  renewable?: boolean;
  noDefaultPolicy?: boolean;
  type?: 'service' | 'batch';
  boundCidrs?: string[];
}

/** What a handler may use besides its data and its mount's storage (Vault's SystemView): no table, no other mount. */
export interface System {
  clock: Clock;
  log: Logger;
  /** This mount's leases. */
  leases: MountLeases;
  /** The parsed password policy called `name` (`sys/policies/password/:name`), or undefined (Vault's `GeneratePasswordFromPolicy`). */
  passwordPolicy(name: string): Promise<PasswordPolicy | undefined>;
  /**
   * Records in the audit devices work the engine did on its own (not what the request asked: the pipeline audits
   * that), e.g. a password it healed; `path` is relative to the mount. Never throws.
   */
  recordEvent(event: { operation: string; path: string; data: Record<string, string>; summary: string }): Promise<void>;
}

/** The leases of one mount: ids and prefixes are the mount's own (a prefix is relative to the mount's path). */
export interface MountLeases {
  /** Ends one of the mount's leases now, its revoke hook run; a failure leaves it queued for retry and throws. */
  revoke(leaseId: string): Promise<void>;
  /** Ends every lease issued under `prefix`; how many. A failed revocation stays queued for retry and throws. */
  revokePrefix(prefix: string): Promise<number>;
  /** The internals of the live leases issued under `prefix`. */
  internalsUnder(prefix: string): Promise<Array<Record<string, unknown>>>;
}

/**
 * A row's handler, for fields that parse to `Data`. Declared through a method so that a row of any schema is a
 * `PathSpec` (method parameters are checked both ways): sound because the pipeline calls it only with what the
 * row's own `fields` parsed.
 */
export type Handler<Data> = { handle(request: Request<Data>): Promise<Reply | undefined> }['handle'];

/** Whether a write's target exists; a method for the same reason as `Handler`. */
type Exists<Data> = { exists(request: Request<Data>): Promise<boolean> }['exists'];

export interface PathSpec<Schema extends z.ZodType = z.ZodType> {
  /** Segments: literal, `:name` (one segment), `:name+` (one or more), `:name*` (zero or more). */
  pattern: string;
  /** Fields from the body, the query string (reads and lists) and the pattern's captures. */
  fields: Schema;
  operations: Partial<Record<Operation, Handler<z.output<Schema>>>>;
  /**
   * One line per operation saying what it does, as Vault's `PathOperation.Summary` (the OpenAPI document's
   * `summary`). Each field of `fields` says what it means with zod's `.describe()` (Vault's `FieldSchema.Description`).
   */
  summaries?: Partial<Record<Operation, string>>;
  /** Whether the target exists, so a write is authorised as `create` or `update`. */
  exists?: Exists<z.output<Schema>>;
  /** Reachable without a token (logins, health). */
  unauthenticated?: boolean;
  /** Needs `sudo` on top of the operation's capability. */
  sudo?: boolean;
  /**
   * Unrecognized fields are a 400 naming them instead of a warning: for requests that would otherwise run on
   * defaults that widen what they grant (a token create without its `policies` inherits the caller's).
   */
  refuseUnrecognizedFields?: boolean;
  /**
   * The storage keys a `read` will get, from the path's captures: read in the same round trip as the caller's
   * token (one BatchGetItem instead of two reads), and never shown unless the caller's policy allows the read.
   */
  prefetch?: (params: Record<string, string>) => string[];
  /**
   * Captures the backend stores under another spelling (policy names trimmed and lower-cased, role names
   * lower-cased): the router rewrites each into its stored form before the policy is checked, so the path
   * authorised names the very item the handler reads or writes (`sys/policies/acl/Admin` is checked as
   * `sys/policies/acl/admin`). Only the last capture of a pattern may be rewritten.
   */
  canonicalCaptures?: Record<string, (value: string) => string>;
}

/** How one kind of leased secret is renewed and revoked; `Internal` is what its `Secret` kept (see `Reply.secret`). */
export interface LeaseHooks<Internal = Record<string, unknown>> {
  renew?(lease: LeaseContext<Internal>): Promise<{ ttl?: number; maxTtl?: number } | undefined>;
  revoke(lease: LeaseContext<Internal>): Promise<void>;
}

/** A lease as its hooks get it: the lease (id, internals, increment, mount) with its mount's storage and system view. */
export interface LeaseContext<Internal = Record<string, unknown>> extends LeaseRecord<Internal> {
  storage: MountStorage;
  system: System;
}

/**
 * Work an engine does on a schedule, over every one of its mounts (Vault's `PeriodicFunc`): rotations, the clean-up a
 * crash or a failed call left. Locally a timer runs it every `everySeconds`; in AWS the engine's job function runs it
 * each round (EventBridge starts the job every minute, and it goes again as its queues fall due).
 */
export interface PeriodicJob {
  /** What it does, for logs: `rotations`, `clean-up`. */
  name: string;
  /** How often it runs at most, locally and between an AWS job's rounds. */
  everySeconds: number;
  /**
   * Runs it once; what it did and what failed (to be retried). It is given the process's `SecretsServices`
   * (`secrets/framework/services.ts`, which imports this file, so the job types it where it is written).
   */
  run(core: unknown): Promise<{ done: number; failed: number }>;
  /**
   * What a process does once when it starts, before its first run (locally: `npm start`, right after the table is
   * ready), e.g. make a check that is otherwise spread over time fall due at once. Given the process's `SecretsServices` as `run`.
   */
  start?(core: unknown): Promise<void>;
  /** The `due` index queues it reads: its job waits for them between rounds, and its function may query them (IAM). */
  queues?: string[];
  /** Table partitions it reads beyond an engine job's own (IAM `dynamodb:LeadingKeys` patterns), each with why. */
  reads?: Record<string, string>;
}

/**
 * A write-ahead record (`wal/<due-ordered id>` in a mount's storage, Vault's WAL entry): work on something outside the
 * table, recorded before it is done (`secrets/framework/write-ahead.ts`). `Data` is what the engine keeps to undo it.
 */
export type WalRecord<Data extends object = Record<string, unknown>> = Data & {
  sk: string;
  kind: string;
  /** When the recorded work started (epoch seconds). */
  startedAt: number;
  /** When it may be rolled back: until then the request that wrote it may still be working. */
  dueAt: number;
  /** Rollbacks that failed so far (each retried later, with backoff). */
  attempts: number;
};

/** What a rollback works with: the mount's system view, the mount and its storage. */
export interface WalContext {
  system: System;
  mount: MountEntry;
  storage: MountStorage;
}

/**
 * How an engine undoes what a write-ahead record names (Vault's `WALRollback`), once due: idempotent, leaving alone
 * whatever the stored state now uses. The framework runs it for every due record of the engine's mounts (a periodic
 * job of its own) and drops the record once it returns; a throw keeps it for later.
 */
export interface WalRollback {
  /** The rollback of one mount's records (made once per mount, e.g. with its client), then called for each. */
  forMount(context: WalContext): (record: WalRecord) => Promise<void>;
  /** How often its job looks for due records (default 5 s). */
  everySeconds?: number;
}

/** What the stacks need to know to run an engine's functions (`stacks/`: its endpoints' function and its job's). */
export interface Deployment {
  /** Its functions join the stage's private network (`directoryVpc`): the directory it talks to is usually private. */
  privateNetwork?: boolean;
  /** Operator settings its functions read from their environment: the stage-config option and its variables (option key -> name). */
  settings?: { option: string; variables: Record<string, string> };
  /**
   * Its leases are revoked by a job of its own, in its own bundle (their revocation calls out); otherwise the sweep job
   * revokes them. An engine with `periodic` work or a `walRollback` always has its own job.
   */
  ownJob?: boolean;
  /** Table partitions its endpoints' function reads beyond an engine's own (IAM patterns), each with why. */
  reads?: Record<string, string>;
  /**
   * Its routes that log in or issue credentials, under a mount of it, in API Gateway's route syntax (`creds/{proxy+}`),
   * each with its throttle class: the stacks give each its own route and the stage's stricter limits
   * (`stacks/throttling.ts`).
   */
  throttled?: Record<string, 'login' | 'credentials'>;
}

export interface Backend {
  /** The mount type, e.g. `ldap`. */
  type: string;
  kind: 'secret' | 'auth';
  /**
   * Where it is mounted when nothing says otherwise, if not its type's own path (`<type>`, or `auth/<type>` for an
   * auth method): kv at `secret`, as Vault's dev server mounts it. The test stage mounts every backend there, and the
   * suite's route tables (fuzz, OpenAPI, attacks) are derived from it (`test/support/secrets-routes.ts`).
   */
  defaultPath?: string;
  paths: PathSpec[];
  leases?: Record<string, LeaseHooks>;
  /** Work on a schedule (see `PeriodicJob`). */
  periodic?: PeriodicJob[];
  /** How the stacks run its functions (see `Deployment`). */
  deployment?: Deployment;
  /** How its write-ahead records are rolled back (see `WalRollback`, `secrets/framework/write-ahead.ts`). */
  walRollback?: WalRollback;
  /**
   * Which of its items carry a MAC of their own kind (`MountItemKinds`): its mounts' storage signs them on every
   * write and refuses them, as absent, when they do not verify. For state it changes by partial updates and
   * transactions; what it writes whole with `putAuthenticated` needs no entry.
   */
  authenticatedItems?: MountItemKinds;
  /**
   * The kinds of item it keeps in its mounts' storage, each with its protection against a table writer (sealed, MAC,
   * or not security state, and why): the rows of `item-kinds.ts` (and of docs/security.md's table) for its mount
   * type. A write of an item no row names is refused in the tests (`test/support/item-kind-guard.ts`).
   */
  storedItems?: StoredItemKind[];
  /**
   * For auth methods: what renewing a token this method issued gets (Vault re-reads the login's role).
   * Throw to refuse the renewal, e.g. when the role is gone.
   */
  renewLogin?(context: { entry: TokenEntry; mount: MountEntry; storage: MountStorage }): Promise<{
    ttl: number;
    maxTtl: number;
    period: number;
  }>;
}

/** Declares one path row with its field types flowing into the handlers. */
export function path<Schema extends z.ZodType>(spec: PathSpec<Schema>): PathSpec {
  return spec;
}

/**
 * A `list` operation that answers the keys stored under `prefix` in the mount's storage, as `{ data: { keys } }` (none:
 * Vault's 404, `render.ts`): the collection row every engine with named items has.
 */
export function listKeysUnder<Data>(prefix: string): Handler<Data> {
  return async ({ storage }) => ({ data: { keys: await storage.list(prefix) } });
}

/**
 * A kind of leased secret whose internals are `Internal`, typed at both ends: `secret(…)` builds a reply's
 * `secret` of that type, `hooks` see the same type in `LeaseContext.internal`. Register it under `type` in
 * `Backend.leases` (`leases: { [creds.type]: creds.hooks }`).
 */
export function leasedSecret<Internal extends Record<string, unknown>>(type: string, hooks: LeaseHooks<Internal>) {
  // Any kind's hooks are `LeaseHooks` (their methods take the lease both ways): no cast.
  const registered: LeaseHooks = hooks;
  return {
    type,
    hooks: registered,
    secret: (secret: Omit<Secret<Internal>, 'type'>): Secret<Internal> => ({ ...secret, type }),
  };
}
