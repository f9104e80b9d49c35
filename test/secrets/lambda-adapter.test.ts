import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { randomBytes } from '../../packages/core/src/lib/random.ts';
import { maxBodyBytes } from '../../packages/core/src/secrets/framework/pipeline.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * The secrets Lambda's adapter (`secrets-lambda.ts`): API Gateway's v2 event read straight into the service's request,
 * with no web Request between. What the node server's app reads from a web Request it must read the same from the
 * event: the path as sent, the query (first value of a name), headers by any case, base64 bodies, the body limit.
 */
describe('the secrets Lambda adapter (API Gateway HTTP API, payload 2.0)', () => {
  let h: SecretsService;
  let lambda: ReturnType<typeof secretsLambda>;

  const event = (
    method: string,
    url: string,
    options: { headers?: Record<string, string>; body?: string; base64?: boolean } = {},
  ) => {
    const [rawPath = '/', rawQueryString = ''] = url.split('?');
    return {
      version: '2.0',
      routeKey: '$default',
      rawPath,
      rawQueryString,
      headers: { host: 'abc123.execute-api.us-east-1.amazonaws.com', ...options.headers },
      requestContext: {
        http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'vitest' },
      },
      ...(options.body === undefined
        ? {}
        : { body: options.base64 ? Buffer.from(options.body).toString('base64') : options.body }),
      isBase64Encoded: options.base64 ?? false,
    } as unknown as APIGatewayProxyEventV2;
  };
  const invoke = async (...args: Parameters<typeof event>) => {
    const result = await lambda(event(...args));
    return { ...result, json: result.body ? JSON.parse(result.body) : undefined };
  };

  beforeAll(async () => {
    h = await startSecretsInMemory();
    lambda = secretsLambda(secretsFront({ core: async () => h.core }));
    await h.call('POST', '/v1/sys/mounts/kv', { token: h.rootToken, body: { type: 'kv' } });
  });
  afterAll(() => h?.close());

  it('answers a write and a read as the node server does, the token taken from any header spelling', async () => {
    const write = await invoke('PUT', '/v1/kv/app', {
      headers: { 'x-vault-token': h.rootToken, 'content-type': 'application/json' },
      body: '{"password":"s3cret"}',
    });
    expect(write.statusCode).toBe(204);
    expect(write.body).toBe('');
    const read = await invoke('GET', '/v1/kv/app', { headers: { 'x-vault-token': h.rootToken } });
    expect(read.statusCode).toBe(200);
    expect(read.headers).toEqual({ 'content-type': 'application/json' });
    expect(read.json.data).toEqual({ password: 's3cret' });
    expect(read.isBase64Encoded).toBe(false);
    expect((await h.call('GET', '/v1/kv/app', { token: h.rootToken })).body.data).toEqual(read.json.data);
  });

  it('decodes a base64 body, as API Gateway sends binary or form payloads', async () => {
    const form = await invoke('POST', '/v1/kv/form', {
      headers: { 'x-vault-token': h.rootToken, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'colour=blue&size=10',
      base64: true,
    });
    expect(form.statusCode).toBe(204);
    expect((await h.call('GET', '/v1/kv/form', { token: h.rootToken })).body.data).toEqual({
      colour: 'blue',
      size: '10',
    });
  });

  it('reads the query string as the node server does: list=true, the first value of a name, + as a space', async () => {
    const list = await invoke('GET', '/v1/kv?list=true&list=false', { headers: { 'x-vault-token': h.rootToken } });
    expect(list.statusCode).toBe(200);
    expect(list.json.data.keys).toEqual(expect.arrayContaining(['app', 'form']));
    const viaApp = await h.call('GET', '/v1/kv?list=true&list=false', { token: h.rootToken });
    expect(list.json.data).toEqual(viaApp.body.data);
  });

  it('takes the path as sent: an escape is decoded, an encoded slash and a malformed escape are 400s naming them', async () => {
    await h.call('PUT', '/v1/kv/a%20b', { token: h.rootToken, body: { v: '1' } });
    const read = await invoke('GET', '/v1/kv/a%20b', { headers: { 'x-vault-token': h.rootToken } });
    expect(read.statusCode).toBe(200);
    expect(read.json.data).toEqual({ v: '1' });
    // One canonical path (issue 23 §1): a name cannot hold a slash, so `a%2Fb` is refused on both adapters.
    const slash = await invoke('GET', '/v1/kv/a%2Fb', { headers: { 'x-vault-token': h.rootToken } });
    expect(slash.statusCode).toBe(400);
    expect(slash.json.errors[0]).toContain('encoded slash');
    expect((await h.call('PUT', '/v1/kv/a%2Fb', { token: h.rootToken, body: { v: '1' } })).status).toBe(400);
    const malformed = await invoke('GET', '/v1/kv/%E0%A4%A', { headers: { 'x-vault-token': h.rootToken } });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json.errors[0]).toContain('malformed percent-encoding');
  });

  it('refuses a body over the limit with a 413 naming it, and writes nothing', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(maxBodyBytes) });
    const refused = await invoke('PUT', '/v1/kv/big', {
      headers: { 'x-vault-token': h.rootToken, 'content-type': 'application/json' },
      body: big,
    });
    expect(refused.statusCode).toBe(413);
    expect(refused.json.errors[0]).toContain(`larger than ${maxBodyBytes} bytes`);
    expect((await h.call('GET', '/v1/kv/big', { token: h.rootToken })).status).toBe(404);
  });

  it('answers 403 without a token and 500 "not ready" when the core cannot be built', async () => {
    const denied = await invoke('GET', '/v1/kv/app');
    expect(denied.statusCode).toBe(403);
    const broken = secretsLambda(
      secretsFront({
        core: async () => {
          throw new Error('table unreachable');
        },
      }),
    );
    const failed = await broken(event('GET', '/v1/kv/app', { headers: { 'x-vault-token': h.rootToken } }));
    expect(failed.statusCode).toBe(500);
    expect(JSON.parse(failed.body ?? '')).toEqual({ errors: ['internal error: the service is not ready'] });
  });
});

describe('the pooled CSPRNG bytes (lib/random.ts)', () => {
  it('gives the length asked, never the same bytes twice, and copies a caller may keep across refills', () => {
    const kept = randomBytes(12);
    const copy = Buffer.from(kept);
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(randomBytes(12).toString('hex')); // several refills of the 4 KiB pool
    expect(seen.size).toBe(2000);
    expect(kept).toEqual(copy);
    expect(randomBytes(10_000)).toHaveLength(10_000);
    expect(randomBytes(0)).toHaveLength(0);
  });
});
