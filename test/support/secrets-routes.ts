import {
  allSecretsFamilies,
  backendsOf,
  defaultMountPath,
  defaultMountsOf,
} from '../../packages/core/src/secrets/families.ts';
import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';

/** Where a backend is mounted in the test stage: where every stage mounts it by default (`defaultMountPath`). */
export const mountPathOf = defaultMountPath;

/** Each backend type's mount path, derived from the backends (the family list's, or an extended list in a test). */
export const mountsOf = (backends: Backend[]): Record<string, string> =>
  Object.fromEntries(backends.map((backend) => [backend.type, mountPathOf(backend)]));

/**
 * The mounts a test enables so that every backend is served at `mountPathOf`: every backend but the built-ins, with
 * the table it goes in and its path in that table (`auth/jwt` is `jwt` in the auth table).
 */
export function mountsToEnable(backends: Backend[]): Array<{ table: 'secret' | 'auth'; path: string; type: string }> {
  return defaultMountsOf(backends).map(({ path, type, kind }) =>
    kind === 'auth'
      ? { table: 'auth' as const, path: path.replace(/^auth\//, ''), type }
      : { table: 'secret' as const, path, type },
  );
}

/**
 * The secrets service's routes as its path tables declare them, mounted where the fuzz (test/fuzz) and the OpenAPI
 * test (test/secrets/openapi.test.ts) mount each backend type: every backend of the family list.
 */
export const mountOf: Record<string, string> = mountsOf(backendsOf(allSecretsFamilies));

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
      const mount = mountPathOf(backend);
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
