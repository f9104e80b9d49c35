import { unavailable } from '../../lib/errors.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import type { TokenEntry } from '../tokens/token-entry.ts';
import type { AuditDevices } from './audit-devices.ts';
import { parseFlag } from './audit-devices.ts';
import { auditHash, hashStrings } from './audit-hash.ts';

/** What the pipeline knows of a request when it audits it. */
export interface AuditedRequest {
  id: string;
  operation: string;
  path: string;
  mount?: Pick<MountEntry, 'path' | 'type' | 'accessor'>;
  token?: string;
  entry?: TokenEntry;
  data?: Record<string, unknown>;
  remoteAddress: string;
}

/** What the pipeline answered: the envelope's data, secret and auth, or the error. */
export interface AuditedResponse {
  status: number;
  body?: unknown;
}

/**
 * Work the service did on its own, not at a client's request (a password healed by the directory engine): audited as
 * a request and response pair with no `auth` and an empty `remote_address`, `operation` and `path` naming what was
 * done (the path is the mount's path and the item's, not a route), `data` what it was done to and why (hashed like any
 * request data unless `log_raw`), and the response's `warnings` one readable sentence (never a secret).
 */
export interface ServiceEvent {
  mount: Pick<MountEntry, 'path' | 'type' | 'accessor'>;
  operation: string;
  path: string;
  data: Record<string, string>;
  summary: string;
}

/** Refused before the handler runs when no enabled device could record the request (Vault fails closed too). */
export const auditUnavailable = () =>
  unavailable('audit: no enabled audit device could record the request; it was not processed');

/**
 * Writes Vault-shaped audit entries to every enabled device: one `request` entry before the handler runs, one
 * `response` entry after. Strings in data, tokens and accessors are HMAC'd with each device's salt unless `log_raw`.
 */
export class AuditLog {
  constructor(private readonly devices: AuditDevices) {}

  /** Throws {@link auditUnavailable} when devices are enabled and none took the entry. */
  async request(request: AuditedRequest, error?: string): Promise<void> {
    await this.emit('request', request, undefined, error);
  }

  /** The response entry; a device that fails here is logged, the answer already stands. */
  async response(request: AuditedRequest, response: AuditedResponse): Promise<void> {
    try {
      await this.emit('response', request, response, errorOf(response));
    } catch {
      // The request entry was written; a lost response entry is logged by `emit`.
    }
  }

  /** Records a {@link ServiceEvent}; a device that fails is logged, the work already happened. */
  async serviceEvent(event: ServiceEvent, id: string): Promise<void> {
    const request: AuditedRequest = {
      id,
      operation: event.operation,
      path: `${event.mount.path}${event.path}`,
      mount: event.mount,
      data: event.data,
      remoteAddress: '',
    };
    try {
      await this.emit('request', request, undefined, undefined);
      await this.emit('response', request, { status: 204, body: { warnings: [event.summary] } }, undefined);
    } catch {
      // `emit` logged each failed device.
    }
  }

  private async emit(
    type: 'request' | 'response',
    request: AuditedRequest,
    response: AuditedResponse | undefined,
    error: string | undefined,
  ) {
    const devices = await this.devices.live();
    if (devices.length === 0) return;
    const time = new Date().toISOString();
    const results = await Promise.allSettled(
      devices.map((device) => {
        const options = device.options;
        const raw = parseFlag(options.log_raw) ?? false;
        const hashAccessor = parseFlag(options.hmac_accessor) ?? true;
        const hash = raw ? (text: string) => text : (text: string) => auditHash(device.salt, text);
        const accessor = (text: string) => (hashAccessor ? hash(text) : text);
        const entry = {
          time,
          type,
          auth: authOf(request, hash, accessor),
          request: {
            id: request.id,
            operation: request.operation,
            mount_point: request.mount?.path ?? '',
            mount_type: request.mount?.type ?? '',
            mount_accessor: request.mount?.accessor ?? '',
            client_token: request.token ? hash(request.token) : '',
            client_token_accessor: request.entry ? accessor(request.entry.accessor) : '',
            namespace: { id: 'root' },
            path: tokensHashed(request.path, hash),
            data: request.data && Object.keys(request.data).length > 0 ? hashStrings(request.data, hash) : null,
            remote_address: request.remoteAddress,
          },
          ...(response
            ? {
                response: responseOf(
                  response,
                  request,
                  hash,
                  accessor,
                  parseFlag(options.elide_list_responses) ?? false,
                ),
              }
            : {}),
          error: error ? anyTokenHashed(error, hash) : '',
        };
        // A prefix is written only while the operator allows prefixing (a device stored before it was turned off writes none).
        const prefix = this.devices.settings.allowPrefix ? (options.prefix ?? '') : '';
        return device.sink.write(`${prefix}${JSON.stringify(entry)}\n`);
      }),
    );
    const failed = results.flatMap((result, index) =>
      result.status === 'rejected' ? [{ path: devices[index]?.path, reason: String(result.reason) }] : [],
    );
    for (const failure of failed)
      this.devices.log.error('audit device failed', {
        requestId: request.id,
        device: failure.path,
        entry: type,
        error: failure.reason,
      });
    if (failed.length === devices.length) throw auditUnavailable();
  }
}

