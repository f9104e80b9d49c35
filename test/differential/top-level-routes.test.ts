/**
 * Vault's top-level data (`injectDataIntoTopRoutes` in Vault's `http/handler.go`) against Go's own `net/http.ServeMux`
 * (test/differential/top-level-routes/serve-mux-oracle.go, built with Debian's Go): every request below that answers
 * with data is asked of the oracle, which says whether Vault's injecting handler or its plain one would serve it.
 * Served by the injecting one, the answer has every field of `data` at the top level too, with the same value (the
 * envelope's own fields winning a clash); served by the plain one, none of them. The requests cover every path row of
 * the system backend that answers with data, so a row added there without a request here fails the test.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { injectsDataAtTopLevel } from '../../packages/core/src/secrets/framework/top-level-data.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

const oracleSource = fileURLToPath(new URL('./top-level-routes/serve-mux-oracle.go', import.meta.url));

interface Verdict {
  pattern: string;
  injected: boolean;
}

interface Probe {
  /** The system backend row it exercises (undefined for requests outside `sys/`). */
  row?: string;
  method: string;
  path: string;
  body?: unknown;
}

const envelopeFields = new Set([
  'request_id',
  'lease_id',
  'renewable',
  'lease_duration',
  'data',
  'wrap_info',
  'warnings',
  'auth',
  'mount_type',
]);

let h: SecretsService;
let oracle: string;
let accessor: string;
let childToken: string;
let leaseId: string;

beforeAll(async () => {
  oracle = buildGoHarness(oracleSource);
  h = await startSecretsInMemory();
  const root = { token: h.rootToken };
  await h.call('POST', '/v1/sys/auth/jwt', { ...root, body: { type: 'jwt' } });
  await h.call('POST', '/v1/sys/mounts/kv2', { ...root, body: { type: 'kv', options: { version: '2' } } });
  await h.call('POST', '/v1/kv2/data/app', { ...root, body: { data: { a: '1' } } });
  await h.call('POST', '/v1/secret/app', { ...root, body: { password: 'p4ssw0rd!' } });
  await h.call('PUT', '/v1/secret/leased', { ...root, body: { v: 'x', ttl: '1h' } });
  leaseId = (await h.call('GET', '/v1/secret/leased', root)).body.lease_id;
  await h.call('PUT', '/v1/sys/policies/acl/reader', {
    ...root,
    body: { policy: 'path "secret/*" { capabilities = ["read"] }' },
  });
  await h.call('PUT', '/v1/sys/policies/password/short', {
    ...root,
    body: { policy: 'length = 12\nrule "charset" { charset = "abcdefgh" }' },
  });
  const child = await h.call('POST', '/v1/auth/token/create', { ...root, body: { policies: ['reader'], ttl: '1h' } });
  childToken = child.body.auth.client_token;
  accessor = child.body.auth.accessor;
}, 300_000);

afterAll(() => h?.close());

const probes = (): Probe[] => [
  // On Vault's list.
  { row: 'audit', method: 'GET', path: '/v1/sys/audit' },
  { row: 'audit-hash/:path+', method: 'POST', path: '/v1/sys/audit-hash/harness', body: { input: 'x' } },
  { row: 'auth', method: 'GET', path: '/v1/sys/auth' },
  { row: 'auth/:path+', method: 'GET', path: '/v1/sys/auth/jwt' },
  { row: 'auth/:path+/tune', method: 'GET', path: '/v1/sys/auth/jwt/tune' },
  { row: 'auth/:path+/tune', method: 'GET', path: '/v1/sys/auth/token/tune' },
  {
    row: 'capabilities',
    method: 'POST',
    path: '/v1/sys/capabilities',
    body: { token: childToken, paths: ['secret/a'] },
  },
  {
    row: 'capabilities-accessor',
    method: 'POST',
    path: '/v1/sys/capabilities-accessor',
    body: { accessor, paths: ['secret/a', 'kv2/data/a'] },
  },
  { row: 'capabilities-self', method: 'POST', path: '/v1/sys/capabilities-self', body: { paths: ['secret/a'] } },
  { row: 'mounts', method: 'GET', path: '/v1/sys/mounts' },
  { row: 'mounts/:path+', method: 'GET', path: '/v1/sys/mounts/kv2' },
  { row: 'mounts/:path+/tune', method: 'GET', path: '/v1/sys/mounts/kv2/tune' },
  { row: 'mounts/:path+/tune', method: 'GET', path: '/v1/sys/mounts/secret/tune' },
  { row: 'policy', method: 'GET', path: '/v1/sys/policy' },
  { row: 'policy', method: 'LIST', path: '/v1/sys/policy' },
  { row: 'policy/:name', method: 'GET', path: '/v1/sys/policy/reader' },
  // Off the list.
  { row: 'policies/acl', method: 'LIST', path: '/v1/sys/policies/acl' },
  { row: 'policies/acl/:name', method: 'GET', path: '/v1/sys/policies/acl/reader' },
  { row: 'policies/password', method: 'LIST', path: '/v1/sys/policies/password' },
  { row: 'policies/password/:name', method: 'GET', path: '/v1/sys/policies/password/short' },
  { row: 'policies/password/:name/generate', method: 'GET', path: '/v1/sys/policies/password/short/generate' },
  { row: 'leases/lookup/:prefix*', method: 'LIST', path: '/v1/sys/leases/lookup/secret/leased/' },
  { row: 'leases/lookup', method: 'PUT', path: '/v1/sys/leases/lookup', body: { lease_id: leaseId } },
  { row: 'internal/ui/mounts', method: 'GET', path: '/v1/sys/internal/ui/mounts' },
  { row: 'internal/ui/mounts/:path+', method: 'GET', path: '/v1/sys/internal/ui/mounts/kv2' },
  { method: 'GET', path: '/v1/secret/app' },
  { method: 'GET', path: '/v1/kv2/data/app' },
  { method: 'GET', path: '/v1/kv2/metadata/app' },
  { method: 'LIST', path: '/v1/kv2/metadata/' },
  { method: 'GET', path: '/v1/auth/token/lookup-self' },
];

