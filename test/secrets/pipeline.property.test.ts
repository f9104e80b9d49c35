import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { Logger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';
import { tokenStoreMount } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * No input reaches a 500: random methods, paths under every route family, bodies and headers, with and
 * without a valid token, through the same app a Lambda serves. A failure prints the request and the
 * server's own error line.
 */

const TIME_LIMIT_MS = 40_000;
const RUNS = Number(process.env.PIPELINE_PROPERTY_RUNS ?? 2500);

// ---- paths -------------------------------------------------------------------------------------------

const oddSegment = fc.oneof(
  fc.constantFrom(
    '',
    '.',
    '..',
    '%2F',
    '%2e%2e',
    '%00',
    '%zz',
    '%',
    '%E0%A4%A',
    '~',
    '*',
    '+',
    ':name',
    'a b',
    '?',
    '#',
    '&list=true',
  ),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.integer({ min: 1, max: 3000 }).map((length) => 'k'.repeat(length)),
);
const segment = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9_-]{1,12}$/) },
  { weight: 2, arbitrary: oddSegment.map((text) => (text.includes('%') ? text : encodeURIComponent(text))) },
  { weight: 1, arbitrary: oddSegment },
);
const segments = fc.array(segment, { maxLength: 5 }).map((parts) => parts.join('/'));

/**
 * Every route of every backend this build serves, from the backends' own path tables: a pattern's literals
 * are kept, its parameters filled with random segments. New engines are covered as soon as they are added.
 */
const backends = backendsOf(allSecretsFamilies);
const mountPathOf = (backend: Backend): string[] => {
  if (backend.type === 'system') return ['sys/'];
  if (backend.type === 'token') return ['auth/token/'];
  if (backend.type === 'kv') return ['secret/', 'deep/mount/'];
  return [backend.kind === 'auth' ? `auth/${backend.type}/` : `${backend.type}/`];
};
/** The methods that reach a handler of the row (so random bodies meet its validation and handler too). */
const methodsFor = (operations: string[]) =>
  operations.flatMap((operation) => {
    if (operation === 'read') return ['GET'];
    if (operation === 'list') return ['LIST', 'GET?list'];
    if (operation === 'delete') return ['DELETE'];
    return ['POST', 'PUT'];
  });
const routes = backends.flatMap((backend) =>
  mountPathOf(backend).flatMap((mountPath) =>
    backend.paths.map((spec) => ({
      mountPath,
      pattern: spec.pattern,
      methods: methodsFor(Object.keys(spec.operations)),
    })),
  ),
);
const filled = (pattern: string): fc.Arbitrary<string> =>
  fc
    .tuple(
      ...pattern
        .split('/')
        .filter((part) => part !== '')
        .map((part) => {
          const param = /^:\w+([+*]?)$/.exec(part);
          if (!param) return fc.constant(part);
          if (param[1] === '') return segment;
          return fc
            .array(segment, { minLength: param[1] === '+' ? 1 : 0, maxLength: 3 })
            .map((parts) => parts.join('/'));
        }),
    )
    .map((parts) => parts.filter((part) => part !== '').join('/'));
const routeUrl = (route: (typeof routes)[number]) =>
  fc
    .tuple(filled(route.pattern), fc.constantFrom('', '/'))
    .map(([rest, slash]) => `/v1/${route.mountPath}${rest}${rest ? slash : ''}`);
const knownRoute = fc.constantFrom(...routes).chain(routeUrl);
/** A route with a method it supports: `[method, path, query]`. */
const fittingRequest = fc
  .constantFrom(...routes.filter((route) => route.methods.length > 0))
  .chain((route) =>
    fc
      .tuple(fc.constantFrom(...route.methods), routeUrl(route))
      .map(([verb, url]) => (verb === 'GET?list' ? (['GET', url, '?list=true'] as const) : ([verb, url, ''] as const))),
  );
const urlPath = fc.oneof(
  { weight: 6, arbitrary: knownRoute },
  {
    weight: 1,
    arbitrary: fc.tuple(knownRoute, segments).map(([known, more]) => `${known.replace(/\/$/, '')}/${more}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(...new Set(routes.map((route) => route.mountPath)))
      .chain((mountPath) => segments.map((rest) => `/v1/${mountPath}${rest}`)),
  },
  { weight: 1, arbitrary: segments.map((rest) => `/v1/${rest}`) },
  { weight: 1, arbitrary: segments.map((rest) => `/${rest}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('/v1', '/v1/', '/', '//v1//sys//health', '/v1/sys/../secret/app/db', '/V1/sys/health'),
  },
);
const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '?list=true',
      '?list=false',
      '?list=1',
      '?list=true&list=false',
      '?list',
      '?list=true&path=x',
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })), { maxLength: 3 })
      .map(
        (pairs) =>
          `?${pairs.map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join('&')}`,
      ),
  },
);

// ---- methods -----------------------------------------------------------------------------------------

