import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { parseCaBundle } from '../../../lib/fetch-with-ca.ts';
import { supportedAlgorithms } from '../../../lib/jwt/algorithms.ts';
import { fetchKeySource, parsePublicKeyPem } from '../../../lib/jwt/keys.ts';
import { uuid } from '../../../lib/random.ts';
import { path, type Request } from '../../framework/backend.ts';
import { bool, jsonValue, stringList } from '../../framework/fields.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { keySource } from './keys.ts';
import { ProcessCache } from './process-cache.ts';
import { typeSlice, typeString } from '../../framework/vault-field-types.ts';

/** The mount's `config`, as stored. Every write replaces it; `version` names the key caches built from it. */
export interface JwtConfig {
  version: string;
  oidc_discovery_url: string;
  oidc_discovery_ca_pem: string;
  oidc_client_id: string;
  /** Sealed under the `config` key; '' when unset. */
  oidc_client_secret_sealed: string;
  oidc_response_mode: '' | 'query' | 'form_post';
  oidc_response_types: string[];
  jwks_url: string;
  jwks_ca_pem: string;
  jwks_pairs: Array<{ jwks_url: string; jwks_ca_pem: string }>;
  jwt_validation_pubkeys: string[];
  bound_issuer: string;
  jwt_supported_algs: string[];
  default_role: string;
  provider_config: Record<string, unknown>;
  namespace_in_state: boolean;
}

const configKey = 'config';
const configCache = new ProcessCache<JwtConfig | undefined>();

const jwksPair = z
  .object({
    jwks_url: typeString
      .pipe(z.string().min(1, 'each pair needs a jwks_url'))
      .describe('A JWKS URL to use to authenticate signatures.'),
    jwks_ca_pem: typeString
      .pipe(z.string())
      .optional()
      .describe('The CA certificate or chain of certificates, in PEM format, for connections to this JWKS URL.'),
  })
  .strict();

const fields = z.object({
  oidc_discovery_url: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'OIDC Discovery URL, without any .well-known component (base path). Cannot be used with "jwks_url" or "jwt_validation_pubkeys".',
    ),
  oidc_discovery_ca_pem: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The CA certificate or chain of certificates, in PEM format, to use to validate connections to the OIDC Discovery URL. If not set, system certificates are used.',
    ),
  oidc_client_id: typeString
    .pipe(z.string())
    .optional()
    .describe('The OAuth Client ID configured with your OIDC provider.'),
  oidc_client_secret: typeString
    .pipe(z.string())
    .optional()
    .describe('The OAuth Client Secret configured with your OIDC provider. Never shown on read.'),
  oidc_response_mode: typeString
    .pipe(z.string())
    .optional()
    .describe("The response mode to be used in the OAuth2 request: 'query' (the default) or 'form_post'."),
  oidc_response_types: stringList
    .optional()
    .describe(
      "The response types to request: 'code' (the default) and/or 'id_token'; 'id_token' needs the 'form_post' response mode.",
    ),
  jwks_url: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'JWKS URL to use to authenticate signatures. Cannot be used with "oidc_discovery_url" or "jwt_validation_pubkeys".',
    ),
  jwks_ca_pem: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The CA certificate or chain of certificates, in PEM format, to use to validate connections to the JWKS URL. If not set, system certificates are used.',
    ),
  // Vault's TypeSlice: one pair alone is a list of itself.
  jwks_pairs: typeSlice
    .pipe(z.array(z.union([jwksPair, z.string().transform((text, ctx) => parsePairJson(text, ctx))])))
    .optional()
    .describe(
      'A list of JWKS URLs and their optional CA certificates (objects, or JSON strings, with "jwks_url" and "jwks_ca_pem"); a token verifies against any of them. Cannot be used with "jwks_url" or "jwks_ca_pem".',
    ),
  jwt_validation_pubkeys: stringList
    .optional()
    .describe(
      'A list of PEM-encoded public keys (or certificates) to use to authenticate signatures locally. Cannot be used with "jwks_url" or "oidc_discovery_url".',
    ),
  bound_issuer: typeString
    .pipe(z.string())
    .optional()
    .describe("The value against which to match the 'iss' claim in a JWT."),
  jwt_supported_algs: stringList
    .optional()
    .describe(
      'A list of supported signing algorithms. JWT logins accept every supported algorithm when empty; OIDC logins default to RS256.',
    ),
  default_role: typeString
    .pipe(z.string())
    .optional()
    .describe('The default role to use if none is provided during login.'),
  provider_config: z
    .record(z.string(), jsonValue)
    .optional()
    .describe(
      'Provider-specific configuration (for group fetching from Azure, Google Workspace or Okta); this service supports none, so only an empty map is accepted.',
    ),
  namespace_in_state: bool
    .optional()
    .describe(
      'Pass the namespace in the OIDC state parameter instead of as a separate query parameter. Defaults to true for new configs.',
    ),
});

