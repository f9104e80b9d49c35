import { maxBodyBytes } from '../../front/body-limit.ts';
import { badRequest, notFound, tooLarge, unsupported } from '../../lib/errors.ts';
import { canonicalDecodedPath } from '../../lib/request-path.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import type { Backend, Operation, PathSpec } from './backend.ts';
import type { RawRequest } from './raw.ts';
import { parseListFlag } from './request-body.ts';
import { type CompiledPath, compilePaths, matchPaths } from './router.ts';
import type { SecretsServices } from './services.ts';

/** Where a request goes: its mount, the path row that answers it, and the operation the method asks for. */
export interface Route {
  /** The path after `/v1/`. */
  path: string;
  /** The path inside the mount. */
  relative: string;
  /** `write` until the path row says whether it is a `create` or an `update` (see `run.ts`). */
  operation: Operation | 'write';
  mount: MountEntry;
  backend: Backend;
  spec: PathSpec;
  /** The pattern's captures. */
  params: Record<string, string>;
}

/** The operations a POST or PUT may be. */
export const writeKinds: Operation[] = ['create', 'update'];

/** Every backend's path rows, compiled once per process, and the routing of a request through them. */
export class Routes {
  private readonly compiled = new Map<string, CompiledPath[]>();

  constructor(private readonly core: Pick<SecretsServices, 'backends' | 'mounts'>) {
    for (const backend of core.backends.values()) this.compiled.set(backend.type, compilePaths(backend));
  }

  /** The mount, path row and operation of a request; a 404, 405 or 413 when there is none or it is too large. */
  async route(raw: RawRequest): Promise<Route> {
    // The front already made the path canonical (`lib/request-path.ts`); a caller that hands the pipeline a decoded
    // path itself gets the same rules. `path` is then the only string authorised, routed and captured from.
    const canonical = canonicalDecodedPath(raw.path);
    if (canonical.problem !== undefined) throw badRequest(canonical.problem);
    if (!canonical.decoded.startsWith('/v1/')) throw notFound(`no handler for route "${raw.path}"`);
    const path = canonical.decoded.slice('/v1/'.length);
    const operation = operationOf(raw.method, raw.query);
    if (Buffer.byteLength(raw.body) > maxBodyBytes) throw tooLarge(`request body larger than ${maxBodyBytes} bytes`);

    const mount = await this.core.mounts.resolve(path);
    const backend = mount && this.core.backends.get(mount.type);
    if (!mount || !backend) throw notFound(`no handler for route "${path}"`);
    const relative = path.length < mount.path.length ? '' : path.slice(mount.path.length);
    const matches = matchPaths(this.compiled.get(backend.type) ?? [], relative);
    if (matches.length === 0) throw notFound(`unsupported path "${path}"`);
    const matched = matches.find((candidate) => supports(candidate.spec, operation));
    if (!matched) throw unsupported(`unsupported operation ${raw.method} on "${path}"`);
    const stored = canonicalCaptures(matched.spec, relative, matched.params);
    return {
      path: stored.relative === relative ? path : mount.path + stored.relative,
      relative: stored.relative,
      operation,
      mount,
      backend,
      spec: matched.spec,
      params: stored.params,
    };
  }
}

/** The path and captures with each `canonicalCaptures` capture in its stored spelling (see `PathSpec`). */
function canonicalCaptures(
  spec: PathSpec,
  relative: string,
  params: Record<string, string>,
): { relative: string; params: Record<string, string> } {
  if (!spec.canonicalCaptures) return { relative, params };
  let rewritten = relative;
  const canonical = { ...params };
  for (const [name, canonicalise] of Object.entries(spec.canonicalCaptures)) {
    const value = params[name];
    if (value === undefined) continue;
    const stored = canonicalise(value);
    if (stored === value) continue;
    if (!rewritten.endsWith(value))
      throw new Error(`path row "${spec.pattern}": only its last capture may be canonicalised`);
    rewritten = rewritten.slice(0, rewritten.length - value.length) + stored;
    canonical[name] = stored;
  }
  return { relative: rewritten, params: canonical };
}

const supports = (spec: PathSpec, op: Operation | 'write') =>
  op === 'write' ? writeKinds.some((kind) => spec.operations[kind]) : spec.operations[op] !== undefined;

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
