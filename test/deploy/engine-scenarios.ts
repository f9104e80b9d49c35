import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import type { SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import type { ConsulEmulator } from '../emulators/consul.ts';
import type { GoogleEmulator } from '../emulators/google.ts';
import { deletionLdif, rollbackLdif } from '../support/ldif-fixtures.ts';
import { dynamicDn, groupsDn, managerDn, managerPassword, peopleDn, type Slapd } from '../support/slapd.ts';
import { genericScenario } from './generic-scenario.ts';
import type { Answer } from './lambda-events.ts';

export type Handler = (...args: never[]) => Promise<unknown>;

/** What a family's scenario is given by the deploy run (test/deploy/function-calls.ts). */
export interface ScenarioContext {
  /** The servers the engines talk to. */
  consul: ConsulEmulator;
  slapd: Slapd;
  google: GoogleEmulator;
  /** The family's own function (`Secrets-<family>`) and the system function. */
  fn: string;
  handler: Handler;
  system: Handler;
  /** A call to a function as API Gateway makes it, with the root token unless another is given; it must succeed. */
  call(fn: string, handler: Handler, method: string, url: string, body?: unknown, token?: string): Promise<Answer>;
  /** The same call, whose answer may refuse (a 4xx) but not fail (a 500 fails the run). */
  send(fn: string, handler: Handler, method: string, url: string, body?: unknown, token?: string): Promise<Answer>;
  /** A token of policy `app` (`secret/*`: create, read, update, list), limited to 10 uses. */
  limited: string;
}

/**
 * How the permission test (test/deploy/function-permissions.test.ts) drives one family's function: what it calls,
 * what the family's job then answers, and where that run differs from what stacks/permissions.ts grants.
 */
export interface EngineScenario {
  /** The options its mount is enabled with in the run. */
  mountOptions?: Record<string, string>;
  /** Drives the family's function (and the system function revoking what it issued), after its mounts are enabled. */
  drive(context: ScenarioContext): Promise<void>;
  /** What the family's job (`Job-<family>`, when it has one) answers when run after every scenario. */
  jobAnswer?: Record<string, number>;
  /**
   * Where this run of the family's function differs from the reasons stacks/permissions.ts gives for the grants it
   * does not reach (`read:<pattern>` or `write:<pattern>`): a reason for a grant this run leaves unused, or
   * `undefined` for one it does use (the run calls the engines with the root token, so no ACL policy is read, and
   * revokes no lease there).
   */
  runNotes?: Record<string, string | undefined>;
}

const lastUse =
  'a limited-use token revoked at its last use in this function takes its accessor, issuer index and leases (TokenStore.revoke)';

const creationLdif = `dn: cn={{.Username}},${dynamicDn}
objectClass: inetOrgPerson
cn: {{.Username}}
sn: {{.RoleName}}
userPassword: {{.Password}}

dn: cn=developers,${groupsDn}
changetype: modify
add: member
member: cn={{.Username}},${dynamicDn}
-
`;
const viewer = 'resource "//cloudresourcemanager.googleapis.com/projects/proj-1" { roles = ["roles/viewer"] }';

/**
 * The families' own deploy scenarios, by family (of `packages/core/src/secrets/family-list.ts`; `system` is driven by
 * the run itself). A family without one is driven by the scenario derived from its OpenAPI rows
 * (`generic-scenario.ts`); one whose calls need more than that (a server to reach, a login to sign, a lease left for
 * its job) declares its own here.
 */
export const engineScenarios: Partial<Record<SecretsFamily, EngineScenario>> = {
  // Writes, reads (the authenticated read path batches its lookups), lists, deletes, with a use-limited token, which
  // reads its policies and may be revoked at its last use.
  kv: {
    runNotes: { 'read:policies': undefined, 'write:leases#*': lastUse, 'write:revoked-leases#*': lastUse },
    async drive({ call, fn, handler, limited }) {
      await call(fn, handler, 'POST', '/v1/secret/app/db', { password: 'pw1' }, limited);
      await call(fn, handler, 'GET', '/v1/secret/app/db', undefined, limited);
      await call(fn, handler, 'GET', '/v1/secret/app?list=true', undefined, limited);
      await call(fn, handler, 'DELETE', '/v1/secret/app/db');
    },
  },
  // Configuration, a role, a login; a limited-use token spends its uses here, and is revoked here at its last.
  jwt: {
    async drive({ call, fn, handler, system }) {
      const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      await call(fn, handler, 'POST', '/v1/auth/jwt/config', {
        jwt_validation_pubkeys: [publicKey.export({ type: 'spki', format: 'pem' }).toString()],
      });
      await call(fn, handler, 'POST', '/v1/auth/jwt/role/dev', {
        role_type: 'jwt',
        user_claim: 'sub',
        bound_audiences: ['keyhaven'],
        token_policies: ['app'],
      });
      const assertion = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256' })
        .setSubject('alice')
        .setAudience('keyhaven')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      await call(fn, handler, 'POST', '/v1/auth/jwt/login', { role: 'dev', jwt: assertion }, '');
      await call(fn, handler, 'DELETE', '/v1/auth/jwt/role/dev');
      const twoUses = (
        await call('Secrets-system', system, 'POST', '/v1/auth/token/create', { policies: ['root'], num_uses: 2 })
      ).body.auth.client_token;
      await call(fn, handler, 'GET', '/v1/auth/jwt/config', undefined, twoUses);
      await call(fn, handler, 'GET', '/v1/auth/jwt/config', undefined, twoUses);
    },
  },
  // Access, a role, credentials (a lease), revoked through the system function (which invokes this function), one
  // at once and one queued for the job.
  mesh: {
    jobAnswer: { leases: 1, failed: 0 },
    async drive({ call, fn, handler, system, consul }) {
      const consulRoot = ((await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string }).SecretID;
      await consul.request('PUT', '/v1/acl/policy', {
        token: consulRoot,
        body: { Name: 'svc-read', Rules: 'service_prefix "" { policy = "read" }' },
      });
      await call(fn, handler, 'POST', '/v1/mesh/config/access', { address: consul.address, token: consulRoot });
      await call(fn, handler, 'POST', '/v1/mesh/roles/app', { mesh_policies: 'svc-read' });
      await call(fn, handler, 'GET', '/v1/mesh/roles?list=true');
      const synchronous = (await call(fn, handler, 'GET', '/v1/mesh/creds/app')).body.lease_id;
      await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', { lease_id: synchronous });
      const queued = (await call(fn, handler, 'GET', '/v1/mesh/creds/app')).body.lease_id;
      await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', { lease_id: queued, sync: false });
      await call(fn, handler, 'DELETE', '/v1/mesh/roles/app');
    },
  },
  // A real slapd: configuration, a static role rotated and read, a dynamic role's credentials revoked (one at once,
  // one queued for the job).
  ldap: {
    jobAnswer: { leases: 1, failed: 0 },
    async drive({ call, fn, handler, system, slapd }) {
      await call(fn, handler, 'POST', '/v1/ldap/config', {
        url: slapd.url,
        binddn: managerDn,
        bindpass: managerPassword,
        userdn: peopleDn,
      });
      await call(fn, handler, 'GET', '/v1/ldap/config');
      await call(fn, handler, 'POST', '/v1/ldap/static-role/alice', { username: 'alice', rotation_period: '1h' });
      await call(fn, handler, 'POST', '/v1/ldap/rotate-role/alice');
      await call(fn, handler, 'GET', '/v1/ldap/static-cred/alice');
      await call(fn, handler, 'DELETE', '/v1/ldap/static-role/alice');
      await call(fn, handler, 'POST', '/v1/ldap/role/dev', {
        creation_ldif: creationLdif,
        deletion_ldif: deletionLdif,
        rollback_ldif: rollbackLdif,
      });
      const leases = [
        (await call(fn, handler, 'GET', '/v1/ldap/creds/dev')).body.lease_id,
        (await call(fn, handler, 'GET', '/v1/ldap/creds/dev')).body.lease_id,
      ];
      await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leases[0] });
      await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leases[1], sync: false });
    },
  },
  // The Google emulator: configuration, a roleset of keys, a leased key revoked by the job (and recorded as revoked
  // here when the system function asks).
  cloud: {
    mountOptions: { retry_base_ms: '1' },
    jobAnswer: { leases: 1, failed: 0 },
    runNotes: { 'write:revoked-leases#*': 'a lease revoked here is recorded as revoked (LeaseManager.forget)' },
    async drive({ call, fn, handler, system, google }) {
      const cloudRoot = google.seedServiceAccount('proj-1', 'keyhaven-root');
      await call(fn, handler, 'POST', '/v1/cloud/config', { credentials: cloudRoot.credentials });
      await call(fn, handler, 'POST', '/v1/cloud/roleset/keys', {
        project: 'proj-1',
        bindings: viewer,
        secret_type: 'service_account_key',
      });
      const lease = (await call(fn, handler, 'POST', '/v1/cloud/roleset/keys/key')).body.lease_id;
      await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', { lease_id: lease, sync: false });
    },
  },
};

/** A family's scenario: its own, else the one derived from its OpenAPI rows. */
export function scenarioOf(family: SecretsFamily): EngineScenario {
  if (family === 'system') throw new Error('the system family is driven by the run itself, not by a scenario');
  return engineScenarios[family] ?? genericScenario(family);
}
