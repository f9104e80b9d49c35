import type { Backend, PathSpec } from '../framework/backend.ts';
import type { SecretsServices } from '../framework/services.ts';

/**
 * The services the builtin backends (`sys/`, `auth/token/`, `identity/`) are built on, as Vault's system backend and
 * token store are built on its core: the process's parts (`SecretsServices`, which the composition builds as `Core`). Each path table takes only the ones it uses (a
 * `Pick` of these); its handlers use them and their request.
 */
export type BuiltinServices = SecretsServices;

/** A builtin backend: its path table for routing and documents, and `bind` for the one that serves requests. */
export interface BuiltinBackend<Services> extends Backend {
  /** The same backend, its handlers bound to this process's services (`createCore` does it). */
  bind(services: Services): Backend;
}

/**
 * Declares a builtin backend from a function of its services to its path table. The table is built once unbound, for
 * what reads paths without serving them (routing tables, documents, tests); a handler of that one throws if run.
 * `paths` must only use its services inside handlers, never while it builds the table.
 */
export function builtin<Services extends object>(
  type: string,
  kind: Backend['kind'],
  paths: (services: Services) => PathSpec[],
): BuiltinBackend<Services> {
  const unbound = new Proxy({} as Services, {
    get(_, name) {
      throw new Error(`the ${type} backend ran without its services (asked for ${String(name)}): createCore binds it`);
    },
  });
  return { type, kind, paths: paths(unbound), bind: (services) => ({ type, kind, paths: paths(services) }) };
}

/** Whether a backend is a builtin one still to be bound to its services. */
export const isBuiltin = <Services>(backend: Backend): backend is BuiltinBackend<Services> =>
  typeof (backend as Partial<BuiltinBackend<Services>>).bind === 'function';
