import { type AttributeValue, paginateScan } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { schedulerFront, schedulerRoutes } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { mountPathOf, mountsToEnable } from '../support/secrets-routes.ts';
import { viaLambda } from './lambda-event.ts';
import { encodedSpellings, onlyEncodesLetters, spellings } from './spellings.ts';
import { segmentedPath } from '../../packages/core/src/lib/request-path.ts';
import { matchRoute } from '../../packages/core/src/scheduler/http/route.ts';

/** Whether a spelt scheduler path is canonical, its `%2F`s inside a parameter a row lets hold a `/` (a job ID). */
function namesASlashedId(method: string, url: string): boolean {
  const path = segmentedPath(url.split('?')[0] ?? url);
  if (path.problem !== undefined || path.encoded !== (url.split('?')[0] ?? url)) return false;
  if (!path.segments.some((segment) => segment.includes('/'))) return false;
  return matchRoute(schedulerRoutes, method, path.segments) !== undefined;
}

/**
 * Issue 23 §1 and its programme, as a property over EVERY path row of both services. Attacker: a narrow token.
 *
 * Secrets service: for each path row, a concrete path (each `:param` filled with a generated name, often one that
 * names an existing item), a random policy that allows a glob prefix of it with every capability (sudo included)
 * and denies the concrete path itself, and a token with only that policy. The canonical path is first confirmed
 * denied (403, or 405 where the row has no such operation) for every operation; then generated spellings of the
 * path (test/attacks/spellings.ts: trailing `/`, `//`, `%2F`, `.`, `..`, `%2e`, backslash, percent-encoded letters)
 * × every operation (GET, LIST as `GET ?list=true`, PUT, POST, DELETE, PATCH), through the node app AND the Lambda
 * adapter, never answer 2xx (nor 5xx), and the table is unchanged: a full Scan before and after, less the items the
 * request machinery itself writes (none were found: a control request was diffed in writing this test, and the
 * comparison is over every item). The class of HashiCorp's path-normalisation fixes (HCSEC-2025-14,
 * CVE-2025-6000's prefix handling).
 *
 * Scheduler service (Nomad's ACL policies have no path rules): for each route row, a narrow client token (a random
 * Nomad policy of namespace/node/agent/operator/host_volume/plugin/quota rules) never gets a 2xx on a
 * `management` row, canonical or not; no non-canonical spelling answers 2xx even for the management token, on any
 * row; through the app and the Lambda adapter; and the table is unchanged.
 *
 * Skipped rows, each for its reason:
 * - secrets, `unauthenticated: true` rows (sys/health, sys/init, sys/seal-status, sys/leader,
 *   sys/internal/ui/mounts/:path+, identity/oidc/plugins/.well-known/{openid-configuration,keys},
 *   auth/{jwt,oidc}/{login,oidc/auth_url,oidc/callback}): no token and no policy is consulted, so there is no
 *   denied answer to hold a spelling to (path-spellings.test.ts still shows their spellings are refused).
 * - scheduler, `access: 'anyone'` rows (agent/health, acl/bootstrap, acl/auth-methods, acl/login,
 *   acl/oidc/auth-url, acl/oidc/complete-auth): the same reason; and `acl/token/self`, which answers any token
 *   about itself by design. Their spellings are still exercised for the management token (never 2xx).
 * The secrets service's `*-self` rows (auth/token/{lookup,renew,revoke}-self, sys/capabilities-self) are NOT
 * skipped: here they are policy-checked like any path (the default policy is what grants them), and the token is
 * created without it.
 */

const SEED = Number(process.env.PATH_PROPERTY_SEED ?? 20261124);
/** Draws per row (each draw: a concrete path, a policy, a token and a sample of spellings). */
const RUNS_PER_ROW = Number(process.env.PATH_PROPERTY_RUNS ?? 1);
/** Spellings tried per draw (each on every operation and both adapters). */
const SPELLINGS_PER_DRAW = Number(process.env.PATH_PROPERTY_SPELLINGS ?? 5);