function authOf(request: AuditedRequest, hash: (text: string) => string, accessor: (text: string) => string) {
  const entry = request.entry;
  if (!entry) return null;
  return {
    client_token: request.token ? hash(request.token) : '',
    accessor: accessor(entry.accessor),
    display_name: entry.displayName,
    policies: entry.policies,
    token_policies: entry.policies,
    metadata: Object.keys(entry.meta).length > 0 ? hashStrings(entry.meta, hash) : null,
    entity_id: entry.entityId,
    token_type: entry.type,
    token_ttl: entry.expireTime ? entry.expireTime - (entry.lastRenewalTime ?? entry.creationTime) : 0,
    token_issue_time: new Date(entry.creationTime * 1000).toISOString(),
  };
}

function responseOf(
  response: AuditedResponse,
  request: AuditedRequest,
  hash: (text: string) => string,
  accessor: (text: string) => string,
  elideLists: boolean,
) {
  const body = (response.body ?? {}) as Record<string, unknown>;
  let data = body.data as Record<string, unknown> | null | undefined;
  // Vault's elide_list_responses: a list's keys become their count.
  if (elideLists && request.operation === 'list' && data && Array.isArray(data.keys))
    data = { ...data, keys: data.keys.length };
  const auth = body.auth as Record<string, unknown> | null | undefined;
  const leaseId = typeof body.lease_id === 'string' && body.lease_id !== '' ? body.lease_id : undefined;
  return {
    mount_point: request.mount?.path ?? '',
    mount_type: request.mount?.type ?? '',
    mount_accessor: request.mount?.accessor ?? '',
    status_code: response.status,
    ...(auth
      ? {
          auth: {
            ...auth,
            client_token: typeof auth.client_token === 'string' ? hash(auth.client_token) : '',
            accessor: typeof auth.accessor === 'string' ? accessor(auth.accessor) : '',
            metadata: auth.metadata ? hashStrings(auth.metadata, hash) : null,
          },
        }
      : {}),
    ...(leaseId ? { secret: { lease_id: leaseId } } : {}),
    data: data ? hashStrings(data, hash) : null,
    ...(Array.isArray(body.warnings) ? { warnings: body.warnings } : {}),
  };
}

function errorOf(response: AuditedResponse): string | undefined {
  const errors = (response.body as { errors?: unknown } | undefined)?.errors;
  return Array.isArray(errors) && errors.length > 0 ? errors.join('; ') : undefined;
}

/**
 * Old clients put tokens in paths (`auth/token/lookup/<token>`): a path segment after those endpoints, and any
 * token-shaped text, is hashed like the rest of the entry's secrets.
 */
function tokensHashed(path: string, hash: (text: string) => string): string {
  const inPath = path.match(/^(auth\/token\/(?:lookup|renew|revoke|revoke-orphan)\/)(.+)$/);
  if (inPath) return `${inPath[1]}${hash(inPath[2] as string)}`;
  return anyTokenHashed(path, hash);
}

/** Anything shaped like one of our tokens, wherever it stands in a text (a path, an error message naming the path). */
const anyTokenHashed = (text: string, hash: (text: string) => string) =>
  text.replace(/hv[sbr]\.[\w.-]+/g, (token) => hash(token));
