import { expect } from 'vitest';
import { baseDn, managerDn, managerPassword, type Slapd } from './slapd.ts';

/**
 * What the crash tests of the directory engine share (test/local/crash-*.test.ts): a call to the secrets service that
 * the test restarts under it, and the directory they all configure on a real slapd.
 */
export interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  body: any;
}

export type Call = (method: string, url: string, body?: unknown, token?: string) => Promise<Reply>;

/** A call to the secrets service at `base()` (read at each call: the service moves between restarts), as `token`. */
export const callerOf =
  (base: () => string, rootToken: string): Call =>
  async (method, url, body, token = rootToken) => {
    const response = await fetch(`${base()}/v1/${url}`, {
      method,
      headers: { 'X-Secrets-Token': token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

/**
 * The directory engine at `ldap/` on `slapd` (the manager binds, users anywhere under the base), each of `roles` a
 * static role rotated daily, and `accounts` the library set `pool` lending them for an hour.
 */
export async function configureDirectory(
  call: Call,
  slapd: Slapd,
  { roles, accounts }: { roles: readonly string[]; accounts: readonly string[] },
): Promise<void> {
  const config = {
    binddn: managerDn,
    bindpass: managerPassword,
    url: slapd.url,
    userdn: baseDn,
    request_timeout: '10s',
  };
  expect((await call('POST', 'ldap/config', config)).status).toBe(204);
  for (const role of roles)
    expect((await call('POST', `ldap/static-role/${role}`, { username: role, rotation_period: '24h' })).status).toBe(
      204,
    );
  expect((await call('POST', 'ldap/library/pool', { service_account_names: accounts, ttl: '1h' })).status).toBe(204);
}
