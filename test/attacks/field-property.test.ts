import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { Backend, Handler, Operation, PathSpec } from '../../packages/core/src/secrets/framework/backend.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * Issue 37 §2, as a property over EVERY path row of the secrets service: the fields a handler acts on are exactly the
 * fields the policy's parameter constraints and the audit entry saw, for every operation. As Vault's `http/logical.go`:
 * a PUT, POST or PATCH takes its fields from the JSON body alone, a GET from the query alone; a LIST or DELETE, whose
 * parameters Vault's policies never check, takes none.
 *
 * The real backends are served, each handler wrapped only to record what it was given (its `data` and `body`) and
 * then run as is; a `log_raw` file audit device shows what the audit request entry recorded. For each row, each
 * operation it has, a concrete path (each capture `app`) and a random choice of the row's fields and values:
 *
 * - misplaced: a narrow token whose policy allows the path with every capability but denies every field of the row
 *   (`denied_parameters`) sends those fields where the operation does not read them (a write's or patch's query
 *   string; a list's query; a delete's query and body). Whatever it answers, the handler is called only if a control request without the fields
 *   also calls it, and then with the very same data and body; the audit entry records no fields.
 * - placed (reads, writes, patches): the same token sends them where the operation reads them. The policy sees them: 403 (or 400 when a value
 *   is not the field's type, refused before any handler), the handler is never called, and the audit entry records
 *   exactly the fields sent.
 * - both places (a root token of its own, or no token on a login row): different values in each place. The audit entry records exactly
 *   the fields of the place the operation reads, and if the handler runs, every field whose value differs from a
 *   control request's is one of them.
 */

const SEED = Number(process.env.FIELD_PROPERTY_SEED ?? 20261129);
const RUNS_PER_ROW = Number(process.env.FIELD_PROPERTY_RUNS ?? 1);
console.log(`field-property: seed ${SEED} (FIELD_PROPERTY_SEED), ${RUNS_PER_ROW} draw(s) per row and operation`);

interface Call {
  data: string;
  body: string;
}
/** What each handler was given, in order, for the request in flight. */
let calls: Call[] = [];

/** The backend with every handler recording what it was given before it runs. */
function recording(backend: Backend): Backend {
  const record =
    (handler: Handler<unknown>): Handler<unknown> =>
    (request) => {
      calls.push({ data: JSON.stringify(request.data), body: JSON.stringify(request.body) });
      return handler(request);
    };
  return {
    ...backend,
    paths: backend.paths.map(
      (spec): PathSpec => ({
        ...spec,
        operations: Object.fromEntries(
          Object.entries(spec.operations).map(([operation, handler]) => [
            operation,
            record(handler as Handler<unknown>),
          ]),
        ),
      }),
    ),
  };
}

const mountOf: Record<string, string> = {
  system: 'sys',
  token: 'auth/token',
  identity: 'identity',
  jwt: 'auth/jwt',
  oidc: 'auth/oidc',
  mesh: 'mesh',
  ldap: 'ldap',
  cloud: 'cloud',
};

type Method = 'GET' | 'LIST' | 'PUT' | 'PATCH' | 'DELETE';
interface Row {
  name: string;
  url: string;
  method: Method;
  fields: string[];
  unauthenticated: boolean;
}

/** Every row × every method its operations answer to, with a concrete path and its non-capture fields. */
function rows(): Row[] {
  const out: Row[] = [];
  for (const backend of backendsOf(allSecretsFamilies)) {
    for (const spec of backend.paths) {
      const mount = backend.type === 'kv' ? (spec.pattern === ':path*' ? 'kv' : 'secret') : mountOf[backend.type];
      if (!mount) throw new Error(`no mount for backend type ${backend.type}: add it here`);
      const captures = [...spec.pattern.matchAll(/:(\w+)/g)].map((match) => match[1] as string);
      const concrete = spec.pattern.replace(/:\w+[+*]?/g, 'app');
      const url = `/v1/${concrete ? `${mount}/${concrete}` : mount}`;
      const declared = Object.keys((spec.fields as { shape?: Record<string, unknown> }).shape ?? {});
      // Free-form rows (kv version 1) declare no field: a secret's key stands for them.
      const fields = declared.filter((field) => !captures.includes(field));
      const ops = Object.keys(spec.operations) as Operation[];
      const methods = new Set<Method>();
      for (const op of ops) {
        if (op === 'read') methods.add('GET');
        if (op === 'list') methods.add('LIST');
        if (op === 'create' || op === 'update') methods.add('PUT');
        if (op === 'patch') methods.add('PATCH');
        if (op === 'delete') methods.add('DELETE');
      }
      for (const method of methods)
        out.push({
          name: `${method} ${mount}/${spec.pattern}`,
          url,
          method,
          fields: fields.length > 0 ? fields : ['password'],
          unauthenticated: spec.unauthenticated === true,
        });
    }
  }
  return out;
}

/** Where an operation takes its fields from. */
const readsFrom = (method: Method): 'body' | 'query' | 'nothing' =>
  method === 'PUT' || method === 'PATCH' ? 'body' : method === 'GET' ? 'query' : 'nothing';
const everyCapability = '["create", "read", "update", "delete", "list", "patch", "sudo"]';
/** Values a field might take from a query string or a body: a string, as a query gives every value. */
const values = fc.constantFrom('x', '1', 'true', '1h', 'a,b', 'default');

describe('property: the fields a handler acts on are exactly the fields the policy and the audit entry saw, on every secrets path row', () => {
  const all = rows();
  let h: SecretsService;
  let rawAudit: string;
  let seenLines = 0;
  let policyCount = 0;
  const tally = { requests: 0, handled: 0, denied: 0, misplacedHandled: 0 };

  beforeAll(async () => {
    h = await startSecretsInMemory({ backends: backendsOf(allSecretsFamilies).map(recording) });
    const asRoot = (method: string, url: string, body?: unknown) => h.call(method, url, { token: h.rootToken, body });
    // Every backend mounted where the rows say: kv version 2 at secret/, version 1 at kv/, each engine at its type.
    expect((await asRoot('DELETE', '/v1/sys/mounts/secret')).status).toBe(204);
    expect((await asRoot('POST', '/v1/sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await asRoot('POST', '/v1/sys/mounts/kv', { type: 'kv' })).status).toBe(204);
    for (const type of ['ldap', 'cloud', 'mesh'])
      expect((await asRoot('POST', `/v1/sys/mounts/${type}`, { type })).status).toBe(204);
    for (const type of ['jwt', 'oidc'])
      expect((await asRoot('POST', `/v1/sys/auth/${type}`, { type })).status).toBe(204);
    expect((await asRoot('PUT', '/v1/secret/data/app', { data: { password: 'p' } })).status).toBe(200);
    expect((await asRoot('PUT', '/v1/kv/app', { password: 'p' })).status).toBe(204);
    rawAudit = path.join(mkdtempSync(path.join(tmpdir(), 'field-property-')), 'raw.log');
    expect(
      (await asRoot('PUT', '/v1/sys/audit/raw', { type: 'file', options: { file_path: rawAudit, log_raw: 'true' } }))
        .status,
    ).toBe(204);
  }, 60_000);

  afterAll(async () => {
    console.log(
      `field-property: ${all.length} row operations, ${tally.requests} requests, ${tally.handled} reached their handler, ${tally.denied} denied by a parameter constraint, ${tally.misplacedHandled} misplaced-field requests reached their handler`,
    );
    await h?.close();
  });

  const auditLines = () => readFileSync(rawAudit, 'utf8').split('\n').filter(Boolean);
  /** The request entry the raw audit device wrote since `seenLines`. */
  const lastRequestEntry = (): { request: { data: Record<string, unknown> | null } } => {
    const fresh = auditLines().slice(seenLines);
    const entry = fresh.map((line) => JSON.parse(line)).find((parsed) => parsed.type === 'request');
    if (!entry) throw new Error('no audit request entry for the request');
    return entry;
  };

  /** Sends one request; what its handlers were given and what the audit request entry recorded. */
  const send = async (
    row: Row,
    token: string | undefined,
    query: Record<string, string>,
    body: Record<string, string> | undefined,
  ) => {
    tally.requests++;
    const search = new URLSearchParams(query);
    if (row.method === 'LIST') search.set('list', 'true');
    const url = search.size > 0 ? `${row.url}?${search}` : row.url;
    calls = [];
    seenLines = auditLines().length;
    const reply = await h.call(row.method === 'LIST' ? 'GET' : row.method, url, {
      ...(token ? { token } : {}),
      ...(body ? { body } : {}),
      headers: {
        'Content-Type': row.method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      },
    });
    const handled = calls;
    calls = [];
    if (handled.length > 0) tally.handled++;
    return { status: reply.status, handled, audited: lastRequestEntry().request.data ?? {} };
  };

  /** A token allowed everything on the row's path but every one of `denied` as a parameter. */
  const narrowToken = async (row: Row, denied: string[]) => {
    const name = `field-${policyCount++}`;
    const constraints = denied.map((field) => `"${field}" = []`).join(', ');
    const policy = `path "${row.url.slice('/v1/'.length)}" { capabilities = ${everyCapability}\n denied_parameters = { ${constraints} } }`;
    expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, { token: h.rootToken, body: { policy } })).status).toBe(
      204,
    );
    const created = await h.call('POST', '/v1/auth/token/create', {
      token: h.rootToken,
      body: { policies: [name], no_default_policy: true },
    });
    expect(created.status).toBe(200);
    return created.body.auth.client_token as string;
  };

  /** A root token of the request's own (`auth/token/revoke-self` revokes the token it is sent with). */
  const rootToken = async () => {
    const created = await h.call('POST', '/v1/auth/token/create', {
      token: h.rootToken,
      body: { policies: ['root'] },
    });
    expect(created.status).toBe(200);
    return created.body.auth.client_token as string;
  };

  it('covers every row of every backend', () => {
    expect(all.length).toBeGreaterThan(150);
  });

  it.each(all.map((row) => [row.name, row] as const))(
    '%s',
    async (_name, row) => {
      const draw = fc.record({
        chosen: fc.subarray(row.fields, { minLength: 1 }),
        valueFor: fc.func(values),
        other: values,
      });
      await fc.assert(
        fc.asyncProperty(draw, async ({ chosen, valueFor, other }) => {
          const fields = Object.fromEntries(chosen.map((field) => [field, valueFor(field)]));
          const elsewhere = Object.fromEntries(chosen.map((field) => [field, `${fields[field]}-${other}`]));
          const from = readsFrom(row.method);
          const inQuery = (sent: Record<string, string>) => (from === 'query' ? sent : {});
          const inBody = (sent: Record<string, string>) => (from === 'body' ? sent : undefined);
          const misplacedQuery = (sent: Record<string, string>) => (from === 'query' ? {} : sent);
          // A GET cannot carry a body; the adapters drop a DELETE's (read-has-no-body.test.ts).
          const misplacedBody = (sent: Record<string, string>) => (row.method === 'DELETE' ? sent : undefined);
          const placedFields = from === 'nothing' ? {} : fields;

          if (!row.unauthenticated) {
            // Misplaced: fields the operation does not read never reach the handler, nor the audit entry.
            const control = await send(row, await narrowToken(row, chosen), {}, undefined);
            const misplaced = await send(
              row,
              await narrowToken(row, chosen),
              misplacedQuery(fields),
              misplacedBody(fields),
            );
            expect(misplaced.audited).toEqual({});
            if (misplaced.handled.length > 0) {
              tally.misplacedHandled++;
              expect(misplaced.handled).toEqual(control.handled);
            }

            // Placed: the policy sees every field the operation reads.
            if (from !== 'nothing') {
              const placed = await send(row, await narrowToken(row, chosen), inQuery(fields), inBody(fields));
              expect(placed.handled).toEqual([]);
              expect([400, 403]).toContain(placed.status);
              if (placed.status === 403) tally.denied++;
              expect(placed.audited).toEqual(fields);
            }
          }

          // Both places at once, without constraints: the audit entry and the handler see the reading place's only.
          const token = async () => (row.unauthenticated ? undefined : await rootToken());
          const control = await send(row, await token(), {}, undefined);
          const both = await send(
            row,
            await token(),
            { ...misplacedQuery(elsewhere), ...inQuery(fields) },
            from === 'body' ? fields : misplacedBody(elsewhere),
          );
          expect(both.audited).toEqual(placedFields);
          const [given] = both.handled;
          const [controlGiven] = control.handled;
          if (given && controlGiven) {
            const data = JSON.parse(given.data) as Record<string, unknown>;
            const controlData = JSON.parse(controlGiven.data) as Record<string, unknown>;
            const changed = Object.keys({ ...data, ...controlData }).filter(
              (key) => JSON.stringify(data[key]) !== JSON.stringify(controlData[key]),
            );
            for (const key of changed) expect(Object.keys(placedFields)).toContain(key);
            for (const value of Object.values(elsewhere)) expect(given.data + given.body).not.toContain(value);
          }
        }),
        { seed: SEED, numRuns: RUNS_PER_ROW },
      );
    },
    60_000,
  );

  it('reached handlers and policy denials in numbers that make the property mean something', () => {
    expect(tally.handled).toBeGreaterThan(100);
    expect(tally.denied).toBeGreaterThan(50);
    expect(tally.misplacedHandled).toBeGreaterThan(20);
  });
});
