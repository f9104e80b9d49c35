import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { badRequest } from '../../../lib/errors.ts';
import { parseCredentials } from './config.ts';
import {
  defaultTokenUrl,
  type Endpoints,
  GoogleApiError,
  type MintedToken,
  postTokenForm,
  tokenFromCredentials,
} from './google-client.ts';

/**
 * The server's application default credentials, found where Google's client libraries look: the file named by
 * `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's file application_default_credentials.json (under `CLOUDSDK_CONFIG`,
 * else `~/.config/gcloud`). Two kinds of file are understood:
 * - `service_account` (a key file): the JWT-bearer grant, as for a key written to `config`;
 * - `authorized_user` (what `gcloud auth application-default login` writes): the refresh-token grant.
 * Any other kind (`external_account`, `impersonated_service_account`, …) is refused with its name: the engine's own
 * workload identity federation (`identity_token_audience`) is the keyless way. Google's metadata server is not asked:
 * Keyhaven runs on AWS Lambda or a laptop, where there is none.
 * Where a token request goes is the operator's: the configured token endpoint, else the file's `token_uri`, else
 * Google's. Nothing here is a request field.
 */
export async function applicationDefaultToken(
  scopes: string[],
  endpoints: Endpoints,
  env: NodeJS.ProcessEnv = process.env,
): Promise<MintedToken> {
  const file = applicationDefaultFile(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw badRequest(
      env.GOOGLE_APPLICATION_CREDENTIALS
        ? `the file GOOGLE_APPLICATION_CREDENTIALS names cannot be read (${code ?? String(error)}): ${file}`
        : `none found (GOOGLE_APPLICATION_CREDENTIALS is not set and there is no ${file})`,
    );
  }
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw badRequest(`${file} is not JSON: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object') throw badRequest(`${file} is not a JSON object`);
  switch (parsed.type) {
    case 'service_account':
      return tokenFromCredentials(parseCredentials(text), scopes, endpoints);
    case 'authorized_user':
      return refreshToken(parsed, file, endpoints);
    default:
      throw badRequest(
        `${file} holds credentials of type ${JSON.stringify(parsed.type ?? null)}; only "service_account" and "authorized_user" files are supported (for keyless access use the engine's own workload identity federation)`,
      );
  }
}

/** The file application default credentials are read from, by Google's precedence. */
function applicationDefaultFile(env: NodeJS.ProcessEnv = process.env): string {
  if (env.GOOGLE_APPLICATION_CREDENTIALS) return env.GOOGLE_APPLICATION_CREDENTIALS;
  const config = env.CLOUDSDK_CONFIG || path.join(env.HOME || homedir(), '.config', 'gcloud');
  return path.join(config, 'application_default_credentials.json');
}

/** The refresh-token grant with an `authorized_user` file's client and refresh token. */
async function refreshToken(file: Record<string, unknown>, name: string, endpoints: Endpoints): Promise<MintedToken> {
  for (const field of ['client_id', 'client_secret', 'refresh_token'])
    if (typeof file[field] !== 'string' || file[field] === '')
      throw badRequest(`${name}: an "authorized_user" file needs "${field}"`);
  const tokenUrl =
    endpoints.token ?? (typeof file.token_uri === 'string' && file.token_uri ? file.token_uri : defaultTokenUrl);
  try {
    return await postTokenForm(tokenUrl, {
      grant_type: 'refresh_token',
      client_id: file.client_id as string,
      client_secret: file.client_secret as string,
      refresh_token: file.refresh_token as string,
    });
  } catch (error) {
    // The operator's file is at fault (a revoked or mistyped refresh token, a wrong client): say so, not "upstream".
    if (error instanceof GoogleApiError && (error.httpStatus === 400 || error.httpStatus === 401))
      throw badRequest(`${name}: the token endpoint refused the refresh token (${error.message})`);
    throw error;
  }
}
