import ipaddr from 'ipaddr.js';
import * as z from 'zod';
import type { Core } from '../../core.ts';
import { uuid } from '../../lib/random.ts';
import { type Item, itemKey } from '../../storage/store.ts';
import type { AuditedRequest } from '../audit/audit-log.ts';
import { MountStorage, mountPartition } from '../mounts/mount-storage.ts';
import { type MountEntry, mountTtls } from '../mounts/mount-table.ts';
import type { Capability } from '../policies/policy-document.ts';
import { type Caller, ownerHash, tokenFromHeaders } from '../tokens/caller.ts';
import type { TokenEntry } from '../tokens/token-entry.ts';
import type { Operation, PathSpec, Reply, Request } from './backend.ts';
import { ApiError, badRequest, notFound, permissionDenied, tooLarge, unsupported } from './errors.ts';
import { decodeBody, parseListFlag, withoutNulls } from './request-body.ts';
import { type CompiledPath, compilePaths, matchPaths } from './router.ts';
import { systemFor } from './system.ts';

export interface RawRequest {
  method: string;
  /** URL path, e.g. `/v1/ldap/static-role/app`, already percent-decoded. */
  path: string;
  query: Record<string, string>;
  headers: Headers;
  body: string;
  clientIp: string;
  /** A problem the HTTP adapter found before the pipeline (oversized body, malformed URL): answered as is. */
  refusal?: ApiError;
}

export interface RawResponse {
  status: number;
  body?: unknown;
}

export const maxBodyBytes = 1024 * 1024;

/**
 * The request pipeline every backend shares: mount routing, token and policy check, field validation,
 * handler, leases and login tokens, and Vault's envelope. No input reaches a 500 unless a handler is wrong.
 */
/** What the audit log knows of a request so far, and whether its request entry was written. */
interface AuditState {
  request: AuditedRequest;
  written: boolean;
}

/** What `readAhead` read: the caller's token entry (undefined when not live) and the request's storage items (absent ones as `undefined`). */
interface ReadAhead {
  caller: TokenEntry | undefined;
  storage: Map<string, Item | undefined>;
}

export class Pipeline {
  private readonly compiled = new Map<string, CompiledPath[]>();

  constructor(private readonly core: Core) {
    for (const backend of core.backends.values()) this.compiled.set(backend.type, compilePaths(backend));
  }