console.log(
  `path-property: seed ${SEED} (PATH_PROPERTY_SEED), ${RUNS_PER_ROW} draw(s) per row, ${SPELLINGS_PER_DRAW} spellings per draw`,
);

type Answer = { status: number; text: string };
type Send = (method: string, url: string, token: string, body?: unknown) => Promise<Answer>;

const operations = ['GET', 'LIST', 'PUT', 'POST', 'DELETE', 'PATCH'] as const;
/** LIST is `GET ?list=true` on every adapter, as Vault's clients send it. */
const asSent = (operation: string, url: string): [string, string] =>
  operation === 'LIST' ? ['GET', `${url}${url.includes('?') ? '&' : '?'}list=true`] : [operation, url];
const is2xx = (status: number) => status >= 200 && status < 300;

/** Every item of the table, by key, as DynamoDB holds it. */
async function scan(client: SecretsHarness['client'], tableName: string): Promise<Map<string, string>> {
  const items = new Map<string, string>();
  for await (const page of paginateScan({ client }, { TableName: tableName, ConsistentRead: true })) {
    for (const item of page.Items ?? []) items.set(`${item.pk?.S}\u0000${item.sk?.S}`, JSON.stringify(sorted(item)));
  }
  return items;
}
const sorted = (item: Record<string, AttributeValue>) =>
  Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)));

/** The keys whose items differ between two scans (added, removed or changed). */
function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((key) => before.get(key) !== after.get(key)).map((key) => key.replace('\u0000', ' | '));
}

/** A name for a `:param`: often one that names an item the setup created, so that a bypass would reach something. */
const names = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('admin', 'app', 'x') },
  { weight: 3, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_-]{0,7}$/) },
);

/** A concrete path for a row's pattern: `:p` one name, `:p+` one to three, `:p*` zero to three. */
function concretePath(pattern: string): fc.Arbitrary<string> {
  const parts = pattern.split('/').map((part) => {
    if (!part.startsWith(':')) return fc.constant([part]);
    if (part.endsWith('+')) return fc.array(names, { minLength: 1, maxLength: 3 });
    if (part.endsWith('*')) return fc.array(names, { minLength: 0, maxLength: 3 });
    return names.map((name) => [name]);
  });
  return fc.tuple(...parts).map((filled) => filled.flat().join('/'));
}

/** A glob that allows the path: a prefix of it (at least one character) and `*`, or one later segment as `+`. */
function allowingGlob(path: string): fc.Arbitrary<string> {
  const segments = path.split('/');
  const prefix = fc.integer({ min: 1, max: path.length }).map((cut) => `${path.slice(0, cut)}*`);
  if (segments.length < 2) return prefix;
  const plus = fc
    .integer({ min: 1, max: segments.length - 1 })
    .map((at) =>
      at === segments.length - 1
        ? [...segments.slice(0, at), '+'].join('/')
        : `${[...segments.slice(0, at), '+', ...segments.slice(at + 1, -1)].join('/')}/*`,
    );
  return fc.oneof(prefix, plus);
}

const everyCapability = '["create", "read", "update", "delete", "list", "patch", "sudo"]';

/** A sample of the spellings of a path, from both generators. */
function spellingsOf(path: string): fc.Arbitrary<string[]> {
  const all = [...new Set([...spellings(path), ...encodedSpellings(path)])];
  return fc.shuffledSubarray(all, {
    minLength: Math.min(SPELLINGS_PER_DRAW, all.length),
    maxLength: Math.min(SPELLINGS_PER_DRAW, all.length),
  });
}

/** A body for a write: every field of the row, so a bypassing request would decode and run. */
const bodyFor = (fields: string[]) =>
  Object.fromEntries(fields.map((field) => [field, field === 'data' ? { password: 'overwritten' } : 'x']));

// ---- the secrets service --------------------------------------------------------------------------------------

