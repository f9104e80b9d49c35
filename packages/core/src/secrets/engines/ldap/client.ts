import type { ConnectionOptions } from 'node:tls';
import {
  type Attribute,
  type Change,
  Client,
  type Entry,
  escapeFilter,
  InvalidCredentialsError,
  NoSuchObjectError,
  ResultCodeError,
  SizeLimitExceededError,
} from 'ldapts';
import { DomainError } from '../../../lib/errors.ts';
import type { DirectoryConfig } from './config-model.ts';
import { passwordChanges } from './schemas.ts';

/**
 * Connections to the directory with ldapts: each `url` of the config tried in order on connection errors,
 * StartTLS or LDAPS with the config's CA, client certificate and TLS versions, and the request and
 * connection timeouts (the smaller of both when both are set, as Vault does).
 */

/** The directory could not be reached or refused an operation: the caller sees a 502 naming why. */
export class DirectoryError extends DomainError {
  constructor(
    message: string,
    readonly code?: number,
    /** The server never got the operation, or answered it with an error: nothing changed there. */
    readonly unchanged = code !== undefined,
  ) {
    super('upstream', message);
  }
}

const tlsVersions = { tls10: 'TLSv1', tls11: 'TLSv1.1', tls12: 'TLSv1.2', tls13: 'TLSv1.3' } as const;

/** The milliseconds ldapts waits for a TCP connection and for each operation. */
export function timeouts(config: DirectoryConfig): { connectMs: number; requestMs: number } {
  const { request_timeout: requestTimeout, connection_timeout: connectionTimeout } = config.fields;
  if (requestTimeout > 0 && connectionTimeout > 0) {
    const smaller = Math.min(requestTimeout, connectionTimeout) * 1000;
    return { connectMs: smaller, requestMs: smaller };
  }
  return { connectMs: (connectionTimeout || 30) * 1000, requestMs: (requestTimeout || 90) * 1000 };
}

export function tlsOptions(config: DirectoryConfig): ConnectionOptions {
  const { fields } = config;
  return {
    rejectUnauthorized: !fields.insecure_tls,
    ...(fields.certificate ? { ca: [fields.certificate] } : {}),
    ...(fields.client_tls_cert && config.clientTlsKey
      ? { cert: fields.client_tls_cert, key: config.clientTlsKey }
      : {}),
    minVersion: tlsVersions[fields.tls_min_version],
    maxVersion: tlsVersions[fields.tls_max_version],
  };
}

export const urlsOf = (config: DirectoryConfig) =>
  config.fields.url
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');

/** A bound connection. */
export class Directory {
  constructor(
    private readonly client: Client,
    readonly config: DirectoryConfig,
    readonly url: string,
  ) {}

  /** The one entry at `dn`, or undefined. */
  async entryAt(dn: string): Promise<Entry | undefined> {
    try {
      const { searchEntries } = await this.client.search(dn, {
        scope: 'base',
        filter: '(objectClass=*)',
        attributes: ['dn'],
      });
      return searchEntries[0];
    } catch (error) {
      if (error instanceof NoSuchObjectError) return undefined;
      throw directoryError(error, `searching for "${dn}"`);
    }
  }

  /**
   * Entries under `userdn` whose `userattr` equals `username`: at most two, which is all the caller needs to know (one
   * is an answer, two are an error), so a directory holding many never sends them all (issue 39 §3). `more` says the
   * server stopped at that limit.
   */
  async findUser(username: string): Promise<{ entries: Entry[]; more: boolean }> {
    const { userdn, userattr } = this.config.fields;
    try {
      const { searchEntries } = await this.client.search(userdn, {
        scope: 'sub',
        filter: `(${userattr}=${escapeFilter`${username}`})`,
        attributes: ['dn'],
        sizeLimit: 2,
      });
      return { entries: searchEntries, more: false };
    } catch (error) {
      if (error instanceof NoSuchObjectError) return { entries: [], more: false };
      if (error instanceof SizeLimitExceededError) return { entries: [], more: true };
      throw directoryError(error, `searching for ${userattr}=${username} under "${userdn}"`);
    }
  }