  async handle(raw: RawRequest): Promise<RawResponse> {
    const requestId = uuid();
    const started = performance.now();
    let response: RawResponse;
    const audit: AuditState = { request: { id: requestId, operation: raw.method.toLowerCase(), path: raw.path.replace(/^\/v1\//, ''), remoteAddress: raw.clientIp }, written: false };
    try {
      response = await this.route(raw, requestId, audit);
    } catch (error) {
      response = this.failure(error, requestId, raw.path);
    }
    await this.auditAfter(audit, response);
    this.core.log.info('request', {
      requestId,
      method: raw.method,
      path: loggablePath(raw.path),
      status: response.status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    });
    return response;
  }

  private async route(raw: RawRequest, requestId: string, audit: AuditState): Promise<RawResponse> {
    if (raw.refusal) throw raw.refusal;
    if (!raw.path.startsWith('/v1/')) throw notFound(`no handler for route "${raw.path}"`);
    const path = raw.path.slice('/v1/'.length);
    const operation = operationOf(raw.method, raw.query);
    if (Buffer.byteLength(raw.body) > maxBodyBytes) throw tooLarge(`request body larger than ${maxBodyBytes} bytes`);

    const mount = await this.core.mounts.resolve(path);
    const backend = mount && this.core.backends.get(mount.type);
    if (!mount || !backend) throw notFound(`no handler for route "${path}"`);
    const relative = path.length < mount.path.length ? '' : path.slice(mount.path.length);
    const writeKinds: Operation[] = ['create', 'update'];
    const supports = (spec: PathSpec, op: Operation | 'write') =>
      op === 'write' ? writeKinds.some((kind) => spec.operations[kind]) : spec.operations[op] !== undefined;
    const matches = matchPaths(this.compiled.get(backend.type) ?? [], relative);
    if (matches.length === 0) throw notFound(`unsupported path "${path}"`);
    const matched = matches.find((candidate) => supports(candidate.spec, operation));
    if (!matched) throw unsupported(`unsupported operation ${raw.method} on "${path}"`);
    const { spec, params } = matched;
    const supported = (op: Operation) => spec.operations[op] !== undefined;

    const ahead = operation === 'read' && !spec.unauthenticated ? await this.readAhead(raw, spec, params, mount) : undefined;
    audit.request.mount = mount;
    const caller = spec.unauthenticated ? undefined : await this.authenticate(raw, ahead);
    if (caller) Object.assign(audit.request, { token: caller.token, entry: caller.entry });
    if (caller && operation === 'write' && !writeKinds.some((op) => caller.acl.allows(path, op as Capability))) {
      throw permissionDenied();
    }

    // `list=true` selects the operation; it is not a field. Body fields keep their names even when a query
    // parameter is called `list`.
    const { list: _list, ...query } = raw.query;
    // The one decode stage for every backend's paths: the body as Vault reads it, then `null` as "not set".
    const body = decodeBody(raw.body, raw.headers.get('content-type'));
    const input = { ...(operation === 'write' ? {} : query), ...withoutNulls(body), ...params };
    const parsed = spec.fields.safeParse(input);
    if (!parsed.success) throw badRequest(describeIssues(parsed.error));
    const unrecognized = unrecognizedFields(spec.fields, input);
    if (spec.refuseUnrecognizedFields && unrecognized.length > 0) {
      throw badRequest(`unrecognized parameters: [${unrecognized.join(' ')}]; this endpoint refuses what it would otherwise ignore`);
    }
    const warnings = unrecognized.length > 0 ? [`Endpoint ignored these unrecognized parameters: [${unrecognized.join(' ')}]`] : [];

    const request: Request = {
      operation: 'read',
      path: relative,
      data: parsed.data as Record<string, unknown>,
      body,
      mount,
      storage: new MountStorage(this.core.store, this.core.keyring, mount.uuid, ahead?.storage),
      caller,
      core: this.core,
      system: systemFor(this.core, mount),
      requestId,
      clientIp: raw.clientIp,
      headers: raw.headers,
    };
    request.operation = operation === 'write' ? await writeKind(spec.exists, request, supported) : operation;
    const handler = spec.operations[request.operation];
    if (!handler) throw unsupported(`unsupported operation ${raw.method} on "${path}"`);

    let remainingUses: number | undefined;
    if (caller) {
      // As Vault, parameter constraints see a write's body fields and a read's query parameters.
      const parameters = operation === 'write' || operation === 'patch' ? body : query;
      if (!caller.acl.allows(path, request.operation as Capability, spec.sudo, parameters)) throw permissionDenied();
      const used = await this.core.tokens.consumeUse(caller.entry);
      if (!used) throw permissionDenied();
      remainingUses = caller.entry.numUses > 0 ? used.numUses : undefined;
    }
    // Fail closed: with audit devices enabled, a request none of them recorded never reaches its handler.
    Object.assign(audit.request, { operation: request.operation, data: operation === 'write' ? body : query });
    await this.core.audit.log.request(audit.request);
    audit.written = true;
    try {
      const reply = await handler(request);
      return await this.render(request, reply, warnings);
    } finally {
      if (caller && remainingUses === 0) await this.core.tokens.revoke(caller.entry.hash);
    }
  }

  /**
   * A read whose storage keys the path names (`PathSpec.prefetch`): the item the caller's token needs (its own, or a
   * batch token's parent's) and the data in one BatchGetItem. The data stays unused until the caller is authorised.
   */
  private async readAhead(raw: RawRequest, spec: PathSpec, params: Record<string, string>, mount: MountEntry): Promise<ReadAhead | undefined> {
    const token = tokenFromHeaders(raw.headers);
    const keys = spec.prefetch?.(params) ?? [];
    const plan = token && keys.length > 0 ? this.core.tokens.lookupPlan(token) : undefined;
    // An orphan batch token needs no read: the data alone is one GetItem, as without reading ahead.
    if (!plan?.key) return undefined;
    const { key: tokenKey } = plan;
    const storagePk = mountPartition(mount.uuid);
    const items = await this.core.store.batchGet([tokenKey, ...keys.map((key) => ({ pk: storagePk, sk: key }))]);
    return {
      caller: await plan.entry(items.get(itemKey(tokenKey.pk, tokenKey.sk))),
      storage: new Map(keys.map((key) => [key, items.get(itemKey(storagePk, key))])),
    };
  }

  private async authenticate(raw: RawRequest, ahead?: ReadAhead): Promise<Caller> {
    const token = tokenFromHeaders(raw.headers);
    if (!token) throw permissionDenied();
    const entry = ahead ? ahead.caller : await this.core.tokens.lookup(token);
    if (!entry) throw permissionDenied('permission denied: invalid or expired token');
    if (!cidrAllows(entry, raw.clientIp)) throw permissionDenied('permission denied: token not valid from this address');
    return { token, entry, acl: await this.core.policies.acl(entry.policies) };
  }

  private async render(request: Request, reply: Reply | undefined, fieldWarnings: string[]): Promise<RawResponse> {
    if (reply?.raw) return reply.raw;
    const warnings = [...fieldWarnings, ...(reply?.warnings ?? [])];
    if (request.operation === 'list') {
      const keys = reply?.data?.keys;
      if (!Array.isArray(keys) || keys.length === 0) return { status: 404, body: { errors: [] } };
    }
    if (!reply?.data && !reply?.secret && !reply?.auth && !reply?.token) {
      if (request.operation === 'read') return { status: 404, body: { errors: [] } };
      if (warnings.length === 0) return { status: 204 };
    }
    const envelope = {
      request_id: request.requestId,
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      data: reply?.data ?? null,
      wrap_info: null,
      warnings: null as string[] | null,
      auth: null as Record<string, unknown> | null,
      mount_type: request.mount.type,
    };
    if (reply?.secret) {
      const lease = await this.core.leases.register(request.mount, request.path, reply.secret, ownerHash(request.caller));
      Object.assign(envelope, { lease_id: lease.leaseId, renewable: lease.renewable, lease_duration: lease.ttl });
      warnings.push(...lease.warnings);
    }
    if (reply?.auth) envelope.auth = await this.login(request, reply.auth);
    if (reply?.token) envelope.auth = authBlock(reply.token.token, reply.token.entry);
    envelope.warnings = warnings.length > 0 ? warnings : null;
    return { status: 200, body: envelope };
  }

  /** Mints the token a login earned: an orphan whose parameters come from the auth method's role. */
  private async login(request: Request, auth: NonNullable<Reply['auth']>): Promise<Record<string, unknown>> {
    const { defaultTtl, maxTtl } = mountTtls(request.mount);
    const { token, entry } = await this.core.tokens.create({
      policies: auth.policies,
      noDefaultPolicy: auth.noDefaultPolicy ?? false,
      displayName: auth.displayName,
      meta: auth.metadata ?? {},
      ttl: auth.ttl ?? 0,
      explicitMaxTtl: auth.explicitMaxTtl ?? 0,
      period: auth.period ?? 0,
      numUses: auth.numUses ?? 0,
      renewable: auth.renewable ?? true,
      type: auth.type ?? 'service',
      path: `${request.mount.path}${request.path}`,
      issuer: { path: request.mount.path, uuid: request.mount.uuid },
      entityId: auth.entityId ?? '',
      boundCidrs: auth.boundCidrs ?? [],
      parent: undefined,
      mountDefaultTtl: defaultTtl,
      mountMaxTtl: Math.min(auth.maxTtl || maxTtl, maxTtl),
    });
    return authBlock(token, entry);
  }

  /** The response entry of an audited request; a request refused before its handler gets its request entry with the error. */
  private async auditAfter(audit: AuditState, response: RawResponse): Promise<void> {
    if (audit.written) return this.core.audit.log.response(audit.request, response);
    const errors = (response.body as { errors?: string[] } | undefined)?.errors;
    await this.core.audit.log.request(audit.request, errors?.join('; ') || `status ${response.status}`).catch(() => {});
  }

  private failure(error: unknown, requestId: string, path: string): RawResponse {
    const known = error instanceof ApiError ? error : beyondStorageLimits(error);
    if (known) {
      // An upstream failure (directory, cloud, mesh) is the operator's to see, not only the caller's.
      if (known.status >= 500) this.core.log.error('upstream failure', { requestId, path: loggablePath(path), status: known.status, error: known.message });
      return { status: known.status, body: { errors: known.message ? [known.message] : [] } };
    }
    this.core.log.error('unhandled error', { requestId, path: loggablePath(path), error: error instanceof Error ? error.message : String(error) });
    return { status: 500, body: { errors: [`internal error (request ${requestId})`] } };
  }
}

/**
 * DynamoDB refuses empty keys, keys over 1024 bytes (sort) or 2048 bytes (partition), items over 400 KB and
 * documents nested over 32 levels. Input that hits those limits is the caller's (an empty or very long path,
 * name or id; a huge secret), so it is a 400 or 413, whichever handler and whatever write or transaction met it.
 */
function beyondStorageLimits(error: unknown): ApiError | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error.name !== 'ValidationException' && error.name !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: Array<{ Code?: string; Message?: string }> }).CancellationReasons ?? [];
  const messages = [error.message, ...reasons.map((reason) => reason.Message ?? '')];
  if (messages.some((message) => /item size (to update )?has exceeded/i.test(message))) {
    return tooLarge('the data is too large to store (at most 400 KB per item)');
  }
  if (messages.some((message) => /key values must be under|size of (hash|range) ?key|size of all range keys|exceeded the size limit of \d+ bytes/i.test(message))) {
    return badRequest('a path, name or id in the request is too long to store');
  }
  if (messages.some((message) => /key attribute cannot contain an empty string/i.test(message))) {
    return badRequest('a path, name or id in the request is empty');
  }
  if (messages.some((message) => /nesting levels have exceeded/i.test(message))) {
    return badRequest('the data is nested too deeply to store');
  }
  return undefined;
}