interface SecretsRow {
  name: string;
  fields: string[];
  /** How the row stores its last capture (`canonicalCaptures`: policy names, jwt role names), when it folds it. */
  fold?: (value: string) => string;
}

/**
 * Spellings of the last segment that a row folding it (`fold`) stores as the same item: `ADMIN`, `Admin`, ` admin`
 * (percent-encoded). Kept only where the row's own fold says they are the same name, so a row that does not fold
 * (kv: `Admin` is another secret) is never held to them.
 */
function foldedSpellings(path: string, fold: ((value: string) => string) | undefined): string[] {
  if (!fold) return [];
  const at = path.lastIndexOf('/');
  const before = path.slice(0, at);
  const last = path.slice(at + 1);
  const candidates = [
    last.toUpperCase(),
    `${last.charAt(0).toUpperCase()}${last.slice(1)}`,
    ` ${last}`,
    `${last} `,
    `\t${last.toUpperCase()}`,
  ];
  return [...new Set(candidates)]
    .filter((candidate) => candidate !== last && fold(candidate) === fold(last))
    .map((candidate) => `/v1/${before}/${encodeURIComponent(candidate)}`);
}

/**
 * Where each backend type is mounted here: where the test stage mounts it (`mountPathOf`, derived from the family
 * list), but kv's version 1 row on a mount of its own at `kv/` (kv's version 2 rows stay at `secret/`).
 */
function secretsRows(): { rows: SecretsRow[]; skipped: string[] } {
  const rows: SecretsRow[] = [];
  const skipped: string[] = [];
  for (const backend of backendsOf(allSecretsFamilies)) {
    for (const spec of backend.paths) {
      const mount = backend.type === 'kv' && spec.pattern === ':path*' ? 'kv' : mountPathOf(backend);
      const name = spec.pattern ? `${mount}/${spec.pattern}` : mount;
      if (spec.unauthenticated) {
        skipped.push(name);
        continue;
      }
      const lastCapture = /:(\w+)$/.exec(spec.pattern)?.[1];
      const fold = lastCapture ? spec.canonicalCaptures?.[lastCapture] : undefined;
      const fields = Object.keys((spec.fields as { shape?: Record<string, unknown> }).shape ?? {});
      rows.push({ name, fields, ...(fold ? { fold } : {}) });
    }
  }
  return { rows, skipped };
}