/**
 * Rows that never answer with data to inject: writes answered 204 (enabling an audit device, revoking leases), a
 * renewal (the lease's envelope, no data), and Vault's unwrapped answers (health, init, seal status, leader, the
 * OpenAPI document), which have no envelope at all.
 */
const rowsWithoutData = new Set([
  'health',
  'init',
  'seal-status',
  'leader',
  'internal/specs/openapi',
  'audit/:path+',
  ...['leases/renew', 'leases/renew/:url_lease_id+', 'renew', 'renew/:url_lease_id+'],
  ...['leases/revoke', 'leases/revoke/:url_lease_id+', 'revoke', 'revoke/:url_lease_id+'],
  ...[
    'leases/revoke-prefix/:prefix+',
    'revoke-prefix/:prefix+',
    'leases/revoke-force/:prefix+',
    'revoke-force/:prefix+',
  ],
]);

async function answered(probe: Probe) {
  const result = await h.call(probe.method, probe.path, {
    token: probe.path.includes('capabilities-self') ? childToken : h.rootToken,
    ...(probe.body === undefined ? {} : { body: probe.body }),
  });
  return result;
}

describe("Vault's top-level data, route by route, against Go's ServeMux", () => {
  it('covers every system path row that answers with data', () => {
    const rows = (h.core.backends.get('system')?.paths ?? []).map((spec) => spec.pattern);
    const probed = new Set(probes().flatMap((probe) => (probe.row ? [probe.row] : [])));
    const missing = rows.filter((row) => !probed.has(row) && !rowsWithoutData.has(row));
    expect(missing).toEqual([]);
  });

  it('injects exactly where Vault does, every data field with its value', async () => {
    const all = probes();
    const verdicts = await runGoHarness<string, Verdict>(
      oracle,
      all.map((probe) => probe.path),
    );
    let injectedCount = 0;
    for (const [index, probe] of all.entries()) {
      const verdict = verdicts[index] as Verdict;
      const { status, body } = await answered(probe);
      const label = `${probe.method} ${probe.path} (Go's mux: ${verdict.pattern})`;
      expect(status, label).toBe(200);
      const data = body.data as Record<string, unknown>;
      expect(Object.keys(data ?? {}).length, `${label} answers with data`).toBeGreaterThan(0);
      expect(injectsDataAtTopLevel(probe.path.slice('/v1/'.length).replace(/\/$/, '')), label).toBe(verdict.injected);
      const fields = Object.keys(data).filter((field) => !envelopeFields.has(field));
      if (verdict.injected) {
        injectedCount++;
        for (const field of fields) expect(body[field], `${label}: ${field}`).toEqual(data[field]);
      } else {
        for (const field of fields) expect(Object.hasOwn(body, field), `${label}: ${field}`).toBe(false);
      }
      expect(body.request_id, label).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(injectedCount).toBeGreaterThanOrEqual(15);
  });

  it('keeps the whole envelope beside the injected fields', async () => {
    const listed = await h.call('GET', '/v1/sys/mounts', { token: h.rootToken });
    expect(listed.body['kv2/']).toEqual(listed.body.data['kv2/']);
    expect(listed.body).toMatchObject({ lease_id: '', renewable: false, lease_duration: 0, wrap_info: null });
    expect(listed.body.mount_type).toBe('system');
  });
});
