import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { asDomainError, endpointsOf, tokenFromCredentials } from './google-client.ts';
import { type AccountItem, loadAccount, openTokenKey, rolesetKey, staticAccountKey } from './records.ts';
import { cachedToken, tokenReply } from './token-cache.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * OAuth2 access tokens (`roleset/:roleset/token`, its deprecated alias `token/:roleset`,
 * `static-account/:name/token`): minted with the account's key through the JWT-bearer grant. They have
 * no lease: Google gives them a fixed hour and they cannot be revoked.
 */

export async function tokenFromAccount(request: Request<unknown>, item: AccountItem | undefined, what: string) {
  if (!item) throw badRequest(`${what} does not exist`);
  if (item.value.secret_type !== 'access_token') {
    throw badRequest(`${what} cannot generate access tokens (has secret type ${item.value.secret_type})`);
  }
  const credentials = openTokenKey(request.storage, item);
  if (!credentials) throw badRequest(`${what} has no key to mint tokens with; rotate its key`);
  const scopes = item.value.token_scopes;
  try {
    const token = await cachedToken(
      request.system.clock,
      `${request.mount.uuid}|${credentials.private_key_id}|${scopes.join(' ')}`,
      () => tokenFromCredentials(credentials, scopes, endpointsOf(request.mount)),
    );
    return tokenReply(request.system.clock, token);
  } catch (error) {
    throw asDomainError(error, `minting an access token for ${what}`);
  }
}

const rolesetToken = async (request: Request<{ roleset: string }>) =>
  tokenFromAccount(
    request,
    await loadAccount(request.storage, rolesetKey(request.data.roleset)),
    `roleset "${request.data.roleset}"`,
  );
const staticToken = async (request: Request<{ name: string }>) =>
  tokenFromAccount(
    request,
    await loadAccount(request.storage, staticAccountKey(request.data.name)),
    `static account "${request.data.name}"`,
  );

const roleset = z.object({
  roleset: typeString.pipe(z.string()).describe('Name of the roleset to generate the token under.'),
});
const named = z.object({
  name: typeString.pipe(z.string()).describe('Name of the static account to generate the token under.'),
});
const both = (summary: string) => ({ read: summary, update: summary });

export const tokenPaths: PathSpec[] = [
  path({
    pattern: 'roleset/:roleset/token',
    fields: roleset,
    summaries: both('Generate an OAuth2 access token under the roleset.'),
    operations: { read: rolesetToken, update: rolesetToken },
  }),
  path({
    pattern: 'token/:roleset',
    fields: roleset,
    summaries: both('Generate an OAuth2 access token under the roleset (deprecated: use roleset/:roleset/token).'),
    operations: { read: rolesetToken, update: rolesetToken },
  }),
  path({
    pattern: 'static-account/:name/token',
    fields: named,
    summaries: both('Generate an OAuth2 access token under the static account.'),
    operations: { read: staticToken, update: staticToken },
  }),
];