const maxLoggedPathLength = 512;

/**
 * The path as a log line may show it: old Vault clients put tokens in URLs (`auth/token/lookup/<token>`), and
 * anything shaped like one of our tokens is taken out wherever it appears. Very long paths are cut.
 */
export function loggablePath(path: string): string {
  const redacted = path
    .replace(/^(\/v1\/auth\/token\/(?:lookup|renew|revoke|revoke-orphan)\/).+$/, '$1<redacted>')
    .replace(/(^|\/)hv[sbr]\.[^/]*/g, '$1<redacted>');
  return redacted.length > maxLoggedPathLength ? `${redacted.slice(0, maxLoggedPathLength)}…` : redacted;
}

/** The `auth` block of a reply that carries a new token. */
export function authBlock(token: string, entry: TokenEntry): Record<string, unknown> {
  // The TTL just granted, from when it was granted: counting from "now" would show 7199 for a 7200 s token
  // whenever the reply is rendered a second boundary after the token was written.
  const leaseDuration = entry.expireTime ? entry.expireTime - (entry.lastRenewalTime ?? entry.creationTime) : 0;
  return {
    client_token: token,
    accessor: entry.accessor,
    policies: entry.policies,
    token_policies: entry.policies,
    identity_policies: null,
    metadata: Object.keys(entry.meta).length > 0 ? entry.meta : null,
    lease_duration: leaseDuration,
    renewable: entry.renewable,
    entity_id: entry.entityId,
    token_type: entry.type,
    orphan: entry.orphan,
    num_uses: entry.numUses,
    mfa_requirement: null,
  };
}