const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'LIST') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('PATCH', 'HEAD', 'OPTIONS', 'list', 'get', 'Post', 'PROPFIND', 'MKCOL', 'X'),
  },
  {
    weight: 1,
    arbitrary: fc
      .stringMatching(/^[A-Za-z]{1,10}$/)
      .filter((name) => !['CONNECT', 'TRACE', 'TRACK'].includes(name.toUpperCase())),
  },
);

const request = fc.oneof(
  { weight: 1, arbitrary: fittingRequest },
  { weight: 1, arbitrary: fc.tuple(method, urlPath, query) },
);

// ---- bodies ------------------------------------------------------------------------------------------

/** Fields every backend declares, plus the usual suspects. */
const declaredFields = backends.flatMap((backend) =>
  backend.paths.flatMap((spec) => (spec.fields instanceof z.ZodObject ? Object.keys(spec.fields.shape) : [])),
);
const fieldNames = [
  ...new Set(declaredFields),
  'policies',
  'policy',
  'ttl',
  'explicit_max_ttl',
  'period',
  'num_uses',
  'renewable',
  'no_default_policy',
  'no_parent',
  'display_name',
  'meta',
  'type',
  'id',
  'entity_id',
  'token',
  'accessor',
  'increment',
  'lease_id',
  'url_lease_id',
  'sync',
  'path',
  'paths',
  'description',
  'config',
  'options',
  'local',
  'seal_wrap',
  'default_lease_ttl',
  'max_lease_ttl',
  'lease',
  'list',
  'name',
  '__proto__',
  'constructor',
  'toString',
];
const scalar = fc.oneof(
  fc.constantFrom(
    '',
    '1h',
    '90s',
    '-1h',
    '1h30m',
    '1.5h',
    'service',
    'batch',
    'default',
    'root',
    'true',
    'false',
    'kv',
    'secret',
    'hvs.x',
    'hvb.x',
  ),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER, -0, 0.5, 2 ** 53 + 2),
  fc.boolean(),
  fc.constant(null),
);
const fieldValue = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), scalar, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
);
const fieldsBody = fc
  .dictionary(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...new Set(fieldNames)) },
      { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    ),
    fieldValue,
    {
      maxKeys: 6,
    },
  )
  .map((fields) => JSON.stringify(fields));
const nested = (depth: number, open: string, close: string, inner = '1') =>
  `{"a":${open.repeat(depth)}${inner}${close.repeat(depth)}}`;
const body = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fieldsBody },
  { weight: 2, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{',
      '{"a":',
      '[',
      ']',
      'null',
      '{"a":1}}',
      '\u0000',
      '{"ttl":1e999}',
      '{"a":"\\ud800"}',
      ' ',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200_000 }).map((depth) => nested(depth, '[', ']')) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }).map((depth) => nested(depth, '{"a":', '}')) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('value', 'policy', 'ttl', 'token', 'lease_id', 'accessor', 'display_name'),
        fc.integer({ min: 1_000, max: 1_100_000 }),
      )
      // Each field's filler starts with the field's name: the audit log shows an unparsable `ttl` or `policy` in its
      // error, and the harness's leak check (which takes a `token`'s or an `accessor`'s value for a secret) must not
      // find one field's value inside another's.
      .map(([field, length]) => JSON.stringify({ [field]: `${field}=${'x'.repeat(length)}` })),
  },
);

// ---- headers -----------------------------------------------------------------------------------------

/** Header values a client can actually send: visible Latin-1, no CR/LF. */
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0xff }).map((code) => String.fromCharCode(code)),
  maxLength: 60,
});
type TokenChoice = { kind: 'root' | 'limited' | 'none' } | { kind: 'garbage'; header: string; value: string };
const tokenChoice: fc.Arbitrary<TokenChoice> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'root' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'limited' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom('X-Secrets-Token', 'X-Vault-Token', 'Authorization'),
        fc.oneof(
          headerText,
          headerText.map((text) => `hvb.${text}`),
          headerText.map((text) => `hvs.${text}`),
          fc.constantFrom('hvb.', 'hvb.AAAA', `hvb.${'A'.repeat(64)}`),
        ),
      )
      .map(([header, value]) => ({
        kind: 'garbage' as const,
        header,
        value: header === 'Authorization' ? `Bearer ${value}` : value,
      })),
  },
);
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'Content-Length',
    'Content-Type',
    'X-Forwarded-For',
    'Accept',
    'X-Vault-Request',
    'X-Vault-Namespace',
    'X-Vault-Wrap-TTL',
  ),
  fc.oneof(
    headerText,
    fc.constantFrom('-1', 'abc', '0', '1e9', '99999999999999999999', '1048577', 'application/json', 'text/plain'),
  ),
  { maxKeys: 3 },
);

/** fast-check's own report prints a 200 kB body in full; this one shortens every value in the case. */
function reportShortly<Case extends unknown[]>(details: fc.RunDetails<Case>): void {
  if (!details.failed) return;
  const short = (value: unknown) => {
    const text = typeof value === 'string' ? JSON.stringify(value) : fc.stringify(value);
    return text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text;
  };
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(
    `no-500 property failed after ${details.numRuns} runs (seed ${details.seed}, path "${details.counterexamplePath}")\n` +
      `case: [${(details.counterexample ?? []).map(short).join(', ')}]\n${error}`,
  );
}

