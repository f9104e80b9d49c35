import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';

/**
 * The secrets service's routes as its path tables declare them, mounted where the fuzz (test/fuzz) and the OpenAPI
 * test (test/secrets/openapi.test.ts) mount each backend type: the system backends where the core puts them.
 */
export const mountOf: Record<string, string> = {
  system: 'sys',
  token: 'auth/token',
  identity: 'identity',
  kv: 'secret',
  jwt: 'auth/jwt',
  oidc: 'auth/oidc',
  mesh: 'mesh',
  ldap: 'ldap',
  cloud: 'cloud',
};

export interface Route {
  service: 'secrets' | 'scheduler';
  /** The route as written in its table, e.g. `ldap/static-role/:name+` or `POST /v1/acl/role/:id`. */
  name: string;
  /** Path segments; a parameter is `:name`, `:name+` or `:name*`. */
  segments: string[];
  methods: string[];
  fields: string[];
}

/** Every row of the backends' path tables under its mount, with the methods that reach its operations. */
export function secretsRoutes(backends: Backend[]): Route[] {
  const methodsOf: Record<string, string[]> = {
    read: ['GET'],
    list: ['LIST', 'GET?list'],
    create: ['POST', 'PUT'],
    update: ['POST', 'PUT'],
    delete: ['DELETE'],
  };
  return backends.flatMap((backend) =>
    backend.paths.map((spec) => {
      const mount = mountOf[backend.type];
      if (!mount) throw new Error(`no fuzz mount for backend type ${backend.type}: add it to mountOf`);
      const pattern = spec.pattern ? `${mount}/${spec.pattern}` : mount;
      // biome-ignore lint/suspicious/noExplicitAny: zod's object shape, read to name the fields
      const shape = (spec.fields as any).shape ?? {};
      return {
        service: 'secrets' as const,
        name: pattern,
        segments: pattern.split('/'),
        methods: [...new Set(Object.keys(spec.operations).flatMap((operation) => methodsOf[operation] ?? []))],
        fields: Object.keys(shape),
      };
    }),
  );
}