function operationOf(method: string, query: Record<string, string>): Operation | 'write' {
  switch (method.toUpperCase()) {
    case 'GET':
      // As Vault: an empty `list` is a read; a value `strconv.ParseBool` refuses is a 400.
      return query.list !== undefined && query.list !== '' && parseListFlag(query.list) ? 'list' : 'read';
    case 'HEAD': // a read whose body HTTP drops: load balancers probe `sys/health` this way
      return 'read';
    case 'LIST':
      return 'list';
    case 'POST':
    case 'PUT':
      return 'write';
    case 'DELETE':
      return 'delete';
    case 'PATCH':
      return 'patch';
    default:
      throw unsupported(`unsupported method ${method}`);
  }
}

async function writeKind(
  exists: ((request: Request) => Promise<boolean>) | undefined,
  request: Request,
  supported: (op: Operation) => boolean,
): Promise<Operation> {
  if (exists) return (await exists(request)) ? 'update' : 'create';
  return supported('update') ? 'update' : 'create';
}

function describeIssues(error: z.ZodError): string {
  return flattenIssues(error.issues, [])
    .map(({ path, message }) => `invalid value for "${path.length > 0 ? path.join('.') : 'request'}": ${message}`)
    .join('; ');
}

type Issue = z.core.$ZodIssue;

