import { randomUUID } from 'node:crypto';
import { ConsulError, type ParsedRequest, type Token } from './model.ts';
import type { ConsulState } from './state.ts';

/** The legacy ACL API (below 1.11): `PUT /v1/acl/create`, `PUT /v1/acl/destroy/:id`, `GET /v1/acl/info/:id`, `GET /v1/acl/list`. */
export function legacyEndpoints(s: ConsulState) {
  const { tokens, nextIndex, isManagement, decode, field, isString } = s;
  function legacyCreate(request: ParsedRequest, caller: Token): unknown {
    const body = decode(request.body, 'ACL', ['ID', 'Name', 'Type', 'Rules']);
    requireLegacyManagement(caller);
    const type = field(body, 'Type', isString, 'ACL', 'string') || 'client';
    if (type !== 'client' && type !== 'management') throw new ConsulError(500, `Invalid ACL Type "${type}"`);
    const secret = body.ID === undefined || body.ID === '' ? randomUUID() : String(body.ID);
    if ([...tokens.values()].some((token) => token.secret === secret))
      throw new ConsulError(500, 'ACL with that ID already exists');
    const at = nextIndex();
    const token: Token = {
      accessor: randomUUID(),
      secret,
      description: field(body, 'Name', isString, 'ACL', 'string') ?? '',
      policies: [],
      roles: [],
      serviceIdentities: [],
      nodeIdentities: [],
      local: false,
      createTime: new Date().toISOString(),
      createIndex: at,
      modifyIndex: at,
      namespace: 'default',
      partition: 'default',
      legacy: { type, rules: field(body, 'Rules', isString, 'ACL', 'string') ?? '' },
    };
    tokens.set(token.accessor, token);
    return { ID: token.secret };
  }

  /** The legacy endpoints ask for a management token, not a permission. */
  function requireLegacyManagement(caller: Token): void {
    if (!isManagement(caller)) throw new ConsulError(403, 'Permission denied');
  }

  const legacyView = (token: Token) => ({
    CreateIndex: token.createIndex,
    ModifyIndex: token.modifyIndex,
    ID: token.secret,
    Name: token.description,
    Type: token.legacy?.type ?? (isManagement(token) ? 'management' : 'client'),
    Rules: token.legacy?.rules ?? '',
  });

  return { legacyCreate, requireLegacyManagement, legacyView };
}
