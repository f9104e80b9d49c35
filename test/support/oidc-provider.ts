import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

/** Claims an account has at the provider (besides `sub`, which is the login name). */
export type AccountClaims = Record<string, unknown>;

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by login name; change them between logins to change what the provider asserts. */
  accounts: Map<string, AccountClaims>;
  close(): Promise<void>;
}

export interface ProviderOptions {
  redirectUris: string[];
  /** `code` (the default) or `id_token` (implicit, for `form_post` configs). */
  responseType?: 'code' | 'id_token';
  /** Claims of the scopes the RP may ask for; `openid` is always there. */
  scopeClaims?: Record<string, string[]>;
}

/**
 * A real `oidc-provider` v9 on 127.0.0.1 with its development interactions (a login form taking any
 * password, then a consent form), one confidential client, and an RS256 signing key made for the run.
 */
export async function startOidcProvider(options: ProviderOptions): Promise<TestOidcProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: 'test-signing-key', alg: 'RS256', use: 'sig' };
  const accounts = new Map<string, AccountClaims>();
  const clientId = 'keyhaven';
  const clientSecret = 'keyhaven-client-secret-0123456789abcdef';
  const responseType = options.responseType ?? 'code';
  const scopeClaims = {
    email: ['email', 'email_verified'],
    groups: ['groups'],
    profile: ['name', 'department'],
    ...options.scopeClaims,
  };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        response_types: [responseType],
        grant_types: responseType === 'code' ? ['authorization_code'] : ['implicit'],
        token_endpoint_auth_method: 'client_secret_basic',
        application_type: 'native',
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: ['keyhaven-test-cookie-key'] },
    claims: { openid: ['sub'], ...scopeClaims },
    scopes: ['openid', ...Object.keys(scopeClaims)],
    features: { devInteractions: { enabled: true } },
    ttl: { AccessToken: 3600, AuthorizationCode: 600, IdToken: 3600, Interaction: 3600, Session: 86400, Grant: 86400 },
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, ...accounts.get(id) }),
    }),
  });
  // The dev interactions warn on every start; a test does not need to read that.
  provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error));
  server.on('request', provider.callback());

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Where the provider finally sent the browser: a redirect (`query`) or an auto-posting form (`form_post`). */
export type CallbackDelivery = { method: 'GET'; url: URL } | { method: 'POST'; url: URL; form: Record<string, string> };

/**
 * Drives the provider as a browser would: follows redirects with a cookie jar, fills in the login form
 * (any password) and the consent form, and stops at the first request aimed at `callbackPrefix`.
 */
export async function browseToCallback(
  authUrl: string,
  options: { login: string; callbackPrefix: string; maxSteps?: number },
): Promise<CallbackDelivery> {
  const cookies = new Map<string, string>();
  let request: { url: URL; method: 'GET' | 'POST'; body?: URLSearchParams } = { url: new URL(authUrl), method: 'GET' };
  for (let step = 0; step < (options.maxSteps ?? 20); step++) {
    const response = await fetch(request.url, {
      method: request.method,
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '), accept: 'text/html' },
      ...(request.body ? { body: request.body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      const expired = attributes.some((attribute) => /^\s*expires=Thu, 01 Jan 1970/i.test(attribute)) || value === '';
      if (expired) cookies.delete(name);
      else cookies.set(name, value);
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      const next = new URL(location, request.url);
      if (next.href.startsWith(options.callbackPrefix)) return { method: 'GET', url: next };
      request = { url: next, method: 'GET' };
      continue;
    }
    const html = await response.text();
    const form = parseForm(html);
    if (!form)
      throw new Error(`the provider answered ${response.status} without a form or redirect: ${html.slice(0, 500)}`);
    const action = new URL(form.action, request.url);
    if (action.href.startsWith(options.callbackPrefix)) return { method: 'POST', url: action, form: form.inputs };
    const body = new URLSearchParams(form.inputs);
    if (form.inputs.prompt === 'login') {
      body.set('login', options.login);
      body.set('password', 'any password works in dev interactions');
    }
    request = { url: action, method: 'POST', body };
  }
  throw new Error('the provider did not reach the callback');
}

function parseForm(html: string): { action: string; inputs: Record<string, string> } | undefined {
  const formTag = /<form\b[^>]*\baction="([^"]*)"[^>]*>/i.exec(html);
  if (!formTag) return undefined;
  const inputs: Record<string, string> = {};
  for (const match of html.matchAll(/<input\b[^>]*>/gi)) {
    const tag = match[0];
    const name = /\bname="([^"]*)"/i.exec(tag)?.[1];
    const type = /\btype="([^"]*)"/i.exec(tag)?.[1];
    if (!name || (type && type !== 'hidden')) continue;
    inputs[decodeEntities(name)] = decodeEntities(/\bvalue="([^"]*)"/i.exec(tag)?.[1] ?? '');
  }
  return { action: decodeEntities(formTag[1] ?? ''), inputs };
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/&#x([0-9a-f]+);/gi, (_, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
    .replaceAll('&quot;', '"')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}