/**
 * Zod reports a failed union (`"1h"` or `3600`, a list or a comma-separated string) as a bare "Invalid input".
 * Say instead what the closest alternative wanted: the one that failed deeper inside the value, else the one
 * whose type matched, else every type that would have been accepted.
 */
function flattenIssues(issues: readonly Issue[], prefix: PropertyKey[]): Array<{ path: PropertyKey[]; message: string }> {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [{ path, message: issue.message }];
    const branches = issue.errors.filter((branch) => branch.length > 0);
    const deeper = branches.find((branch) => branch.every((inner) => inner.path.length > 0));
    if (deeper) return flattenIssues(deeper, path);
    const typeMatched = branches.find((branch) => branch.every((inner) => inner.code !== 'invalid_type' && inner.code !== 'invalid_value'));
    if (typeMatched) return flattenIssues(typeMatched, path);
    const wanted = branches.flatMap((branch) =>
      branch.map((inner) => {
        if (inner.code === 'invalid_type') return inner.expected;
        if (inner.code === 'invalid_value') return `one of ${inner.values.map((value) => JSON.stringify(value)).join('|')}`;
        return inner.message;
      }),
    );
    return [{ path, message: `Invalid input: expected ${[...new Set(wanted)].join(' or ')}` }];
  });
}

/** The input's fields the path does not declare (none for a path that takes free-form data, like kv). */
function unrecognizedFields(schema: z.ZodType, input: Record<string, unknown>): string[] {
  if (!(schema instanceof z.ZodObject)) return [];
  const catchall = schema.def.catchall;
  if (catchall && !(catchall instanceof z.ZodNever)) return [];
  const known = new Set(Object.keys(schema.shape));
  return Object.keys(input).filter((key) => !known.has(key));
}

function cidrAllows(entry: TokenEntry, clientIp: string): boolean {
  if (entry.boundCidrs.length === 0) return true;
  if (!ipaddr.isValid(clientIp)) return false;
  const address = ipaddr.process(clientIp);
  return entry.boundCidrs.some((cidr) => {
    try {
      const range = ipaddr.parseCIDR(cidr);
      return address.kind() === range[0].kind() && address.match(range);
    } catch {
      return false;
    }
  });
}
