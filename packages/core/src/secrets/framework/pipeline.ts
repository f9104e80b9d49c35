import { DomainError } from '../../lib/errors.ts';
import { uuid } from '../../lib/random.ts';
import type { AuditedRequest } from '../audit/audit-log.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import { authenticate, authorise, readAhead } from './authorise.ts';
import type { Request } from './backend.ts';
import { decodeFields, fieldDecoder, requestInput } from './decode.ts';
import type { RawRequest, RawResponse } from './raw.ts';
import { envelope, withoutEnvelope } from './render.ts';
import { Routes } from './route.ts';
import { issue, operationFor } from './run.ts';
import type { SecretsServices } from './services.ts';
import { beyondStorageLimits } from '../../front/storage-limits.ts';
import { systemFor } from './system.ts';

export type { RawRequest, RawResponse } from './raw.ts';
export { authBlock } from './render.ts';
export { maxBodyBytes } from '../../front/body-limit.ts';

/** What the audit log knows of a request so far, and whether its request entry was written. */
interface AuditState {
  request: AuditedRequest;
  written: boolean;
}

/**
 * The request pipeline every backend shares, in stages: route (mount, path row, operation), authorise (token,
 * address, policy, uses), decode (body, query and captures into the row's fields), run (the handler, then the
 * lease or login token its reply earned) and render (Vault's envelope). Every failure is a DomainError whose kind
 * sets the status (DynamoDB's limits are translated into one); no input reaches a 500 unless a handler is wrong.
 */
export class Pipeline {
  private readonly routes: Routes;

  constructor(private readonly core: SecretsServices) {
    this.routes = new Routes(core);
  }

  async handle(raw: RawRequest): Promise<RawResponse> {
    const requestId = uuid();
    const started = performance.now();
    let response: RawResponse;
    const audit: AuditState = {
      request: {
        id: requestId,
        operation: raw.method.toLowerCase(),
        path: raw.path.replace(/^\/v1\//, ''),
        remoteAddress: raw.clientIp,
      },
      written: false,
    };
    try {
      response = await this.answer(raw, requestId, audit);
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

  private async answer(raw: RawRequest, requestId: string, audit: AuditState): Promise<RawResponse> {
    if (raw.refusal) throw raw.refusal;
    // A process that has not seen the service initialised reads its epoch first (another process may have since).
    await this.core.store.settleEpoch();
    const route = await this.routes.route(raw);
    const { spec, mount, path } = route;

    const ahead = await readAhead(this.core, raw, route);
    audit.request.mount = mount;
    const caller = spec.unauthenticated ? undefined : await authenticate(this.core, raw, route, ahead);
    if (caller) Object.assign(audit.request, { token: caller.token, entry: caller.entry });

    // The audit entry, the parameter constraints and the handler all see one set of fields (`decode.ts`): recorded
    // here, so that a request refused for its fields (400, 403) is audited with what it tried.
    const { body, parameters } = requestInput(raw, route);
    audit.request.data = parameters;
    const { data, warnings } = decodeFields({ body, parameters }, route);
    const request: Request = {
      operation: 'read',
      path: route.relative,
      data,
      body,
      mount,
      storage: new MountStorage(
        this.core.store,
        this.core.keyring,
        mount.uuid,
        ahead?.storage,
        this.core.backends.get(mount.type)?.authenticatedItems,
      ),
      caller,
      system: systemFor(this.core, mount),
      requestId,
      clientIp: raw.clientIp,
      headers: raw.headers,
    };
    const { operation, handler } = await operationFor(route, request, raw.method);
    request.operation = operation;

    audit.request.operation = operation;
    const remainingUses = caller
      ? await authorise(this.core, caller, path, operation, spec.sudo, parameters, fieldDecoder(route))
      : undefined;
    // Fail closed: with audit devices enabled, a request none of them recorded never reaches its handler.
    await this.core.audit.log.request(audit.request);
    audit.written = true;
    try {
      const reply = await handler(request);
      const allWarnings = [...warnings, ...(reply?.warnings ?? [])];
      return (
        withoutEnvelope(request, reply, allWarnings) ??
        envelope(request, reply, allWarnings, await issue(this.core, request, reply))
      );
    } finally {
      if (caller && remainingUses === 0) await this.core.tokens.revoke(caller.entry.hash);
    }
  }

  /** The response entry of an audited request; a request refused before its handler gets its request entry with the error. */
  private async auditAfter(audit: AuditState, response: RawResponse): Promise<void> {
    if (audit.written) return this.core.audit.log.response(audit.request, response);
    const errors = (response.body as { errors?: string[] } | undefined)?.errors;
    await this.core.audit.log.request(audit.request, errors?.join('; ') || `status ${response.status}`).catch(() => {});
  }

  /** The one place errors become statuses: a DomainError's kind, DynamoDB's limits as one, anything else a 500. */
  private failure(error: unknown, requestId: string, path: string): RawResponse {
    const known = error instanceof DomainError ? error : beyondStorageLimits(error);
    if (known) {
      // An upstream failure (directory, cloud, mesh) is the operator's to see, not only the caller's.
      if (known.status >= 500)
        this.core.log.error('upstream failure', {
          requestId,
          path: loggablePath(path),
          status: known.status,
          error: known.message,
        });
      return { status: known.status, body: { errors: known.message ? [known.message] : [] } };
    }
    this.core.log.error('unhandled error', {
      requestId,
      path: loggablePath(path),
      error: error instanceof Error ? error.message : String(error),
    });
    return { status: 500, body: { errors: [`internal error (request ${requestId})`] } };
  }
}

const maxLoggedPathLength = 512;

/**
 * The path as a log line may show it: old Vault clients put tokens in URLs (`auth/token/lookup/<token>`), and
 * anything shaped like one of our tokens is taken out wherever it appears. Very long paths are cut. A path the front
 * refused is logged as sent, so the patterns look at it as a lenient reader would (escapes decoded, empty and `.`
 * segments dropped, `auth/token` in any case): a token spelled `h%76s.…` or put after `auth/token//lookup/` is taken
 * out too (`test/attacks/log-redaction.test.ts`).
 */
export function loggablePath(path: string): string {
  const view = /%|\/\.?\//.test(path) ? leniently(path) : path;
  // Most paths hold no token and are short: logged as they are, without running the patterns below.
  if (path.length <= maxLoggedPathLength && !view.includes('hv') && !/^\/v1\/auth\/token\//i.test(view)) return path;
  const redacted = view
    .replace(/^(\/v1\/auth\/token\/(?:lookup|renew|revoke|revoke-orphan)\/).+$/i, '$1<redacted>')
    .replace(/(^|\/)hv[sbr]\.[^/]*/g, '$1<redacted>');
  const shown = redacted === view ? path : redacted;
  return shown.length > maxLoggedPathLength ? `${shown.slice(0, maxLoggedPathLength)}…` : shown;
}

/** `path` with its `%XX` escapes decoded one byte each (a malformed one left as is) and empty or `.` segments dropped. */
function leniently(path: string): string {
  return path
    .replace(/%[0-9a-f]{2}/gi, (encoded) => String.fromCharCode(Number.parseInt(encoded.slice(1), 16)))
    .replace(/\/(?:\.?\/)+/g, '/');
}