describe('property: a narrow token denied one concrete path inside an allowed glob never reaches it by any spelling, on any secrets path row, node app and Lambda adapter', () => {
  const { rows, skipped } = secretsRows();
  let h: SecretsHarness;
  const adapters: Record<string, Send> = {};
  let draws = 0;
  let requests = 0;
  let started = 0;

  const root = (method: string, url: string, body?: unknown) =>
    h.call(method, url, {
      token: h.rootToken,
      ...(body === undefined ? {} : { body }),
    });

  beforeAll(async () => {
    started = performance.now();
    h = await startSecrets();
    // Every backend mounted where the rows above say: kv version 2 at secret/, version 1 at kv/, every other backend
    // where `mountsToEnable` puts it (each engine at its type's name, the login methods under auth/).
    expect((await root('DELETE', '/v1/sys/mounts/secret')).status).toBe(204);
    expect(
      (
        await root('POST', '/v1/sys/mounts/secret', {
          type: 'kv',
          options: { version: '2' },
        })
      ).status,
    ).toBe(204);
    expect((await root('POST', '/v1/sys/mounts/kv', { type: 'kv' })).status).toBe(204);
    for (const { table, path, type } of mountsToEnable(backendsOf(allSecretsFamilies)).filter(
      (mount) => mount.type !== 'kv',
    ))
      expect((await root('POST', `/v1/sys/${table === 'auth' ? 'auth' : 'mounts'}/${path}`, { type })).status).toBe(
        204,
      );
    // Items the generated names often reach: a bypassing write or delete would change them.
    expect((await root('PUT', '/v1/kv/admin', { password: 'admin-secret' })).status).toBe(204);
    expect((await root('PUT', '/v1/kv/app/admin', { password: 'admin-secret' })).status).toBe(204);
    expect(
      (
        await root('PUT', '/v1/secret/data/admin', {
          data: { password: 'admin-secret' },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await root('PUT', '/v1/secret/data/app/admin', {
          data: { password: 'admin-secret' },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await root('PUT', '/v1/sys/policies/acl/admin', {
          policy: 'path "kv/*" { capabilities = ["read"] }',
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await root('PUT', '/v1/auth/token/roles/admin', {
          allowed_policies: ['admin'],
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await root('PUT', '/v1/auth/jwt/role/admin', {
          role_type: 'jwt',
          user_claim: 'sub',
          bound_audiences: ['x'],
          token_policies: ['admin'],
        })
      ).status,
    ).toBe(204);

    adapters.app = async (method, url, token, body) => {
      const out = await h.call(method, url, {
        token,
        ...(body === undefined ? {} : { body }),
      });
      return { status: out.status, text: JSON.stringify(out.body ?? '') };
    };
    adapters.lambda = viaLambda(secretsLambda(secretsFront({ core: async () => h.core }), []), 'x-vault-token', {
      userAgent: 'path-property',
    });
  }, 60_000);

  afterAll(async () => {
    console.log(
      `path-property secrets: ${rows.length} rows (${skipped.length} unauthenticated rows skipped: ${skipped.join(', ')}), ${draws} draws, ${requests} requests, ${Math.round(performance.now() - started)} ms`,
    );
    await h?.close();
  });

  it('covers every authenticated row of every backend', () => {
    expect(rows.length).toBeGreaterThan(90);
    expect(skipped.length).toBeLessThan(15);
  });

  it.each(rows.map((row, index) => [row.name, row, index] as const))(
    '%s',
    async (_name, row, index) => {
      const draw = concretePath(row.name).chain((path) =>
        fc.record({
          path: fc.constant(path),
          glob: allowingGlob(path),
          spelt: spellingsOf(path).map((some) => [...some, ...foldedSpellings(path, row.fold)]),
          ordinal: fc.nat(),
        }),
      );
      await fc.assert(
        fc.asyncProperty(draw, async ({ path, glob, spelt, ordinal }) => {
          draws++;
          const policyName = `prop-${index}-${ordinal}`;
          const policy = `path "${glob}" { capabilities = ${everyCapability} }\npath "${path}" { capabilities = ["deny"] }`;
          expect(
            (
              await root('PUT', `/v1/sys/policies/acl/${policyName}`, {
                policy,
              })
            ).status,
          ).toBe(204);
          const created = await root('POST', '/v1/auth/token/create', {
            policies: [policyName],
            no_default_policy: true,
          });
          expect(created.status).toBe(200);
          const token: string = created.body.auth.client_token;
          const body = bodyFor(row.fields);
          const send = async (adapter: string, operation: string, url: string) => {
            requests++;
            const [method, target] = asSent(operation, url);
            const sendBody = method === 'PUT' || method === 'POST' || method === 'PATCH' ? body : undefined;
            return (adapters[adapter] as Send)(method, target, token, sendBody);
          };

          const before = await scan(h.client, h.tableName);
          // The baseline: the canonical path is denied for every operation (405 where the row has no such operation).
          const baseline: Record<string, number> = {};
          for (const operation of operations)
            baseline[operation] = (await send('app', operation, `/v1/${path}`)).status;
          expect({
            path,
            glob,
            baseline: Object.values(baseline).every((status) => status === 403 || status === 405),
          }).toEqual({ path, glob, baseline: true });
          expect({
            path,
            glob,
            someDenied: Object.values(baseline).includes(403),
          }).toEqual({ path, glob, someDenied: true });

          for (const url of spelt) {
            for (const adapter of ['app', 'lambda']) {
              for (const operation of operations) {
                const out = await send(adapter, operation, url);
                // Never a 2xx on what the canonical path denies, and never a 500: 400 (not canonical), 403, 404, 405.
                expect({
                  adapter,
                  operation,
                  url,
                  glob,
                  status: is2xx(out.status) || out.status >= 500 ? out.status : 'refused',
                }).toEqual({
                  adapter,
                  operation,
                  url,
                  glob,
                  status: 'refused',
                });
              }
            }
          }
          expect({
            path,
            glob,
            changed: changed(before, await scan(h.client, h.tableName)),
          }).toEqual({ path, glob, changed: [] });
          // The token still works where its glob allows it (the denial is the deny rule's, not a broken token).
          const capabilities = (await root('POST', '/v1/sys/capabilities', { token, paths: [path] })).body;
          expect((capabilities.data ?? capabilities)[path]).toEqual(['deny']);
        }),
        { seed: SEED + index, numRuns: RUNS_PER_ROW },
      );
    },
    60_000,
  );
});

// ---- the scheduler service ------------------------------------------------------------------------------------

/** A random Nomad ACL policy: a few rule blocks, none of which is management (Nomad policies cannot grant it). */
const nomadRules = fc
  .subarray(
    [
      fc.constantFrom('read', 'write', 'deny').map((policy) => `namespace "default" { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `namespace "*" { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `node { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `agent { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `operator { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `quota { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `plugin { policy = "${policy}" }`),
      fc.constantFrom('read', 'write', 'deny').map((policy) => `host_volume "*" { policy = "${policy}" }`),
    ],
    { minLength: 1 },
  )
  .chain((blocks) => fc.tuple(...blocks))
  .map((blocks) => blocks.join('\n'));

describe('property: on every scheduler route row, a narrow client token never gets a 2xx on a management row under any spelling, and no non-canonical spelling answers 2xx even for management (app and the Lambda adapter)', () => {
  const rows = schedulerRoutes.filter((row) => row.access !== 'anyone' && row.path !== '/v1/acl/token/self');
  const skipped = schedulerRoutes
    .filter((row) => !rows.includes(row))
    .map((row) => `${row.methods.join('|')} ${row.path}`);
  let s: SchedulerHarness;
  let management: string;
  const adapters: Record<string, Send> = {};
  let draws = 0;
  let requests = 0;
  let started = 0;
  const mgmt = (method: string, url: string, body?: unknown) =>
    s.call(method, url, {
      token: management,
      ...(body === undefined ? {} : { body }),
    });

  beforeAll(async () => {
    started = performance.now();
    s = await startScheduler();
    management = await s.bootstrap();
    // Items the generated names reach: a policy, a role, an auth method and a binding rule named or numbered "admin".
    expect(
      (
        await mgmt('PUT', '/v1/acl/policy/admin', {
          Rules: 'node { policy = "read" }',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/role', {
          Name: 'admin',
          Policies: [{ Name: 'admin' }],
        })
      ).status,
    ).toBe(200);
    const front = schedulerFront({
      core: async () => s.core,
      heartbeatMs: 200,
      eventPollMs: 50,
    });
    adapters.app = async (method, url, token, body) => {
      const out = await s.call(method, url, {
        token,
        ...(body === undefined ? {} : { body }),
      });
      return { status: out.status, text: out.text };
    };
    adapters.lambda = viaLambda(lambdaHandler(front, []), 'x-nomad-token', {
      userAgent: 'path-property',
      host: 'api.example',
    });
  }, 60_000);

  afterAll(async () => {
    console.log(
      `path-property scheduler: ${rows.length} rows (skipped: ${skipped.join(', ')}), ${draws} draws, ${requests} requests, ${Math.round(performance.now() - started)} ms`,
    );
    await s?.close();
  });

  it('covers every row that looks at a token', () => {
    expect(rows.length).toBeGreaterThan(20);
    expect(rows.filter((row) => row.access === 'management').length).toBeGreaterThan(15);
  });

  it.each(rows.map((row, index) => [`${row.methods.join('|')} ${row.path} (${row.access})`, row, index] as const))(
    '%s',
    async (_name, row, index) => {
      const path = row.path.replace(/^\/v1\//, '');
      const draw = concretePath(path).chain((concrete) =>
        fc.record({
          concrete: fc.constant(concrete),
          rules: nomadRules,
          spelt: spellingsOf(concrete),
          ordinal: fc.nat(),
        }),
      );
      await fc.assert(
        fc.asyncProperty(draw, async ({ concrete, rules, spelt, ordinal }) => {
          draws++;
          const policyName = `prop-${index}-${ordinal}`;
          expect(
            (
              await mgmt('PUT', `/v1/acl/policy/${policyName}`, {
                Rules: rules,
              })
            ).status,
          ).toBe(200);
          const created = await mgmt('POST', '/v1/acl/token', {
            Name: policyName,
            Type: 'client',
            Policies: [policyName],
          });
          expect(created.status).toBe(200);
          const narrow: string = created.body.SecretID;
          const body = {
            Name: 'admin',
            Rules: 'namespace "*" { policy = "write" }',
            Type: 'management',
            Policies: ['admin'],
            Selector: 'true',
            BindType: 'management',
          };
          const send = async (adapter: string, operation: string, url: string, token: string) => {
            requests++;
            const [method, target] = asSent(operation, url);
            return (adapters[adapter] as Send)(
              method,
              target,
              token,
              method === 'PUT' || method === 'POST' || method === 'PATCH' ? body : undefined,
            );
          };

          const before = await scan(s.client, s.tableName);
          if (row.access === 'management') {
            // The baseline: the narrow token is refused the canonical path on every method the row serves.
            for (const method of row.methods) {
              const status = (await send('app', method, `/v1/${concrete}`, narrow)).status;
              expect({ method, concrete, rules, status }).toEqual({
                method,
                concrete,
                rules,
                status: 403,
              });
            }
          }
          for (const url of spelt) {
            for (const adapter of ['app', 'lambda']) {
              for (const operation of operations) {
                // Two kinds of spelling ARE the canonical path: one whose escapes are only letters (`%61dmin` is
                // `admin`), and on the app (a web Request, whose URL parser already resolved them) the `.`/`..` ones.
                // Those may answer 2xx where the canonical path does; they are held only to the management rows' rule.
                // (a literal backslash too: the WHATWG parser takes it for a slash in an http: URL).
                const resolvedByParser =
                  adapter === 'app' &&
                  (/\/(\.|%2e|zz\/(\.\.|%2e%2e))(\/|$)/i.test(url) || url.includes('\\')) &&
                  !/\/\/|%2F|%5C|\/$/i.test(url.replaceAll('\\', '/'));
                // And a `%2F` that lands inside a job ID (a row's `slashParams`) spells the canonical path of another
                // job, one whose ID holds a `/` (test/attacks/job-id-slashes.test.ts holds those to their own rules).
                const canonical = onlyEncodesLetters(url) || resolvedByParser || namesASlashedId(operation, url);
                for (const [who, token] of [
                  ['narrow', narrow],
                  ['management', management],
                ] as const) {
                  if (canonical && !(who === 'narrow' && row.access === 'management')) continue;
                  const out = await send(adapter, operation, url, token);
                  expect({
                    who,
                    adapter,
                    operation,
                    url,
                    rules,
                    status: is2xx(out.status) || out.status >= 500 ? out.status : 'refused',
                  }).toEqual({
                    who,
                    adapter,
                    operation,
                    url,
                    rules,
                    status: 'refused',
                  });
                }
              }
            }
          }
          expect({
            concrete,
            changed: changed(before, await scan(s.client, s.tableName)),
          }).toEqual({ concrete, changed: [] });
        }),
        { seed: SEED + index, numRuns: RUNS_PER_ROW },
      );
    },
    60_000,
  );
});