// ---- the property --------------------------------------------------------------------------------------

describe('no input reaches a 500', () => {
  let h: SecretsService;
  let root: string;
  let lastError = '';
  const log: Logger = {
    info() {},
    error(message, fields) {
      lastError = `${message} ${JSON.stringify(fields)}`.slice(0, 600);
    },
  };

  beforeAll(async () => {
    h = await startSecretsInMemory({ log });
    root = h.rootToken;
    await h.call('POST', '/v1/sys/mounts/deep/mount', { token: root, body: { type: 'kv' } });
    for (const backend of backends) {
      if (['system', 'token', 'identity', 'kv'].includes(backend.type)) continue;
      const table = backend.kind === 'auth' ? 'auth' : 'mounts';
      const enabled = await h.call('POST', `/v1/sys/${table}/${backend.type}`, {
        token: root,
        body: { type: backend.type },
      });
      expect(enabled.status, `enable ${backend.type}`).toBe(204);
    }
    await h.call('POST', '/v1/secret/app/db', { token: root, body: { password: 'pw' } });
    await h.call('POST', '/v1/secret/leased', { token: root, body: { value: 'v', ttl: '1h' } });
    await h.call('GET', '/v1/secret/leased', { token: root });
  });
  afterAll(() => h.close());

  /** Random requests may revoke the root token (`revoke-self`); later runs need one to reach the handlers. */
  async function liveRootToken(): Promise<string> {
    if (await h.core.tokens.lookup(root)) return root;
    const { token } = await h.core.tokens.create({
      policies: ['root'],
      noDefaultPolicy: true,
      displayName: 'root',
      meta: {},
      ttl: 0,
      explicitMaxTtl: 0,
      period: 0,
      numUses: 0,
      renewable: false,
      type: 'service',
      path: 'auth/token/root',
      entityId: '',
      boundCidrs: [],
      parent: undefined,
      issuer: tokenStoreMount,
      creator: 'initialisation',
      mountDefaultTtl: 0,
      mountMaxTtl: 0,
    });
    root = token;
    return root;
  }

  /** A token with a policy that grants some of every family, so random requests also meet partial permissions. */
  let limited = '';
  async function liveLimitedToken(): Promise<string> {
    if (limited && (await h.core.tokens.lookup(limited))) return limited;
    const policy = [
      'path "secret/app/*" { capabilities = ["create", "read", "update", "list"] }',
      'path "sys/leases/*" { capabilities = ["update", "list"] }',
      'path "sys/mounts/+" { capabilities = ["read"] }',
      'path "auth/token/*" { capabilities = ["update", "read"] }',
    ].join('\n');
    const rootToken = await liveRootToken();
    await h.call('PUT', '/v1/sys/policies/acl/limited', { token: rootToken, body: { policy } });
    const created = await h.call('POST', '/v1/auth/token/create', {
      token: rootToken,
      body: { policies: ['limited'], ttl: '24h' },
    });
    limited = created.body.auth.client_token;
    return limited;
  }

  it('random methods, paths, bodies and headers, with the root token, a limited one, garbage or none', async () => {
    const started = Date.now();
    let runs = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        request,
        body,
        tokenChoice,
        extraHeaders,
        async ([verb, path, search], payload, token, extra) => {
          const headers: Record<string, string> = { ...extra };
          if (token.kind === 'root') headers['X-Secrets-Token'] = await liveRootToken();
          if (token.kind === 'limited') headers['X-Vault-Token'] = await liveLimitedToken();
          if (token.kind === 'garbage') headers[token.header] = token.value;
          const url = `${path}${search}`;
          const withBody = payload !== undefined && verb.toUpperCase() !== 'GET' && verb.toUpperCase() !== 'HEAD';
          try {
            new Request(`http://localhost${url}`, { method: verb, headers, ...(withBody ? { body: payload } : {}) });
          } catch {
            fc.pre(false); // not a request any HTTP client could send
          }
          lastError = '';
          const response = await h.call(verb, url, { headers, ...(withBody ? { body: payload } : {}) });
          runs++;
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          const shown = `${verb} ${url.slice(0, 200)} ${JSON.stringify(headers).slice(0, 200)} body=${String(payload).slice(0, 200)}`;
          expect(
            response.status,
            `${shown}\n→ ${response.status} ${JSON.stringify(response.body)}\n${lastError}`,
          ).not.toBe(500);
          expect(response.status, shown).toBeLessThan(500);
          if (response.status >= 400 && verb.toUpperCase() !== 'HEAD') {
            expect(response.body, shown).toEqual({ errors: expect.any(Array) });
            for (const message of response.body.errors) expect(typeof message, shown).toBe('string');
          }
        },
      ),
      { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, endOnFailure: true, reporter: reportShortly },
    );
    console.log(
      `${runs} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
    );
  }, 60_000);
});