  /** Sets the password of `dn` with the modify operation of the config's schema. */
  async setPassword(dn: string, password: string): Promise<void> {
    try {
      await this.client.modify(dn, passwordChanges(this.config.fields.schema, password));
    } catch (error) {
      throw directoryError(error, `setting the password of "${dn}"`);
    }
  }

  add(dn: string, attributes: Attribute[]): Promise<void> {
    return this.client.add(dn, attributes);
  }
  del(dn: string): Promise<void> {
    return this.client.del(dn);
  }
  modify(dn: string, changes: Change[]): Promise<void> {
    return this.client.modify(dn, changes);
  }
  modifyDN(dn: string, newDn: string): Promise<void> {
    return this.client.modifyDN(dn, newDn);
  }
}

/**
 * Connects to the first reachable URL, binds (as `binddn`, or as `bindAs`), runs `work` and always unbinds.
 * A server that answers with an LDAP error (bad password, no such entry) stops the failover: only
 * connection errors move on to the next URL.
 */
export async function withDirectory<T>(
  config: DirectoryConfig,
  work: (directory: Directory) => Promise<T>,
  bindAs: { dn: string; password: string } = { dn: bindIdentity(config), password: config.bindpass },
): Promise<T> {
  const urls = urlsOf(config);
  const { connectMs, requestMs } = timeouts(config);
  const failures: string[] = [];
  for (const url of urls) {
    // ldapts speaks TLS from the first byte whenever it is given TLS options: only for ldaps:// URLs.
    const ldaps = url.toLowerCase().startsWith('ldaps:');
    const client = new Client({
      url,
      timeout: requestMs,
      connectTimeout: connectMs,
      strictDN: false,
      ...(ldaps ? { tlsOptions: tlsOptions(config) } : {}),
    });
    try {
      try {
        if (config.fields.starttls) {
          if (ldaps) throw new DirectoryError(`cannot use StartTLS on an ldaps:// URL (${url})`, undefined, true);
          await client.startTLS(tlsOptions(config));
        }
        await client.bind(bindAs.dn, bindAs.password);
      } catch (error) {
        if (error instanceof ResultCodeError || error instanceof DirectoryError) throw error;
        failures.push(`${url}: ${messageOf(error)}`);
        continue;
      }
      return await work(new Directory(client, config, url));
    } catch (error) {
      throw directoryError(error, `binding as "${bindAs.dn}" at ${url}`);
    } finally {
      await client.unbind().catch(() => undefined);
    }
  }
  throw new DirectoryError(
    `failed to connect to the directory: ${failures.join('; ') || 'no url configured'}`,
    undefined,
    true,
  );
}

/** Whether `dn` can bind with `password`: true, false on invalid credentials, DirectoryError when unreachable. */
export async function canBind(config: DirectoryConfig, dn: string, password: string): Promise<boolean> {
  try {
    return await withDirectory(config, async () => true, { dn, password });
  } catch (error) {
    if (error instanceof DirectoryError && error.code === new InvalidCredentialsError().code) return false;
    throw error;
  }
}

/** `binddn@upndomain` when a UPN domain is configured (Active Directory), else the bind DN. */
export const bindIdentity = (config: DirectoryConfig) =>
  config.fields.upndomain ? `${config.fields.binddn}@${config.fields.upndomain}` : config.fields.binddn;

export function directoryError(error: unknown, doing: string): Error {
  if (error instanceof DomainError) return error;
  if (error instanceof ResultCodeError)
    return new DirectoryError(`directory error ${doing}: ${error.message} (LDAP result ${error.code})`, error.code);
  return new DirectoryError(`directory error ${doing}: ${messageOf(error)}`);
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
