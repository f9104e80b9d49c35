"""hvac (Debian's python3-hvac 0.11.2) against `npm start`, through hvac's own methods only.

Run by clients.test.ts with /usr/bin/python3. Reads its fixtures from the environment (see `env` below) and prints
one JSON line per operation: {"client", "op", "ok", "problem", "request", "answer"}; the request and the answer are
those of the last HTTP exchange the operation made, so a failure shows what was sent and what came back.
"""
import json
import os
import sys
import traceback

import hvac
import requests
import warnings

# hvac 0.11.2 forces its own DeprecationWarning for every legacy method (warnings.simplefilter('always') inside its
# decorator), which -W cannot silence; this suite drives those legacy methods on purpose, so their notices are dropped.
warnings.showwarning = lambda *args, **kwargs: None

env = {name: os.environ[name] for name in (
    'VAULT_ADDR', 'ROOT_TOKEN', 'CONSUL_ADDRESS', 'CONSUL_SCHEME', 'CONSUL_TOKEN', 'GOOGLE_OPTIONS', 'GOOGLE_CREDENTIALS',
    'GOOGLE_PROJECT', 'JWT', 'JWT_PUBKEY', 'JWT_ISSUER', 'OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_REDIRECT_URI',
)}

exchanges = []


def remember(response, *args, **kwargs):
    request = response.request
    body = request.body.decode() if isinstance(request.body, bytes) else request.body
    exchanges.append({
        'request': '%s %s %s' % (request.method, request.url, body or ''),
        'answer': '%s %s' % (response.status_code, response.text[:1500]),
        'status': response.status_code,
    })


session = requests.Session()
session.hooks['response'].append(remember)
client = hvac.Client(url=env['VAULT_ADDR'], token=env['ROOT_TOKEN'], session=session)


