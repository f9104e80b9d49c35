import { importJWK, SignJWT } from 'jose';
import { maxApiAnswerBytes, readBoundedText } from '../../../lib/bounded-body.ts';
import { type Clock, epochSeconds } from '../../../lib/clock.ts';
import { badRequest, DomainError } from '../../../lib/errors.ts';
import { identityKey, identityTokenIssuer } from '../../identity/plugin-identity-keys.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';
import { applicationDefaultToken } from './application-default.ts';
import { type ConfigItem, loadConfig, openCredentials } from './config.ts';
import type { EngineContext } from './engine-context.ts';
import {
  cloudPlatformScope,
  type Endpoints,
  endpointsOf,
  GoogleApiError,
  GoogleClient,
  tokenFromCredentials,
} from './google-client.ts';

/**
 * The client the engine acts with, from the root credential in precedence order: the stored credentials
 * file; workload identity federation (a service-signed identity token exchanged at STS, then impersonation
 * of `service_account_email`); the server's application default credentials (environment, then the
 * shared credential files). Tokens are cached per process until five minutes before they expire.
 */

const refreshMarginMs = 5 * 60 * 1000;
const rootTokens = new Map<string, { token: string; expiresAtMs: number }>();

async function cached(key: string, mint: () => Promise<{ token: string; expiresIn: number }>): Promise<string> {
  const hit = rootTokens.get(key);
  if (hit && hit.expiresAtMs - Date.now() > refreshMarginMs) return hit.token;
  const minted = await mint();
  rootTokens.set(key, { token: minted.token, expiresAtMs: Date.now() + minted.expiresIn * 1000 });
  return minted.token;
}

export async function rootClient(
  { system, mount, storage }: EngineContext,
  config?: ConfigItem,
): Promise<GoogleClient> {
  const item = config ?? (await loadConfig(storage));
  const endpoints = endpointsOf(mount);
  const credentials = openCredentials(storage, item);
  if (credentials) {
    const key = `${mount.uuid}|${credentials.private_key_id}`;
    return new GoogleClient(endpoints, () =>
      cached(key, () => tokenFromCredentials(credentials, [cloudPlatformScope], endpoints)),
    );
  }
  if (item?.value.identity_token_audience) {
    const { identity_token_audience: audience, service_account_email: email, identity_token_ttl: ttl } = item.value;
    const key = `${mount.uuid}|wif|${audience}|${email}`;
    return new GoogleClient(endpoints, () =>
      cached(key, () => federatedToken(system.clock, mount, storage, endpoints, audience, email, ttl)),
    );
  }
  const key = `${mount.uuid}|adc`;
  return new GoogleClient(endpoints, () =>
    cached(key, async () => {
      try {
        return await applicationDefaultToken([cloudPlatformScope], endpoints);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        throw badRequest(
          `no root credential: write "credentials" or "identity_token_audience" to config (application default credentials: ${error.message})`,
        );
      }
    }),
  );
}

async function federatedToken(
  clock: Clock,
  mount: MountEntry,
  storage: MountStorage,
  endpoints: Endpoints,
  audience: string,
  email: string,
  ttl: number,
): Promise<{ token: string; expiresIn: number }> {
  const subjectToken = await identityToken(clock, mount, storage, audience, ttl);
  const response = await fetch(`${endpoints.sts}/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      audience,
      scope: cloudPlatformScope,
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      subject_token: subjectToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    }),
  });
  const text = await readBoundedText(response, maxApiAnswerBytes, 'the security token service').catch(
    (error: unknown) => {
      throw new GoogleApiError(502, 'UNAVAILABLE', error instanceof Error ? error.message : String(error));
    },
  );
  let body: { access_token?: string; error?: string; error_description?: string } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // Not JSON: refused below with the status.
  }
  if (!response.ok || !body.access_token) {
    throw new GoogleApiError(
      response.status,
      body.error ?? 'UNKNOWN',
      `workload identity federation: STS refused the identity token: ${body.error_description ?? body.error ?? response.status}`,
    );
  }
  const federated = new GoogleClient(endpoints, async () => body.access_token as string);
  const impersonated = await federated.generateAccessToken(email, [cloudPlatformScope], 3600);
  return {
    token: impersonated.accessToken,
    expiresIn: Math.floor((Date.parse(impersonated.expireTime) - Date.now()) / 1000),
  };
}

/** A plugin identity token: subject `plugin-identity:root:secret:<mount accessor>`, audience as configured. */
async function identityToken(
  clock: Clock,
  mount: MountEntry,
  storage: MountStorage,
  audience: string,
  ttl: number,
): Promise<string> {
  const jwk = await identityKey(storage);
  const now = epochSeconds(clock);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: jwk.kid as string })
    .setIssuer(identityTokenIssuer())
    .setSubject(`plugin-identity:root:secret:${mount.accessor}`)
    .setAudience(audience)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ttl)
    .sign(await importJWK(jwk, 'RS256'));
}
