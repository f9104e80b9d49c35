import { createPrivateKey, X509Certificate } from 'node:crypto';
import * as z from 'zod';
import type { Clock } from '../../../lib/clock.ts';
import { badRequest, upstreamFailure as upstream } from '../../../lib/errors.ts';
import { type PathSpec, path } from '../../framework/backend.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';
import {
  ConsulClient,
  type MeshAccess,
  MeshBadAnswer,
  MeshServerError,
  MeshUnreachable,
  ServerVersion,
} from './consul-client.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/** `config/access`: where the mesh server is, how to reach it, and the management token the engine acts with. */

const configKey = 'config/access';

interface StoredAccess {
  address: string;
  scheme: MeshAccess['scheme'];
  caCert: string;
  clientCert: string;
  /** `{token, clientKey}`, sealed. */
  sealed: string;
  /** The server's version when last read, so a role write can go on while the server is down. */
  serverVersion?: string;
}

const accessFields = z.object({
  address: typeString
    .pipe(z.string().trim())
    .optional()
    .describe(
      'Address of the mesh server, as "host:port" like "127.0.0.1:8500" (a scheme prefix is accepted). Required.',
    ),
  scheme: z
    .enum(['http', 'https'])
    .optional()
    .describe('URL scheme to reach the mesh server with; defaults to "http".'),
  token: typeString
    .pipe(z.string())
    .default('')
    .describe(
      "ACL token the engine acts with; it must be a management token. If it is not given, the engine bootstraps the server's ACL system and keeps the token it gets.",
    ),
  ca_cert: typeString
    .pipe(z.string())
    .default('')
    .describe("CA certificate to verify the mesh server's certificate with, x509 PEM encoded."),
  client_cert: typeString
    .pipe(z.string())
    .default('')
    .describe(
      'Client certificate for the mesh server\'s TLS communication, x509 PEM encoded; set "client_key" with it.',
    ),
  client_key: typeString
    .pipe(z.string())
    .default('')
    .describe(
      'Private key of "client_cert" for the mesh server\'s TLS communication, PEM encoded; set "client_cert" with it.',
    ),
});

export const configPaths: PathSpec[] = [
  path({
    pattern: 'config/access',
    fields: accessFields,
    summaries: {
      read: "Read the mesh server's address and scheme (never the token or key).",
      create:
        'Configure the access to the mesh server: its address, TLS and the management token the engine acts with.',
      update:
        'Configure the access to the mesh server: its address, TLS and the management token the engine acts with.',
    },
    exists: async ({ storage }) => (await storage.getItem(configKey)) !== undefined,
    operations: {
      read: async ({ storage, mount }) => {
        const access = await requireAccess(storage, mount);
        return { data: { address: access.address, scheme: access.scheme } };
      },
      create: writeAccess,
      update: writeAccess,
    },
  }),
];

async function writeAccess({
  storage,
  mount,
  data,
}: {
  storage: MountStorage;
  mount: MountEntry;
  data: z.output<typeof accessFields>;
}) {
  if (!data.address) throw badRequest('invalid value for "address": is required, the host:port of the mesh server');
  const { address, scheme } = addressAndScheme(data.address, data.scheme);
  checkTls(data.ca_cert, data.client_cert, data.client_key);
  const access: MeshAccess = {
    address,
    scheme,
    token: data.token,
    caCert: data.ca_cert,
    clientCert: data.client_cert,
    clientKey: data.client_key,
  };
  if (!access.token) {
    try {
      access.token = await new ConsulClient(access).bootstrap();
    } catch (error) {
      throw upstreamFailure(error, "no token was given and bootstrapping the mesh server's ACL system failed");
    }
  }
  // Best effort: a server that is down now is asked again at the first role write.
  const version = await new ConsulClient(access).agentVersion().catch(() => undefined);
  const stored: StoredAccess = {
    address,
    scheme,
    caCert: access.caCert,
    clientCert: access.clientCert,
    sealed: storage.seal(configKey, JSON.stringify({ token: access.token, clientKey: access.clientKey })),
    ...(version ? { serverVersion: version } : {}),
  };
  // Authenticated (`putAuthenticated`): the address is where the sealed token goes, so a table writer must not move it.
  await storage.putAuthenticated(configKey, stored as unknown as Record<string, unknown>);
  knownVersions.delete(mount.uuid);
  return undefined;
}

/** The access config, or a 400 that says where to write it. */
export async function requireAccess(storage: MountStorage, mount: MountEntry): Promise<MeshAccess> {
  const access = await readAccess(storage);
  if (!access) {
    throw badRequest(
      `the mesh server's access has not been configured: write its address and a management token to ${mount.path}config/access`,
    );
  }
  return access;
}

