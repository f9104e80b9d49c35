import NodeVault from 'node-vault';

/**
 * node-vault 0.12.0 against `npm start`, through node-vault's own methods only: its generated commands (`status`,
 * `addPolicy`, `tokenCreate`, `jwtLogin`, …) and its `read`/`write`/`list`/`update`/`delete`. Each operation's result
 * carries the last request the client sent and the answer it got, so a failure shows both.
 */

export interface OperationResult {
  client: string;
  op: string;
  ok: boolean;
  problem: string | null;
  request: string;
  answer: string;
}

export interface NodeVaultFixtures {
  vaultAddr: string;
  rootToken: string;
  jwt: string;
  jwtPubkey: string;
  jwtIssuer: string;
}

type Client = NodeVault.client;
// biome-ignore lint/suspicious/noExplicitAny: answers are arbitrary JSON, checked field by field
type Answer = any;

class Problem extends Error {}
const expectThat = (condition: unknown, message: string) => {
  if (!condition) throw new Problem(message);
};

export async function runNodeVault(fixtures: NodeVaultFixtures): Promise<OperationResult[]> {
  const results: OperationResult[] = [];
  let last = { request: '(no request)', answer: '(no answer)', status: 0 };

  /** A client whose requests are recorded for the report (the wrapper sees the options node-vault built). */
  const make = (options: NodeVault.VaultOptions = {}): Client => {
    const client = NodeVault({ endpoint: fixtures.vaultAddr, token: fixtures.rootToken, ...options });
    const send = client.request.bind(client);
    client.request = async (requestOptions) => {
      last = {
        request: `${requestOptions.method} ${requestOptions.path} ${requestOptions.json === undefined ? '' : JSON.stringify(requestOptions.json)}`,
        answer: '(no answer)',
        status: 0,
      };
      try {
        const body = await send(requestOptions);
        last.answer = `2xx ${JSON.stringify(body ?? null).slice(0, 1500)}`;
        last.status = 200;
        return body;
      } catch (error) {
        const response = (error as { response?: { statusCode: number; body: unknown } }).response;
        last.answer = response
          ? `${response.statusCode} ${JSON.stringify(response.body).slice(0, 1500)}`
          : String(error);
        last.status = response?.statusCode ?? 0;
        throw error;
      }
    };
    return client;
  };

  async function op(
    name: string,
    action: () => Promise<Answer>,
    check?: (answer: Answer) => void,
    refused?: number,
  ): Promise<Answer> {
    last = { request: '(no request)', answer: '(no answer)', status: 0 };
    let problem: string | null = null;
    let answer: Answer;
    try {
      answer = await action();
      if (refused !== undefined) problem = `expected a refusal with status ${refused}, got success`;
      else check?.(answer);
    } catch (error) {
      if (refused === undefined || last.status !== refused)
        problem = `${(error as Error).name}: ${(error as Error).message} (status ${last.status})`;
    }
    results.push({
      client: 'node-vault',
      op: name,
      ok: problem === null,
      problem,
      request: last.request,
      answer: last.answer,
    });
    return answer;
  }

  const vault = make();
  const plain = make({ noCustomHTTPVerbs: true });

  // sys
  await op(
    'health',
    () => vault.health(),
    (a) => expectThat(a.initialized === true && a.sealed === false, 'initialised and unsealed'),
  );
  await op(
    'status',
    () => vault.status(),
    (a) => expectThat(a.sealed === false && a.initialized === true, 'unsealed'),
  );
  await op(
    'initialized',
    () => vault.initialized(),
    (a) => expectThat(a.initialized === true, 'initialised'),
  );
  await op(
    'leader',
    () => vault.leader(),
    (a) => expectThat(a.ha_enabled === false && a.is_self === false, 'a single node without HA'),
  );
  await op(
    'mounts',
    () => vault.mounts(),
    (a) => expectThat(a.data['kv/'].type === 'kv', 'kv/ listed'),
  );
  await op('mount', () => vault.mount({ mount_point: 'nv-kv', type: 'kv', description: 'from node-vault' }));
  await op('mount (kv v2)', () => vault.mount({ mount_point: 'nv-kv2', type: 'kv', options: { version: '2' } }));
  await op(
    'auths',
    () => vault.auths(),
    (a) => expectThat(a.data['token/'].type === 'token', 'the token store'),
  );
  await op('enableAuth', () =>
    vault.enableAuth({ mount_point: 'nv-jwt', type: 'jwt', description: 'from node-vault' }),
  );
  await op('disableAuth', () => vault.disableAuth({ mount_point: 'nv-jwt' }));
  await op('enableAudit', () =>
    vault.enableAudit({ name: 'nv-audit', type: 'file', options: { file_path: 'discard' } }),
  );
  await op(
    'audits',
    () => vault.audits(),
    (a) => expectThat(a.data['nv-audit/']?.type === 'file', 'listed'),
  );
  await op('disableAudit', () => vault.disableAudit({ name: 'nv-audit' }));
  const rules = 'path "secret/data/nv/*" { capabilities = ["read"] }';
  await op('addPolicy', () => vault.addPolicy({ name: 'nv-reader', rules }));
  await op(
    'getPolicy',
    () => vault.getPolicy({ name: 'nv-reader' }),
    (a) => expectThat(a.rules === rules && a.name === 'nv-reader', 'the rules at the top level'),
  );
  await op(
    'policies',
    () => vault.policies(),
    (a) => expectThat(a.policies.includes('nv-reader') && a.data.keys.includes('nv-reader'), 'listed'),
  );
  await op('removePolicy', () => vault.removePolicy({ name: 'nv-reader' }));
  await op('getPolicy (removed)', () => vault.getPolicy({ name: 'nv-reader' }), undefined, 404);

  // kv v1 through read/write/list/delete, and leases
  await op('write (kv v1)', () => vault.write('nv-kv/app/db', { password: 'p', ttl: '1h' }));
  const leased = await op(
    'read (kv v1)',
    () => vault.read('nv-kv/app/db'),
    (a) => expectThat(a.data.password === 'p' && a.lease_duration === 3600, 'under a lease'),
  );
  await op(
    'list (LIST)',
    () => vault.list('nv-kv/app'),
    (a) => expectThat(a.data.keys[0] === 'db', 'one key'),
  );
  await op(
    'list (GET ?list=1)',
    () => plain.list('nv-kv/app'),
    (a) => expectThat(a.data.keys[0] === 'db', 'one key'),
  );
  await op('list (empty mount)', () => vault.list('nv-kv2/metadata'), undefined, 404);
  const leaseId: string = leased?.lease_id ?? 'none';
  await op(
    'renew',
    () => vault.renew({ lease_id: leaseId, increment: 600 }),
    (a) => expectThat(a.lease_duration === 600, 'the increment'),
  );
  await op('revoke', () => vault.revoke({ lease_id: leaseId }));
  await vault.read('nv-kv/app/db');
  await op('revokePrefix', () => vault.revokePrefix({ path_prefix: 'nv-kv/app' }));
  await op('delete (kv v1)', () => vault.delete('nv-kv/app/db'));
  await op('read (deleted)', () => vault.read('nv-kv/app/db'), undefined, 404);

  // kv v2 through read/write/update/list/delete and destroySecretVersions
  await op(
    'write (kv v2)',
    () => vault.write('secret/data/nv/app', { data: { user: 'a' } }),
    (a) => expectThat(a.data.version === 1, 'version 1'),
  );
  await op(
    'write (kv v2, cas)',
    () => vault.write('secret/data/nv/app', { data: { user: 'b' }, options: { cas: 1 } }),
    (a) => expectThat(a.data.version === 2, 'version 2'),
  );
  await op(
    'read (kv v2)',
    () => vault.read('secret/data/nv/app'),
    (a) => expectThat(a.data.data.user === 'b' && a.data.metadata.version === 2, 'latest'),
  );
  await op(
    'update (kv v2 patch)',
    () => vault.update('secret/data/nv/app', { data: { extra: 'x' } }),
    (a) => expectThat(a.data.version === 3, 'version 3'),
  );
  await op(
    'read (kv v2 ?version=1)',
    () => vault.read('secret/data/nv/app?version=1'),
    (a) => expectThat(a.data.data.user === 'a', 'version 1'),
  );
  await op(
    'list (kv v2 metadata)',
    () => vault.list('secret/metadata/nv'),
    (a) => expectThat(a.data.keys[0] === 'app', 'one key'),
  );
  await op(
    'read (kv v2 metadata)',
    () => vault.read('secret/metadata/nv/app'),
    (a) => expectThat(a.data.current_version === 3, 'three versions'),
  );
  await op('destroySecretVersions', () => vault.destroySecretVersions({ path: 'nv/app', versions: [1] }));
  await op('read (kv v2 destroyed)', () => vault.read('secret/data/nv/app?version=1'), undefined, 404);
  await op('delete (kv v2 latest)', () => vault.delete('secret/data/nv/app'));
  await op('delete (kv v2 metadata)', () => vault.delete('secret/metadata/nv/app'));
  await op('unmount', () => vault.unmount({ mount_point: 'nv-kv2' }));
  await op('unmount (kv v1)', () => vault.unmount({ mount_point: 'nv-kv' }));

  // tokens and token roles (tokenCreate switches the client it is called on to the new token: a client of its own)
  const minter = make();
  const created = await op(
    'tokenCreate',
    () => minter.tokenCreate({ policies: ['default'], ttl: '1h', meta: { who: 'nv' } }),
    (a) =>
      expectThat(a.auth.lease_duration === 3600 && minter.token === a.auth.client_token, 'a token, now the client’s'),
  );
  const child: { client_token: string; accessor: string } = created?.auth ?? { client_token: 'none', accessor: 'none' };
  await op(
    'tokenCreateOrphan',
    () => make().tokenCreateOrphan({ policies: ['default'] }),
    (a) => expectThat(a.auth.orphan === true, 'an orphan'),
  );
  await op(
    'tokenLookup',
    () => vault.tokenLookup({ token: child.client_token }),
    (a) => expectThat(a.data.meta.who === 'nv', 'the meta'),
  );
  await op(
    'tokenLookupSelf',
    () => vault.tokenLookupSelf(),
    (a) => expectThat(a.data.policies.includes('root'), 'root'),
  );
  await op(
    'tokenLookupAccessor',
    () => vault.tokenLookupAccessor({ accessor: child.accessor }),
    (a) => expectThat(a.data.accessor === child.accessor, 'same'),
  );
  await op(
    'tokenAccessors',
    () => vault.tokenAccessors(),
    (a) => expectThat(a.data.keys.includes(child.accessor), 'listed'),
  );
  await op(
    'tokenRenew',
    () => make().tokenRenew({ token: child.client_token, increment: '30m' }),
    (a) => expectThat(a.auth.lease_duration === 1800, '30m'),
  );
  await op(
    'tokenRenewSelf',
    () => minter.tokenRenewSelf({ increment: 1200 }),
    (a) => expectThat(a.auth.lease_duration === 1200, '20m'),
  );
  await op('addTokenRole', () =>
    vault.addTokenRole({ role_name: 'nv-role', allowed_policies: 'default', orphan: true }),
  );
  await op(
    'getTokenRole',
    () => vault.getTokenRole({ role_name: 'nv-role' }),
    (a) => expectThat(a.data.orphan === true, 'an orphan role'),
  );
  await op(
    'tokenRoles',
    () => vault.tokenRoles(),
    (a) => expectThat(a.data.keys.includes('nv-role'), 'listed'),
  );
  await op(
    'tokenCreateRole',
    () => make().tokenCreateRole({ role_name: 'nv-role', policies: ['default'] }),
    (a) => expectThat(a.auth.orphan === true, 'from the role'),
  );
  await op('removeTokenRole', () => vault.removeTokenRole({ role_name: 'nv-role' }));
  const second = (await make().tokenCreate({ policies: ['default'] })).auth;
  await op('tokenRevokeAccessor', () => vault.tokenRevokeAccessor({ accessor: second.accessor }));
  const third = (await make().tokenCreate({ policies: ['default'] })).auth;
  await op('tokenRevokeOrphan', () => vault.tokenRevokeOrphan({ token: third.client_token }));
  await op('tokenRevoke', () => vault.tokenRevoke({ token: child.client_token }));
  await op('tokenLookup (revoked)', () => vault.tokenLookup({ token: child.client_token }), undefined, 403);
  const fourth = make();
  await fourth.tokenCreate({ policies: ['default'] });
  await op('tokenRevokeSelf', () => fourth.tokenRevokeSelf());

  // JWT login (the jwt mount is configured by hvac's run before this one; configured again here through write)
  await op('write (auth/jwt/config)', () =>
    vault.write('auth/jwt/config', { jwt_validation_pubkeys: [fixtures.jwtPubkey], bound_issuer: fixtures.jwtIssuer }),
  );
  await op('write (auth/jwt/role/nv)', () =>
    vault.write('auth/jwt/role/nv', {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: ['keyhaven'],
      token_policies: ['default'],
      token_ttl: '1h',
    }),
  );
  const loginClient = make({ token: '' });
  await op(
    'jwtLogin',
    () => loginClient.jwtLogin({ role: 'nv', jwt: fixtures.jwt }),
    (a) =>
      expectThat(
        a.auth.policies.includes('default') && loginClient.token === a.auth.client_token,
        'a token, now the client’s',
      ),
  );
  await op(
    'read (oidc auth_url on a JWT-only mount)',
    () => vault.write('auth/jwt/oidc/auth_url', { role: 'nv', redirect_uri: 'http://127.0.0.1:8250/oidc/callback' }),
    undefined,
    400,
  );
  await op('delete (auth/jwt/role/nv)', () => vault.delete('auth/jwt/role/nv'));
  return results;
}