type ConfigInput = z.output<typeof fields>;

/** `auth/<mount>/config`. */
export const configPaths = [
  path({
    pattern: 'config',
    fields,
    summaries: {
      read: 'Read the current JWT/OIDC authentication backend configuration.',
      update:
        'Configure the JWT/OIDC authentication backend: the keys or provider that validate tokens, and the OIDC client.',
    },
    operations: {
      read: async (request) => {
        const config = await loadConfig(request);
        return config ? { data: describeConfig(config) } : undefined;
      },
      update: async (request) => {
        const existing = await readStoredConfig(request.storage);
        const config = await validateConfig(request.data, existing, request.storage);
        await request.storage.putAuthenticated(configKey, config as unknown as Record<string, unknown>);
        configCache.set(request.mount.uuid, config, request.system.clock);
        return undefined;
      },
    },
  }),
];

/** The mount's config, through the per-process cache (login reads it on every request). */
export function loadConfig(request: Pick<Request, 'storage' | 'system' | 'mount'>): Promise<JwtConfig | undefined> {
  return configCache.get(request.mount.uuid, request.system.clock, () => readStoredConfig(request.storage));
}

export function clientSecret(storage: MountStorage, config: JwtConfig): string {
  return config.oidc_client_secret_sealed ? storage.open(configKey, config.oidc_client_secret_sealed) : '';
}

export const isOidcConfigured = (config: JwtConfig) => config.oidc_discovery_url !== '' && config.oidc_client_id !== '';

async function readStoredConfig(storage: MountStorage): Promise<JwtConfig | undefined> {
  return storage.getAuthenticated<JwtConfig>(configKey);
}

function describeConfig(config: JwtConfig): Record<string, unknown> {
  return {
    oidc_discovery_url: config.oidc_discovery_url,
    oidc_discovery_ca_pem: config.oidc_discovery_ca_pem,
    oidc_client_id: config.oidc_client_id,
    oidc_response_mode: config.oidc_response_mode,
    oidc_response_types: config.oidc_response_types,
    default_role: config.default_role,
    jwt_validation_pubkeys: config.jwt_validation_pubkeys,
    jwt_supported_algs: config.jwt_supported_algs,
    jwks_url: config.jwks_url,
    jwks_pairs: config.jwks_pairs,
    jwks_ca_pem: config.jwks_ca_pem,
    bound_issuer: config.bound_issuer,
    provider_config: config.provider_config,
    namespace_in_state: config.namespace_in_state,
  };
}

