import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { googleTokenAudience, type ServiceAccountKey } from '../google.ts';
import { cloudPlatformScope, OAuthError } from './model.ts';
import type { GoogleState } from './state.ts';

/** The token endpoints: `POST /oauth2/token` (a service account's signed JWT, or a user's refresh token, for an access token) and `POST /sts/v1/token` (workload identity federation). */
export function tokenEndpoints(s: GoogleState) {
  const { now, accounts, keys, providers, authorizedUsers, issue } = s;
  async function oauthToken(form: URLSearchParams): Promise<unknown> {
    const grantType = form.get('grant_type');
    if (grantType === 'refresh_token') return refreshGrant(form);
    if (grantType !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      throw new OAuthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType ?? ''}`);
    }
    const assertion = form.get('assertion') ?? '';
    let header: { kid?: string; alg?: string };
    let claims: Record<string, unknown>;
    try {
      header = decodeProtectedHeader(assertion);
      claims = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString()) as Record<
        string,
        unknown
      >;
    } catch {
      throw new OAuthError(
        400,
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.',
      );
    }
    if (header.alg !== 'RS256') throw new OAuthError(400, 'invalid_grant', 'Invalid JWT Signature.');
    const email = String(claims.iss ?? '');
    const state = accounts.get(email);
    if (!state) throw new OAuthError(400, 'invalid_grant', 'Invalid grant: account not found');
    const candidates = [...keys.values()].filter(
      (key) => key.email === email && (!header.kid || key.id === header.kid),
    );
    let signer: ServiceAccountKey | undefined;
    for (const key of candidates) {
      try {
        await jwtVerify(assertion, key.publicKey, {
          algorithms: ['RS256'],
          currentDate: new Date(now()),
          clockTolerance: 60,
        });
        signer = key;
        break;
      } catch (error) {
        if ((error as { code?: string }).code === 'ERR_JWT_EXPIRED') {
          throw new OAuthError(
            400,
            'invalid_grant',
            'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
          );
        }
      }
    }
    if (!signer) throw new OAuthError(400, 'invalid_grant', 'Invalid JWT Signature.');
    if (claims.aud !== googleTokenAudience && claims.aud !== `${s.url}/oauth2/token`) {
      throw new OAuthError(400, 'invalid_grant', 'Invalid JWT: Failed audience check.');
    }
    const iat = Number(claims.iat);
    const exp = Number(claims.exp);
    if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp - iat > 3600 || iat * 1000 > now() + 60_000) {
      throw new OAuthError(
        400,
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    }
    const scope = typeof claims.scope === 'string' ? claims.scope.split(/\s+/).filter(Boolean) : [];
    if (scope.length === 0)
      throw new OAuthError(400, 'invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const issued = issue(email, scope, 3599, 'oauth2', signer.id);
    return { access_token: issued.token, expires_in: 3599, token_type: 'Bearer' };
  }

  /** A signed-in user's refresh token (an `authorized_user` file) for an access token with the scopes the user granted. */
  function refreshGrant(form: URLSearchParams): unknown {
    const user = authorizedUsers.get(form.get('refresh_token') ?? '');
    if (!user) throw new OAuthError(400, 'invalid_grant', 'Bad Request');
    if (form.get('client_id') !== user.clientId || form.get('client_secret') !== user.clientSecret)
      throw new OAuthError(401, 'invalid_client', 'Unauthorized');
    const issued = issue(user.email, [cloudPlatformScope], 3599, 'oauth2');
    return { access_token: issued.token, expires_in: 3599, scope: cloudPlatformScope, token_type: 'Bearer' };
  }

  async function stsToken(params: Record<string, string>): Promise<unknown> {
    if (params.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange') {
      throw new OAuthError(400, 'unsupported_grant_type', `Invalid value for "grant_type": ${params.grant_type ?? ''}`);
    }
    if (params.requested_token_type !== 'urn:ietf:params:oauth:token-type:access_token') {
      throw new OAuthError(400, 'invalid_request', 'Invalid value for "requested_token_type".');
    }
    if (
      !['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token'].includes(
        params.subject_token_type ?? '',
      )
    ) {
      throw new OAuthError(400, 'invalid_request', 'Invalid value for "subject_token_type".');
    }
    const provider = providers.get(params.audience ?? '');
    if (!provider)
      throw new OAuthError(
        400,
        'invalid_target',
        'The target service indicated by the "audience" parameters is invalid.',
      );
    const allowed = provider.allowedAudiences ?? [
      `https://iam.googleapis.com/${provider.audience.replace(/^\/\/iam\.googleapis\.com\//, '')}`,
    ];
    let subject: string;
    try {
      const { payload } = await jwtVerify(
        params.subject_token ?? '',
        await importJWK(provider.publicJwk, provider.publicJwk.alg ?? 'RS256'),
        {
          issuer: provider.issuer,
          audience: allowed,
          currentDate: new Date(now()),
        },
      );
      subject = String(payload.sub ?? '');
    } catch (error) {
      throw new OAuthError(400, 'invalid_grant', `The given subject token is invalid: ${(error as Error).message}`);
    }
    const pool = provider.audience.replace(/^\/\/iam\.googleapis\.com\//, '').replace(/\/providers\/[^/]+$/, '');
    const scopes = (params.scope ?? cloudPlatformScope).split(/\s+/).filter(Boolean);
    const issued = issue(`principal://iam.googleapis.com/${pool}/subject/${subject}`, scopes, 3600, 'sts');
    return {
      access_token: issued.token,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: 3600,
    };
  }

  return { oauthToken, stsToken };
}