export async function readAccess(storage: MountStorage): Promise<MeshAccess | undefined> {
  const stored = await storage.getAuthenticated<StoredAccess>(configKey);
  if (!stored) return undefined;
  const secrets = JSON.parse(storage.open(configKey, stored.sealed)) as { token: string; clientKey: string };
  return {
    address: stored.address,
    scheme: stored.scheme,
    caCert: stored.caCert,
    clientCert: stored.clientCert,
    ...secrets,
  };
}

/**
 * The server's version decides which role fields exist. It is read from `/v1/agent/self` and trusted for a
 * minute per process and mount (a server is upgraded rarely; a role write or a legacy issue should not pay a round trip).
 * When the server cannot be reached, the version last read (kept with the access config) stands in for it.
 */
const knownVersions = new Map<string, { address: string; version: ServerVersion; readAt: number }>();
const versionTrustMs = 60_000;

export async function serverVersion(
  { clock, mount, storage }: { clock: Clock; mount: MountEntry; storage: MountStorage },
  access: MeshAccess,
): Promise<ServerVersion> {
  const now = clock.now();
  const known = knownVersions.get(mount.uuid);
  if (known && known.address === access.address && now - known.readAt < versionTrustMs) return known.version;
  let text: string;
  try {
    text = await new ConsulClient(access).agentVersion();
  } catch (error) {
    const stored = await storage.getAuthenticated<StoredAccess>(configKey);
    if (error instanceof MeshUnreachable && stored?.serverVersion && stored.address === access.address)
      return ServerVersion.parse(stored.serverVersion);
    throw upstreamFailure(error, "could not read the mesh server's version from /v1/agent/self");
  }
  const version = ServerVersion.parse(text);
  knownVersions.set(mount.uuid, { address: access.address, version, readAt: now });
  const stored = await storage.getAuthenticated<StoredAccess>(configKey);
  if (stored && stored.address === access.address && stored.serverVersion !== text) {
    await storage.putAuthenticated(configKey, { ...stored, serverVersion: text } as unknown as Record<string, unknown>);
  }
  return version;
}

/** A refusal by the server is the caller's to fix (400, as Vault answers); an unreachable or broken server is a 502. */
export function upstreamFailure(error: unknown, doing: string): unknown {
  if (error instanceof MeshServerError) return badRequest(`${doing}: ${error.message}`);
  if (error instanceof MeshUnreachable || error instanceof MeshBadAnswer) return upstream(`${doing}: ${error.message}`);
  return error;
}

/** Consul's client takes `https://host:port` in the address too; a scheme there wins, as it does in Consul's client. */
function addressAndScheme(
  given: string,
  scheme: MeshAccess['scheme'] | undefined,
): { address: string; scheme: MeshAccess['scheme'] } {
  const prefixed = /^(\w+):\/\/(.*)$/.exec(given);
  let address = given;
  let resolved = scheme ?? 'http';
  if (prefixed) {
    const prefix = (prefixed[1] as string).toLowerCase();
    if (prefix !== 'http' && prefix !== 'https')
      throw badRequest(`invalid value for "address": scheme "${prefix}" is not http or https`);
    if (scheme && scheme !== prefix)
      throw badRequest(`invalid value for "address": it says ${prefix} but "scheme" is ${scheme}`);
    resolved = prefix;
    address = prefixed[2] as string;
  }
  let url: URL;
  try {
    url = new URL(`${resolved}://${address}`);
  } catch {
    throw badRequest(`invalid value for "address": "${given}" is not host:port`);
  }
  if (
    url.hostname === '' ||
    url.username ||
    url.password ||
    (url.pathname !== '/' && url.pathname !== '') ||
    url.search ||
    url.hash ||
    address.endsWith('/')
  ) {
    throw badRequest(`invalid value for "address": "${given}" is not host:port`);
  }
  return { address, scheme: resolved };
}

function checkTls(caCert: string, clientCert: string, clientKey: string): void {
  if (caCert) {
    const blocks = caCert.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) throw badRequest('invalid value for "ca_cert": not a PEM certificate');
    for (const block of blocks) certificate(block, 'ca_cert');
  }
  if (Boolean(clientCert) !== Boolean(clientKey)) {
    throw badRequest(
      `"client_cert" and "client_key" go together: ${clientCert ? '"client_key"' : '"client_cert"'} is missing`,
    );
  }
  if (!clientCert) return;
  const cert = certificate(clientCert, 'client_cert');
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(clientKey);
  } catch (error) {
    throw badRequest(`invalid value for "client_key": not a PEM private key (${(error as Error).message})`);
  }
  if (!cert.checkPrivateKey(key))
    throw badRequest('invalid value for "client_key": it is not the key of "client_cert"');
}

function certificate(pem: string, field: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw badRequest(`invalid value for "${field}": not a PEM certificate (${(error as Error).message})`);
  }
}
