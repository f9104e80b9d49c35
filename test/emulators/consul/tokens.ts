import { randomUUID } from 'node:crypto';
import { anonymousAccessor, atLeast, ConsulError, type ParsedRequest, type Token, uuidPattern } from './model.ts';
import type { ConsulState } from './state.ts';

/** Tokens: `PUT /v1/acl/bootstrap`, `/v1/acl/token` (create, read, delete, `self`) and `/v1/acl/tokens`. */
export function tokenEndpoints(s: ConsulState) {
  const {
    tokens,
    nextIndex,
    managementToken,
    live,
    inScope,
    allows,
    demand,
    tokenView,
    decode,
    field,
    isString,
    isBool,
    entKeys,
    scopeOf,
    policyLinks,
    roleLinks,
    serviceIdentities,
    nodeIdentities,
    expiration,
    freshId,
  } = s;
  function bootstrap(): unknown {
    if (s.bootstrapIndex > 0)
      throw new ConsulError(
        403,
        `Permission denied: ACL bootstrap no longer allowed (reset index: ${s.bootstrapIndex})`,
      );
    const token = managementToken(randomUUID(), 'Bootstrap Token (Global Management)');
    tokens.set(token.accessor, token);
    s.bootstrapIndex = token.createIndex;
    if (!atLeast(s.version, 1, 4)) return { ID: token.secret };
    return { ID: token.secret, ...tokenView(token, true) };
  }

  function createToken(request: ParsedRequest, caller: Token): unknown {
    const known = [
      'AccessorID',
      'SecretID',
      'Description',
      'Policies',
      'Local',
      'CreateTime',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
      ...entKeys(),
    ];
    if (atLeast(s.version, 1, 5))
      known.push('Roles', 'ServiceIdentities', 'ExpirationTime', 'ExpirationTTL', 'AuthMethod');
    if (atLeast(s.version, 1, 8, 1)) known.push('NodeIdentities');
    if (!atLeast(s.version, 1, 11)) known.push('Type', 'Rules');
    const body = decode(request.body, 'Token', known);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    if (body.Rules) throw new ConsulError(500, 'Rules cannot be specified for this token');
    if (body.Type) throw new ConsulError(500, 'Type cannot be specified for this token');
    if (body.AuthMethod) throw new ConsulError(500, 'AuthMethod field is disallowed outside of login');
    const local = field(body, 'Local', isBool, 'Token', 'bool') ?? false;
    const createTime = Date.now();
    const at = nextIndex();
    const token: Token = {
      accessor: freshId(body.AccessorID, 'AccessorID'),
      secret: freshId(body.SecretID, 'SecretID'),
      description: field(body, 'Description', isString, 'Token', 'string') ?? '',
      roles: roleLinks(body.Roles, scope, 'Token'),
      policies: policyLinks(body.Policies, scope, 'Token'),
      serviceIdentities: serviceIdentities(body.ServiceIdentities, local, 'Token'),
      nodeIdentities: nodeIdentities(body.NodeIdentities, 'Token'),
      local,
      createTime: new Date(createTime).toISOString(),
      createIndex: at,
      modifyIndex: at,
      ...scope,
    };
    const expires = expiration(body, createTime);
    if (expires) token.expirationTime = expires;
    tokens.set(token.accessor, token);
    return tokenView(token, true);
  }

  function readToken(request: ParsedRequest, caller: Token, accessor: string): unknown {
    if (accessor === 'self') return tokenView(caller, true);
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:read');
    const token = tokens.get(accessor);
    if (!token || !live(token) || !inScope(token, scope)) throw new ConsulError(403, 'ACL not found');
    return tokenView(token, allows(caller, 'acl:write'));
  }

  function deleteToken(request: ParsedRequest, caller: Token, accessor: string): unknown {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:write');
    if (!uuidPattern.test(accessor)) throw new ConsulError(500, 'Accessor ID is missing or an invalid UUID');
    if (accessor === anonymousAccessor)
      throw new ConsulError(500, 'Delete operation not permitted on the anonymous token');
    const token = tokens.get(accessor);
    // Consul answers true for a token that is not there: there is nothing to do.
    if (token && inScope(token, scope)) tokens.delete(accessor);
    return true;
  }

  function listTokens(request: ParsedRequest, caller: Token): unknown {
    const everywhere = request.query.ns === '*';
    const scope = everywhere ? undefined : scopeOf(request, caller);
    demand(caller, 'acl:read');
    const showSecret = allows(caller, 'acl:write');
    return [...tokens.values()]
      .filter((token) => live(token) && (!scope || inScope(token, scope)))
      .filter((token) => !request.query.policy || token.policies.some((link) => link.ID === request.query.policy))
      .filter((token) => !request.query.role || token.roles.some((link) => link.ID === request.query.role))
      .map((token) => tokenView(token, showSecret));
  }

  return { bootstrap, createToken, readToken, deleteToken, listTokens };
}