async function validateConfig(
  input: ConfigInput,
  existing: JwtConfig | undefined,
  storage: MountStorage,
): Promise<JwtConfig> {
  const secret = input.oidc_client_secret ?? '';
  const config: JwtConfig = {
    version: uuid(),
    oidc_discovery_url: (input.oidc_discovery_url ?? '').trim(),
    oidc_discovery_ca_pem: input.oidc_discovery_ca_pem ?? '',
    oidc_client_id: input.oidc_client_id ?? '',
    oidc_client_secret_sealed: secret ? storage.seal(configKey, secret) : '',
    oidc_response_mode: (input.oidc_response_mode ?? '') as JwtConfig['oidc_response_mode'],
    oidc_response_types: input.oidc_response_types ?? [],
    jwks_url: (input.jwks_url ?? '').trim(),
    jwks_ca_pem: input.jwks_ca_pem ?? '',
    jwks_pairs: (input.jwks_pairs ?? []).map((pair) => ({
      jwks_url: pair.jwks_url.trim(),
      jwks_ca_pem: pair.jwks_ca_pem ?? '',
    })),
    jwt_validation_pubkeys: input.jwt_validation_pubkeys ?? [],
    bound_issuer: input.bound_issuer ?? '',
    jwt_supported_algs: input.jwt_supported_algs ?? [],
    default_role: (input.default_role ?? '').toLowerCase(),
    provider_config: input.provider_config ?? {},
    namespace_in_state: input.namespace_in_state ?? existing?.namespace_in_state ?? true,
  };

  const given = [
    config.oidc_discovery_url && 'oidc_discovery_url',
    config.jwks_url && 'jwks_url',
    config.jwks_pairs.length > 0 && 'jwks_pairs',
    config.jwt_validation_pubkeys.length > 0 && 'jwt_validation_pubkeys',
  ].filter((name): name is string => typeof name === 'string' && name !== '');
  if (given.length !== 1) {
    throw badRequest(
      `exactly one of 'jwt_validation_pubkeys', 'jwks_url', 'jwks_pairs' or 'oidc_discovery_url' must be set; ${
        given.length === 0 ? 'none was given' : `given: ${given.map((name) => `'${name}'`).join(', ')}`
      }`,
    );
  }
  if ((config.oidc_client_id === '') !== (secret === '')) {
    throw badRequest(
      `both 'oidc_client_id' and 'oidc_client_secret' must be set for OIDC; only '${secret ? 'oidc_client_secret' : 'oidc_client_id'}' was given`,
    );
  }
  if (config.oidc_client_id && !config.oidc_discovery_url)
    throw badRequest("'oidc_discovery_url' must be set for OIDC");
  if (config.jwks_ca_pem && config.jwks_pairs.length > 0) {
    throw badRequest(
      "'jwks_ca_pem' cannot be used with 'jwks_pairs': CA PEMs must be provided as part of the 'jwks_pairs' when using multiple JWKS URLs",
    );
  }
  if (config.bound_issuer && config.jwks_pairs.length > 0)
    throw badRequest("'bound_issuer' is not supported for use with 'jwks_pairs'");
  if (config.jwks_ca_pem && !config.jwks_url) throw badRequest("'jwks_ca_pem' is only used with 'jwks_url'");
  if (config.oidc_discovery_ca_pem && !config.oidc_discovery_url)
    throw badRequest("'oidc_discovery_ca_pem' is only used with 'oidc_discovery_url'");

  const unknownAlgs = config.jwt_supported_algs.filter(
    (alg) => !(supportedAlgorithms as readonly string[]).includes(alg),
  );
  if (unknownAlgs.length > 0) {
    throw badRequest(
      `invalid jwt_supported_algs: unsupported signing algorithm(s) ${unknownAlgs.join(', ')}; supported: ${supportedAlgorithms.join(', ')}`,
    );
  }
  const badTypes = config.oidc_response_types.filter((type) => type !== 'code' && type !== 'id_token');
  if (badTypes.length > 0) {
    throw badRequest(
      `invalid oidc_response_types [${config.oidc_response_types.join(' ')}]: only 'code' and 'id_token' are allowed`,
    );
  }
  switch (config.oidc_response_mode) {
    case '':
    case 'query':
      if (config.oidc_response_types.includes('id_token')) {
        throw badRequest(
          "invalid oidc_response_types: the 'query' oidc_response_mode may not be used with an 'id_token' response type (use 'form_post')",
        );
      }
      break;
    case 'form_post':
      break;
    default:
      throw badRequest(`invalid oidc_response_mode: "${config.oidc_response_mode}": use 'query' or 'form_post'`);
  }
  checkProviderConfig(config.provider_config);

  for (const [name, pem] of [
    ['oidc_discovery_ca_pem', config.oidc_discovery_ca_pem],
    ['jwks_ca_pem', config.jwks_ca_pem],
    ...config.jwks_pairs.map((pair, index) => [`jwks_pairs[${index}].jwks_ca_pem`, pair.jwks_ca_pem] as const),
  ] as const) {
    if (!pem) continue;
    try {
      parseCaBundle(pem);
    } catch (error) {
      throw badRequest(`could not parse '${name}': ${(error as Error).message}`);
    }
  }
  config.jwt_validation_pubkeys.forEach((pem, index) => {
    try {
      parsePublicKeyPem(pem);
    } catch (error) {
      throw badRequest(`error parsing public key ${index} of 'jwt_validation_pubkeys': ${(error as Error).message}`);
    }
  });
  for (const url of [config.oidc_discovery_url, config.jwks_url, ...config.jwks_pairs.map((pair) => pair.jwks_url)]) {
    if (url && !/^https?:\/\//i.test(url)) throw badRequest(`"${url}" is not an http or https URL`);
  }
  try {
    await fetchKeySource(config.version, keySource(config));
  } catch (error) {
    throw badRequest((error as Error).message);
  }
  return config;
}

/**
 * Vault's provider-specific handlers (Azure, Google Workspace, Okta group fetching) call vendor APIs this
 * service has no credentials model for; an empty map is the only accepted value, so no config silently
 * claims behaviour that does not run.
 */
function checkProviderConfig(providerConfig: Record<string, unknown>): void {
  if (Object.keys(providerConfig).length === 0) return;
  const provider = providerConfig.provider;
  if (typeof provider !== 'string' || provider === '')
    throw badRequest("invalid provider_config: 'provider' field not found in provider_config");
  throw badRequest(`invalid provider_config: provider "${provider}" is not supported by this service`);
}

function parsePairJson(text: string, ctx: z.RefinementCtx): { jwks_url: string; jwks_ca_pem?: string | undefined } {
  try {
    const parsed = jwksPair.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'each pair must be an object with jwks_url and optional jwks_ca_pem' });
  return z.NEVER;
}
