import { agentEndpoints } from './agent.ts';
import { legacyEndpoints } from './legacy.ts';
import {
  anonymousAccessor,
  atLeast,
  ConsulError,
  globalManagementId,
  type ParsedRequest,
  type Token,
} from './model.ts';
import { policyEndpoints } from './policies.ts';
import { roleEndpoints } from './roles.ts';
import type { ConsulState } from './state.ts';
import { tenancyEndpoints } from './tenancy.ts';
import { tokenEndpoints } from './tokens.ts';

/** One endpoint: its path after `/v1/` (`:name` takes one segment), its methods, and the versions that have it. */
interface Route {
  path: string;
  methods: string[];
  /** Whether the server's version and edition have the endpoint; without it, always. */
  when?: (s: ConsulState) => boolean;
  /** The caller's token is checked before the method (the tenancy endpoints), as Consul does there. */
  callerFirst?: boolean;
  run: (request: ParsedRequest, params: Record<string, string>, caller: () => Token) => unknown;
}

/** Every endpoint of the emulator, and the router over them: 404 for an unknown path, 405 for a wrong method. */
export function consulRouter(s: ConsulState): (request: ParsedRequest) => unknown {
  const {
    tokens,
    policies,
    roles,
    namespaces,
    partitions,
    bySecret,
    live,
    inScope,
    scopeOf,
    demand,
    callerOf,
    policyView,
    roleView,
    namespaceView,
    partitionView,
  } = s;
  const { bootstrap, createToken, readToken, deleteToken, listTokens } = tokenEndpoints(s);
  const { writePolicy, findPolicy, deletePolicy } = policyEndpoints(s);
  const { writeRole, findRole, deleteRole } = roleEndpoints(s);
  const { legacyCreate, requireLegacyManagement, legacyView } = legacyEndpoints(s);
  const { writeNamespace, deleteNamespace, writePartition, deletePartition } = tenancyEndpoints(s);
  const { agentSelf } = agentEndpoints(s);

  const tokenApi = () => atLeast(s.version, 1, 4);
  const roleApi = () => atLeast(s.version, 1, 5);
  const legacyApi = () => !atLeast(s.version, 1, 11);
  const namespaceApi = () => s.enterprise && atLeast(s.version, 1, 7);
  const partitionApi = () => s.enterprise && atLeast(s.version, 1, 11);

  const routes: Route[] = [
    { path: 'agent/self', methods: ['GET'], run: (_request, _params, caller) => agentSelf(caller()) },
    { path: 'acl/bootstrap', methods: ['PUT'], run: () => bootstrap() },

    {
      path: 'acl/token',
      methods: ['PUT'],
      when: tokenApi,
      run: (request, _params, caller) => createToken(request, caller()),
    },
    {
      path: 'acl/token/:id',
      methods: ['GET', 'DELETE'],
      when: tokenApi,
      run: (request, { id }, caller) =>
        request.method === 'GET'
          ? readToken(request, caller(), id as string)
          : deleteToken(request, caller(), id as string),
    },
    {
      path: 'acl/tokens',
      methods: ['GET'],
      when: tokenApi,
      run: (request, _params, caller) => listTokens(request, caller()),
    },

    {
      path: 'acl/policy',
      methods: ['PUT'],
      when: tokenApi,
      run: (request, _params, caller) => writePolicy(request, caller()),
    },
    {
      path: 'acl/policy/name/:name',
      methods: ['GET'],
      when: tokenApi,
      run: (request, { name }, caller) => policyView(findPolicy(request, caller(), { name: name as string })),
    },
    {
      path: 'acl/policy/:id',
      methods: ['GET', 'PUT', 'DELETE'],
      when: tokenApi,
      run: (request, { id }, caller) => {
        if (request.method === 'GET') return policyView(findPolicy(request, caller(), { id: id as string }));
        return request.method === 'PUT'
          ? writePolicy(request, caller(), id)
          : deletePolicy(request, caller(), id as string);
      },
    },
    {
      path: 'acl/policies',
      methods: ['GET'],
      when: tokenApi,
      run: (request, _params, caller) => {
        const who = caller();
        const scope = scopeOf(request, who);
        demand(who, 'acl:read');
        return [...policies.values()]
          .filter((policy) => inScope(policy, scope) || policy.id === globalManagementId)
          .map((policy) => policyView(policy, false));
      },
    },

    {
      path: 'acl/role',
      methods: ['PUT'],
      when: roleApi,
      run: (request, _params, caller) => writeRole(request, caller()),
    },
    {
      path: 'acl/role/name/:name',
      methods: ['GET'],
      when: roleApi,
      run: (request, { name }, caller) => roleView(findRole(request, caller(), { name: name as string })),
    },
    {
      path: 'acl/role/:id',
      methods: ['GET', 'PUT', 'DELETE'],
      when: roleApi,
      run: (request, { id }, caller) => {
        if (request.method === 'GET') return roleView(findRole(request, caller(), { id: id as string }));
        return request.method === 'PUT'
          ? writeRole(request, caller(), id)
          : deleteRole(request, caller(), id as string);
      },
    },
    {
      path: 'acl/roles',
      methods: ['GET'],
      when: roleApi,
      run: (request, _params, caller) => {
        const who = caller();
        const scope = scopeOf(request, who);
        demand(who, 'acl:read');
        return [...roles.values()].filter((role) => inScope(role, scope)).map(roleView);
      },
    },

    {
      path: 'acl/create',
      methods: ['PUT'],
      when: legacyApi,
      run: (request, _params, caller) => legacyCreate(request, caller()),
    },
    {
      path: 'acl/destroy/:secret',
      methods: ['PUT'],
      when: legacyApi,
      run: (_request, { secret }, caller) => {
        requireLegacyManagement(caller());
        const token = [...tokens.values()].find((item) => item.secret === secret);
        if (token && token.accessor !== anonymousAccessor) tokens.delete(token.accessor);
        return true;
      },
    },
    {
      path: 'acl/info/:secret',
      methods: ['GET'],
      when: legacyApi,
      run: (_request, { secret }) => {
        const token = bySecret(secret as string);
        return token ? [legacyView(token)] : [];
      },
    },
    {
      path: 'acl/list',
      methods: ['GET'],
      when: legacyApi,
      run: (_request, _params, caller) => {
        requireLegacyManagement(caller());
        return [...tokens.values()].filter(live).map(legacyView);
      },
    },

    {
      path: 'namespace',
      methods: ['PUT'],
      when: namespaceApi,
      callerFirst: true,
      run: (request, _params, caller) => writeNamespace(request, caller()),
    },
    {
      path: 'namespace/:name',
      methods: ['GET', 'PUT', 'DELETE'],
      when: namespaceApi,
      callerFirst: true,
      run: (request, { name }, caller) => {
        if (request.method === 'PUT') return writeNamespace(request, caller(), name);
        if (request.method === 'DELETE') return deleteNamespace(request, caller(), name as string);
        const namespace = namespaces.get(`${request.query.partition || 'default'}/${name}`);
        if (!namespace) throw new ConsulError(404, '');
        return namespaceView(namespace);
      },
    },
    {
      path: 'namespaces',
      methods: ['GET'],
      when: namespaceApi,
      run: (request, _params, caller) => {
        caller();
        const partition = request.query.partition || 'default';
        return [...namespaces.values()].filter((namespace) => namespace.partition === partition).map(namespaceView);
      },
    },
    {
      path: 'partition',
      methods: ['PUT'],
      when: partitionApi,
      callerFirst: true,
      run: (request, _params, caller) => writePartition(request, caller()),
    },
    {
      path: 'partition/:name',
      methods: ['GET', 'PUT', 'DELETE'],
      when: partitionApi,
      callerFirst: true,
      run: (request, { name }, caller) => {
        if (request.method === 'PUT') return writePartition(request, caller(), name);
        if (request.method === 'DELETE') return deletePartition(caller(), name as string);
        const partition = partitions.get(name as string);
        if (!partition) throw new ConsulError(404, '');
        return partitionView(partition);
      },
    },
    {
      path: 'partitions',
      methods: ['GET'],
      when: partitionApi,
      run: (_request, _params, caller) => {
        caller();
        return [...partitions.values()].map(partitionView);
      },
    },
  ];

  const match = (route: Route, segments: string[]): Record<string, string> | undefined => {
    const parts = route.path.split('/');
    if (parts.length !== segments.length) return undefined;
    const params: Record<string, string> = {};
    for (const [position, part] of parts.entries()) {
      const segment = segments[position] as string;
      if (part.startsWith(':')) params[part.slice(1)] = segment;
      else if (part !== segment) return undefined;
    }
    return params;
  };

  return (request) => {
    const segments = request.path
      .split('/')
      .filter((segment) => segment !== '')
      .map(decodeURIComponent);
    if (segments[0] !== 'v1') throw new ConsulError(404, '404 page not found');
    for (const route of routes) {
      if (route.when && !route.when(s)) continue;
      const params = match(route, segments.slice(1));
      if (!params) continue;
      let known: Token | undefined;
      const caller = () => {
        known ??= callerOf(request);
        return known;
      };
      if (route.callerFirst) caller();
      if (!route.methods.includes(request.method)) throw new ConsulError(405, `method ${request.method} not allowed`);
      return route.run(request, params, caller);
    }
    throw new ConsulError(404, '404 page not found');
  };
}