class Problem(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Problem(message)


def op(name, action, check=None, refused=None):
    """Runs one client operation. `check(result)` asserts on its result; `refused` is the status Vault refuses it with."""
    before = len(exchanges)
    problem = None
    result = None
    try:
        result = action()
        if refused is not None:
            problem = 'expected a refusal with status %d, got success' % refused
        elif check is not None:
            check(result)
    except hvac.exceptions.VaultError as error:
        status = exchanges[-1]['status'] if len(exchanges) > before else None
        if refused is None or status != refused:
            problem = '%s: %s (status %s)' % (type(error).__name__, error, status)
    except Exception as error:  # noqa: BLE001 - any failure is reported with the exchange that caused it
        problem = '%s: %s\n%s' % (type(error).__name__, error, traceback.format_exc(limit=3))
    last = exchanges[-1] if len(exchanges) > before else {'request': '(no request)', 'answer': '(no answer)'}
    print(json.dumps({'client': 'hvac', 'op': name, 'ok': problem is None, 'problem': problem,
                      'request': last['request'], 'answer': last['answer']}), flush=True)
    return result


def data(response):
    return response['data']


# --- sys ---------------------------------------------------------------------------------------------------------
op('sys.read_health_status', lambda: client.sys.read_health_status(method='GET'),
   lambda r: expect(r['initialized'] is True and r['sealed'] is False, 'health says initialised and unsealed'))
op('sys.is_initialized', client.sys.is_initialized, lambda r: expect(r is True, 'initialised'))
op('sys.read_init_status', client.sys.read_init_status, lambda r: expect(r['initialized'] is True, 'initialised'))
op('sys.is_sealed', client.sys.is_sealed, lambda r: expect(r is False, 'not sealed'))
op('sys.read_seal_status', client.sys.read_seal_status, lambda r: expect(r['sealed'] is False and r['type'] == 'shamir', 'unsealed shamir'))
op('sys.read_leader_status', client.sys.read_leader_status, lambda r: expect(r['ha_enabled'] is False, 'no HA'))
op('is_authenticated', client.is_authenticated, lambda r: expect(r is True, 'the root token is valid'))
op('seal_status', lambda: client.seal_status, lambda r: expect(r['sealed'] is False, 'unsealed'))
op('ha_status', lambda: client.ha_status, lambda r: expect('leader_address' in r, 'leader fields'))

op('sys.list_mounted_secrets_engines', client.sys.list_mounted_secrets_engines,
   lambda r: expect(r['data']['secret/']['options']['version'] == '2', 'secret/ is kv v2'))
op('sys.enable_secrets_engine', lambda: client.sys.enable_secrets_engine('kv', path='hvac-kv1', description='kv v1 from hvac'))
op('sys.enable_secrets_engine (kv v2)', lambda: client.sys.enable_secrets_engine('kv', path='hvac-kv2', options={'version': '2'}))
op('sys.read_mount_configuration', lambda: client.sys.read_mount_configuration('hvac-kv1'),
   lambda r: expect(data(r)['default_lease_ttl'] > 0, 'effective TTLs'))
op('sys.tune_mount_configuration', lambda: client.sys.tune_mount_configuration('hvac-kv1', default_lease_ttl='1h', description='tuned'))
op('sys.retrieve_mount_option', lambda: client.sys.retrieve_mount_option('hvac-kv2', 'version'), lambda r: expect(r == '2', 'version 2'))
op('list_secret_backends', client.list_secret_backends, lambda r: expect('hvac-kv1/' in r['data'], 'lists the new mount'))
op('get_secret_backend_tuning', lambda: client.get_secret_backend_tuning('kv', 'hvac-kv1'),
   lambda r: expect(r['data']['default_lease_ttl'] == 3600, 'the tuned TTL'))

op('sys.list_auth_methods', client.sys.list_auth_methods, lambda r: expect('token/' in r['data'] and 'jwt/' in r['data'], 'token and jwt'))
op('sys.enable_auth_method', lambda: client.sys.enable_auth_method('jwt', path='hvac-jwt', description='from hvac'))
op('sys.read_auth_method_tuning', lambda: client.sys.read_auth_method_tuning('hvac-jwt'), lambda r: expect('max_lease_ttl' in data(r), 'tuning'))
op('sys.tune_auth_method', lambda: client.sys.tune_auth_method('hvac-jwt', default_lease_ttl='30m'))
op('sys.disable_auth_method', lambda: client.sys.disable_auth_method('hvac-jwt'))

op('enable_auth_backend', lambda: client.enable_auth_backend('jwt', description='legacy call', mount_point='hvac-jwt2'))
op('list_auth_backends', client.list_auth_backends, lambda r: expect('hvac-jwt2/' in r['data'], 'listed'))
op('tune_auth_backend', lambda: client.tune_auth_backend('jwt', mount_point='hvac-jwt2', default_lease_ttl='20m'))
op('get_auth_backend_tuning', lambda: client.get_auth_backend_tuning('jwt', mount_point='hvac-jwt2'),
   lambda r: expect(r['data']['default_lease_ttl'] == 1200, 'the tuned TTL'))
op('disable_auth_backend', lambda: client.disable_auth_backend('hvac-jwt2'))
op('enable_secret_backend', lambda: client.enable_secret_backend('kv', mount_point='hvac-kv3', options={'version': '2'}))
op('tune_secret_backend', lambda: client.tune_secret_backend('kv', mount_point='hvac-kv3', max_lease_ttl='2h'))
op('disable_secret_backend', lambda: client.disable_secret_backend('hvac-kv3'))
op('is_initialized', client.is_initialized, lambda r: expect(r is True, 'initialised'))
op('is_sealed', client.is_sealed, lambda r: expect(r is False, 'unsealed'))

op('sys.enable_audit_device', lambda: client.sys.enable_audit_device('file', options={'file_path': 'discard'}, path='hvac-audit'))
op('sys.list_enabled_audit_devices', client.sys.list_enabled_audit_devices, lambda r: expect('hvac-audit/' in data(r), 'listed'))
op('sys.calculate_hash', lambda: client.sys.calculate_hash('hvac-audit', 'some input'), lambda r: expect(data(r)['hash'].startswith('hmac-sha256:'), 'an HMAC'))
op('sys.disable_audit_device', lambda: client.sys.disable_audit_device('hvac-audit'))
op('enable_audit_backend', lambda: client.enable_audit_backend('file', options={'file_path': 'discard'}, name='hvac-audit2'))
op('list_audit_backends', client.list_audit_backends, lambda r: expect('hvac-audit2/' in r['data'], 'listed'))
op('audit_hash', lambda: client.audit_hash('hvac-audit2', 'x'), lambda r: expect(r['data']['hash'].startswith('hmac-sha256:'), 'an HMAC'))
op('disable_audit_backend', lambda: client.disable_audit_backend('hvac-audit2'))

reader = 'path "secret/data/hvac/*" { capabilities = ["read", "list"] }'
op('sys.create_or_update_policy', lambda: client.sys.create_or_update_policy('hvac-reader', reader))
op('sys.read_policy', lambda: client.sys.read_policy('hvac-reader'), lambda r: expect(data(r)['rules'] == reader, 'the rules as written'))
op('sys.list_policies', client.sys.list_policies, lambda r: expect('hvac-reader' in data(r)['policies'], 'listed'))
op('set_policy', lambda: client.set_policy('hvac-legacy', {'path': {'secret/data/legacy/*': {'capabilities': ['read']}}}))
op('get_policy', lambda: client.get_policy('hvac-legacy'), lambda r: expect('secret/data/legacy/*' in r, 'the JSON policy'))
op('list_policies', client.list_policies, lambda r: expect('hvac-legacy' in r, 'listed'))
op('delete_policy', lambda: client.delete_policy('hvac-legacy'))
op('sys.delete_policy', lambda: client.sys.delete_policy('hvac-reader'))
op('sys.read_policy (deleted)', lambda: client.sys.read_policy('hvac-reader'), refused=404)

op('sys.get_capabilities', lambda: client.sys.get_capabilities(paths=['secret/data/x']),
   lambda r: expect(data(r)['secret/data/x'] == ['root'], 'root on everything'))

# --- kv v1 --------------------------------------------------------------------------------------------------------
kv1 = client.secrets.kv.v1
op('secrets.kv.v1.create_or_update_secret', lambda: kv1.create_or_update_secret('app/db', {'password': 's3cret', 'ttl': '1h'}, mount_point='kv'))
op('secrets.kv.v1.read_secret', lambda: kv1.read_secret('app/db', mount_point='kv'),
   lambda r: expect(data(r)['password'] == 's3cret' and r['lease_duration'] == 3600 and r['lease_id'], 'the secret under a lease'))
lease = op('read (kv v1, leased)', lambda: client.read('kv/app/db'), lambda r: expect(r['renewable'] is True, 'renewable'))
op('secrets.kv.v1.list_secrets', lambda: kv1.list_secrets('app', mount_point='kv'), lambda r: expect(data(r)['keys'] == ['db'], 'one key'))
op('secrets.kv.v1.list_secrets (empty mount)', lambda: kv1.list_secrets('', mount_point='hvac-kv1'), refused=404)
op('write', lambda: client.write('kv/app/other', value='v'))
op('read', lambda: client.read('kv/app/other'), lambda r: expect(data(r) == {'value': 'v'}, 'as written'))
op('list', lambda: client.list('kv/app'), lambda r: expect(data(r)['keys'] == ['db', 'other'], 'both keys'))
op('delete', lambda: client.delete('kv/app/other'))
op('secrets.kv.v1.delete_secret', lambda: kv1.delete_secret('app/gone', mount_point='kv'))
op('secrets.kv.v1.create_or_update_secret (before upgrade)', lambda: kv1.create_or_update_secret('before', {'kept': 'yes'}, mount_point='hvac-kv1'))

# --- leases -------------------------------------------------------------------------------------------------------
lease_id = lease['lease_id'] if lease else 'none'
op('sys.read_lease', lambda: client.sys.read_lease(lease_id), lambda r: expect(data(r)['id'] == lease_id, 'the lease'))
op('sys.list_leases', lambda: client.sys.list_leases('kv/app/db'), lambda r: expect(len(data(r)['keys']) >= 1, 'one lease at least'))
op('sys.renew_lease', lambda: client.sys.renew_lease(lease_id), lambda r: expect(r['lease_id'] == lease_id, 'renewed'))
op('read_lease', lambda: client.read_lease(lease_id), lambda r: expect(data(r)['id'] == lease_id, 'the lease'))
op('renew_secret', lambda: client.renew_secret(lease_id, increment=600), lambda r: expect(r['lease_duration'] == 600, 'the increment'))
op('sys.revoke_lease', lambda: client.sys.revoke_lease(lease_id))
def lease_of(response):
    return response['lease_id'] if response else 'none'


second = op('read (kv v1, a second lease)', lambda: client.read('kv/app/db'), lambda r: expect(r['lease_id'], 'a lease'))
op('revoke_secret', lambda: client.revoke_secret(lease_of(second)))
op('read (kv v1, a third lease)', lambda: client.read('kv/app/db'))
op('sys.revoke_prefix', lambda: client.sys.revoke_prefix('kv/app/db'))
op('read (kv v1, a fourth lease)', lambda: client.read('kv/app/db'))
op('revoke_secret_prefix', lambda: client.revoke_secret_prefix('kv/app/db'))
op('read (kv v1, a fifth lease)', lambda: client.read('kv/app/db'))
op('sys.revoke_force', lambda: client.sys.revoke_force('kv/app/db'))
op('sys.list_leases (all revoked)', lambda: client.sys.list_leases('kv/app/db'), refused=404)

# --- kv v2 --------------------------------------------------------------------------------------------------------
kv2 = client.secrets.kv.v2
op('secrets.kv.v2.configure', lambda: kv2.configure(max_versions=5, mount_point='hvac-kv2'))
op('secrets.kv.v2.read_configuration', lambda: kv2.read_configuration(mount_point='hvac-kv2'), lambda r: expect(data(r)['max_versions'] == 5, 'as set'))
op('secrets.kv.v2.create_or_update_secret', lambda: kv2.create_or_update_secret('hvac/app', {'user': 'a'}),
   lambda r: expect(data(r)['version'] == 1, 'version 1'))
op('secrets.kv.v2.create_or_update_secret (cas)', lambda: kv2.create_or_update_secret('hvac/app', {'user': 'b'}, cas=1),
   lambda r: expect(data(r)['version'] == 2, 'version 2'))
op('secrets.kv.v2.create_or_update_secret (stale cas)', lambda: kv2.create_or_update_secret('hvac/app', {'user': 'c'}, cas=1), refused=400)
op('secrets.kv.v2.read_secret_version', lambda: kv2.read_secret_version('hvac/app'), lambda r: expect(data(r)['data'] == {'user': 'b'}, 'latest'))
op('secrets.kv.v2.read_secret_version (version 1)', lambda: kv2.read_secret_version('hvac/app', version=1),
   lambda r: expect(data(r)['data'] == {'user': 'a'}, 'version 1'))
op('secrets.kv.v2.read_secret', lambda: kv2.read_secret('hvac/app'), lambda r: expect(data(r)['metadata']['version'] == 2, 'latest'))
op('secrets.kv.v2.patch', lambda: kv2.patch('hvac/app', {'extra': 'x'}), lambda r: expect(data(r)['version'] == 3, 'version 3'))
op('secrets.kv.v2.list_secrets', lambda: kv2.list_secrets('hvac'), lambda r: expect(data(r)['keys'] == ['app'], 'one key'))
op('secrets.kv.v2.read_secret_metadata', lambda: kv2.read_secret_metadata('hvac/app'), lambda r: expect(data(r)['current_version'] == 3, 'three versions'))
op('secrets.kv.v2.update_metadata', lambda: kv2.update_metadata('hvac/app', max_versions=4, cas_required=False))
op('secrets.kv.v2.delete_latest_version_of_secret', lambda: kv2.delete_latest_version_of_secret('hvac/app'))
op('secrets.kv.v2.read_secret_version (deleted)', lambda: kv2.read_secret_version('hvac/app'), refused=404)
op('secrets.kv.v2.undelete_secret_versions', lambda: kv2.undelete_secret_versions('hvac/app', versions=[3]))
op('secrets.kv.v2.delete_secret_versions', lambda: kv2.delete_secret_versions('hvac/app', versions=[1]))
op('secrets.kv.v2.destroy_secret_versions', lambda: kv2.destroy_secret_versions('hvac/app', versions=[1]))
op('secrets.kv.v2.read_secret_metadata (destroyed)', lambda: kv2.read_secret_metadata('hvac/app'),
   lambda r: expect(data(r)['versions']['1']['destroyed'] is True, 'version 1 destroyed'))
op('secrets.kv.v2.delete_metadata_and_all_versions', lambda: kv2.delete_metadata_and_all_versions('hvac/app'))
op('secrets.kv.v2.list_secrets (empty)', lambda: kv2.list_secrets('', mount_point='hvac-kv2'), refused=404)
op('secrets.kv.read_secret_version (default v2)', lambda: client.secrets.kv.read_secret_version('hvac/none'), refused=404)
op('sys.tune_mount_configuration (upgrade to kv v2)', lambda: client.sys.tune_mount_configuration('hvac-kv1', options={'version': '2'}))
op('secrets.kv.v2.read_secret_version (upgraded)', lambda: kv2.read_secret_version('before', mount_point='hvac-kv1'),
   lambda r: expect(data(r)['data'] == {'kept': 'yes'} and data(r)['metadata']['version'] == 1, 'the v1 secret as version 1'))
op('sys.disable_secrets_engine', lambda: client.sys.disable_secrets_engine('hvac-kv1'))

# --- tokens and token roles ---------------------------------------------------------------------------------------
tokens = client.auth.token
made = op('auth.token.create', lambda: tokens.create(policies=['default'], ttl='1h', meta={'who': 'hvac'}),
          lambda r: expect(r['auth']['lease_duration'] == 3600, 'one hour'))
child = made['auth'] if made else {'client_token': 'none', 'accessor': 'none'}
orphan = op('auth.token.create (no_parent)', lambda: tokens.create(no_parent=True, policies=['default']), lambda r: expect(r['auth']['orphan'] is True, 'orphan'))
op('create_token (orphan)', lambda: client.create_token(orphan=True, policies=['default']), lambda r: expect(r['auth']['orphan'] is True, 'orphan'))
op('auth.token.lookup', lambda: tokens.lookup(child['client_token']), lambda r: expect(data(r)['meta'] == {'who': 'hvac'}, 'the meta'))
op('auth.token.lookup_self', tokens.lookup_self, lambda r: expect('root' in data(r)['policies'], 'root'))
op('auth.token.lookup_accessor', lambda: tokens.lookup_accessor(child['accessor']), lambda r: expect(data(r)['accessor'] == child['accessor'], 'same'))
op('auth.token.list_accessors', tokens.list_accessors, lambda r: expect(child['accessor'] in data(r)['keys'], 'listed'))
op('auth.token.renew', lambda: tokens.renew(child['client_token'], increment='30m'), lambda r: expect(r['auth']['lease_duration'] == 1800, '30m'))
op('auth.token.renew_accessor', lambda: tokens.renew_accessor(child['accessor'], increment=1200))
op('auth.token.create_or_update_role', lambda: tokens.create_or_update_role('hvac-role', allowed_policies=['default'], orphan=True, renewable=True))
op('auth.token.read_role', lambda: tokens.read_role('hvac-role'), lambda r: expect(data(r)['orphan'] is True, 'orphan role'))
op('auth.token.list_roles', tokens.list_roles, lambda r: expect('hvac-role' in data(r)['keys'], 'listed'))
op('auth.token.create (role)', lambda: tokens.create(role_name='hvac-role', policies=['default']),
   lambda r: expect(r['auth']['orphan'] is True, 'orphan from the role'))
op('create_token (role)', lambda: client.create_token(role='hvac-role', policies=['default']), lambda r: expect(r['auth']['orphan'] is True, 'orphan from the role'))
op('create_token', lambda: client.create_token(policies=['default'], lease='1h'), lambda r: expect(r['auth']['client_token'], 'a token'))
legacy = (op('create_token (for the legacy token calls)', lambda: client.create_token(policies=['default'])) or {'auth': {'client_token': 'none', 'accessor': 'none'}})['auth']
op('lookup_token', lambda: client.lookup_token(legacy['client_token']), lambda r: expect(data(r)['policies'] == ['default'], 'default'))
op('lookup_token (accessor)', lambda: client.lookup_token(legacy['accessor'], accessor=True), lambda r: expect(data(r)['accessor'] == legacy['accessor'], 'same'))
op('renew_token', lambda: client.renew_token(legacy['client_token']), lambda r: expect(r['auth']['client_token'] == legacy['client_token'], 'the token renewed'))
op('create_token_role', lambda: client.create_token_role('hvac-legacy-role', allowed_policies=['default']))
op('token_role', lambda: client.token_role('hvac-legacy-role'), lambda r: expect(data(r)['name'] == 'hvac-legacy-role', 'the role'))
op('list_token_roles', client.list_token_roles, lambda r: expect('hvac-legacy-role' in data(r)['keys'], 'listed'))
op('delete_token_role', lambda: client.delete_token_role('hvac-legacy-role'))
op('revoke_token', lambda: client.revoke_token(legacy['client_token']))
op('auth.token.revoke_accessor', lambda: tokens.revoke_accessor(child['accessor']))
third = (op('auth.token.create (to revoke with its children orphaned)', lambda: tokens.create(policies=['default'])) or {'auth': {'client_token': 'none'}})['auth']
op('auth.token.revoke_and_orphan_children', lambda: tokens.revoke_and_orphan_children(third['client_token']))
fourth = (op('auth.token.create (to revoke)', lambda: tokens.create(policies=['default'])) or {'auth': {'client_token': 'none'}})['auth']
op('auth.token.revoke', lambda: tokens.revoke(fourth['client_token']))
op('auth.token.lookup (revoked)', lambda: tokens.lookup(fourth['client_token']), refused=403)
op('auth.token.delete_role', lambda: tokens.delete_role('hvac-role'))
self_client = hvac.Client(url=env['VAULT_ADDR'], token=orphan['auth']['client_token'] if orphan else 'none', session=session)
op('auth.token.renew_self', lambda: self_client.auth.token.renew_self(), lambda r: expect(r['auth']['renewable'] is True, 'renewed'))
op('renew_self_token', lambda: self_client.renew_self_token())
op('lookup_token (self)', lambda: self_client.lookup_token(), lambda r: expect(data(r)['orphan'] is True, 'the orphan token'))
op('auth.token.revoke_self', lambda: self_client.auth.token.revoke_self())
last_client = hvac.Client(url=env['VAULT_ADDR'], token=(op('auth.token.create (to revoke itself)', lambda: tokens.create(policies=['default'])) or {'auth': {'client_token': 'none'}})['auth']['client_token'], session=session)
op('revoke_self_token', last_client.revoke_self_token)
op('is_authenticated (revoked)', last_client.is_authenticated, lambda r: expect(r is False, 'no longer valid'))

# --- JWT and OIDC login -------------------------------------------------------------------------------------------
jwt = client.auth.jwt
op('auth.jwt.configure', lambda: jwt.configure(jwt_validation_pubkeys=[env['JWT_PUBKEY']], bound_issuer=env['JWT_ISSUER'], path='jwt'))
op('auth.jwt.read_config', lambda: jwt.read_config(path='jwt'), lambda r: expect(data(r)['bound_issuer'] == env['JWT_ISSUER'], 'as written'))
op('auth.jwt.create_role', lambda: jwt.create_role('ci', user_claim='sub', allowed_redirect_uris=[], role_type='jwt',
                                                   bound_audiences=['keyhaven'], token_policies=['default'], token_ttl='1h', path='jwt'))
op('auth.jwt.read_role', lambda: jwt.read_role('ci', path='jwt'), lambda r: expect(data(r)['bound_audiences'] == ['keyhaven'], 'as written'))
op('auth.jwt.list_roles', lambda: jwt.list_roles(path='jwt'), lambda r: expect(data(r)['keys'] == ['ci'], 'one role'))
op('auth.jwt.jwt_login', lambda: jwt.jwt_login('ci', env['JWT'], use_token=False, path='jwt'),
   lambda r: expect(r['auth']['policies'] == ['default'] and r['auth']['lease_duration'] == 3600, 'a token with the role policies'))
op('auth.jwt.oidc_authorization_url_request (JWT-only mount)',
   lambda: jwt.oidc_authorization_url_request('ci', env['OIDC_REDIRECT_URI'], path='jwt'), refused=400)
op('sys.enable_auth_method (oidc)', lambda: client.sys.enable_auth_method('oidc', path='oidc'))
op('auth.oidc.configure', lambda: client.auth.oidc.configure(oidc_discovery_url=env['OIDC_ISSUER'], oidc_client_id=env['OIDC_CLIENT_ID'],
                                                              oidc_client_secret=env['OIDC_CLIENT_SECRET'], default_role='web', path='oidc'))
op('auth.oidc.create_role', lambda: client.auth.oidc.create_role('web', user_claim='sub', allowed_redirect_uris=[env['OIDC_REDIRECT_URI']],
                                                                  token_policies=['default'], path='oidc'))
op('auth.oidc.oidc_authorization_url_request', lambda: client.auth.oidc.oidc_authorization_url_request('web', env['OIDC_REDIRECT_URI'], path='oidc'),
   lambda r: expect(data(r)['auth_url'].startswith(env['OIDC_ISSUER']), 'a URL at the provider'))
op('auth.jwt.delete_role', lambda: jwt.delete_role('ci', path='jwt'))

# --- consul at mesh/ ----------------------------------------------------------------------------------------------
consul = client.secrets.consul
op('secrets.consul.configure_access', lambda: consul.configure_access(env['CONSUL_ADDRESS'], env['CONSUL_TOKEN'], scheme=env['CONSUL_SCHEME'], mount_point='mesh'))
op('secrets.consul.create_or_update_role', lambda: consul.create_or_update_role('web', policies=['global-management'], ttl='1h', mount_point='mesh'))
op('secrets.consul.read_role', lambda: consul.read_role('web', mount_point='mesh'), lambda r: expect(data(r)['mesh_policies'] == ['global-management'], 'the policy'))
op('secrets.consul.list_roles', lambda: consul.list_roles(mount_point='mesh'), lambda r: expect(data(r)['keys'] == ['web'], 'one role'))
creds = op('secrets.consul.generate_credentials', lambda: consul.generate_credentials('web', mount_point='mesh'),
           lambda r: expect(data(r)['token'] and r['lease_duration'] == 3600, 'a token under a lease'))
if creds:
    op('sys.revoke_lease (mesh)', lambda: client.sys.revoke_lease(creds['lease_id']))
op('secrets.consul.delete_role', lambda: consul.delete_role('web', mount_point='mesh'))

# --- gcp at cloud/ ------------------------------------------------------------------------------------------------
gcp = client.secrets.gcp
project = env['GOOGLE_PROJECT']
bindings = 'resource "//cloudresourcemanager.googleapis.com/projects/%s" { roles = ["roles/viewer"] }' % project
op('sys.disable_secrets_engine (cloud)', lambda: client.sys.disable_secrets_engine('cloud'))
op('sys.enable_secrets_engine (cloud)', lambda: client.sys.enable_secrets_engine('cloud', path='cloud', options=json.loads(env['GOOGLE_OPTIONS'])))
op('secrets.gcp.configure', lambda: gcp.configure(credentials=env['GOOGLE_CREDENTIALS'], ttl='1h', mount_point='cloud'))
op('secrets.gcp.read_config', lambda: gcp.read_config(mount_point='cloud'), lambda r: expect(data(r)['ttl'] in (3600, '1h0m0s'), 'the ttl as written'))
op('secrets.gcp.create_or_update_roleset', lambda: gcp.create_or_update_roleset('viewer', project, bindings, secret_type='access_token',
                                                                                 token_scopes=['https://www.googleapis.com/auth/cloud-platform'], mount_point='cloud'))
op('secrets.gcp.read_roleset', lambda: gcp.read_roleset('viewer', mount_point='cloud'), lambda r: expect(data(r)['secret_type'] == 'access_token', 'access tokens'))
op('secrets.gcp.list_rolesets', lambda: gcp.list_rolesets(mount_point='cloud'), lambda r: expect(data(r)['keys'] == ['viewer'], 'one roleset'))
op('secrets.gcp.generate_oauth2_access_token', lambda: gcp.generate_oauth2_access_token('viewer', mount_point='cloud'), lambda r: expect(data(r)['token'], 'an access token'))
op('secrets.gcp.rotate_roleset_account_key', lambda: gcp.rotate_roleset_account_key('viewer', mount_point='cloud'))
op('secrets.gcp.rotate_roleset_account', lambda: gcp.rotate_roleset_account('viewer', mount_point='cloud'))
op('secrets.gcp.create_or_update_roleset (keys)', lambda: gcp.create_or_update_roleset('keys', project, bindings, secret_type='service_account_key', mount_point='cloud'))
key = op('secrets.gcp.generate_service_account_key', lambda: gcp.generate_service_account_key('keys', mount_point='cloud'),
         lambda r: expect(data(r)['private_key_data'] and r['lease_id'], 'a key under a lease'))
if key:
    op('sys.revoke_lease (cloud key)', lambda: client.sys.revoke_lease(key['lease_id']))
op('secrets.gcp.delete_roleset', lambda: gcp.delete_roleset('keys', mount_point='cloud'))
