/** A verified JWT's claims, and how logins name one: a top-level name or an RFC 6901 JSON pointer. */

/** A claim that does not satisfy what the login expects; the message says which and why. */
export class ClaimError extends Error {}

export type Claims = Record<string, unknown>;

/**
 * RFC 6901 JSON pointer lookup (`/groups/0`, `/https:~1~1example.com~1team`). Hand-written: the rule is ten
 * lines and the libraries that offer it bring whole JSON-schema stacks.
 */
export function jsonPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === 'object' && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * A claim by the name a mapping or binding gives it, as Vault's and Nomad's `getClaim` read it: a name starting
 * with `/` is a JSON pointer, anything else a top-level claim. A `null` claim counts as absent.
 */
export function claimAt(claims: Claims, name: string): unknown {
  const value = name.startsWith('/')
    ? jsonPointer(claims, name)
    : Object.hasOwn(claims, name)
      ? claims[name]
      : undefined;
  return value === null ? undefined : value;
}
