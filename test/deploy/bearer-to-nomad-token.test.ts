import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { createContext, runInContext } from 'node:vm';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToNomadTokenFile } from '../../stacks/SchedulerApi.ts';
import { deployedEnvironment, httpApiEvent, invoke, lambdaContext, standInAwsLambda } from './lambda-events.ts';

const streamMetadata = standInAwsLambda();

interface CloudFrontRequest {
  method: string;
  uri: string;
  querystring: Record<string, { value: string }>;
  headers: Record<string, { value: string }>;
  cookies: Record<string, { value: string }>;
}

const source = readFileSync(bearerToNomadTokenFile, 'utf8');

/**
 * The function as CloudFront's cloudfront-js-2.0 runtime runs it: a script (no modules, no `require`), in a context
 * with only the ECMAScript built-ins (no `process`, `Buffer`, timers), `handler(event)` called with the viewer-request
 * event, its (possibly async) result the request CloudFront sends on. Header names arrive lower-cased.
 */
async function viewerRequest(headers: Record<string, string>): Promise<CloudFrontRequest> {
  const context = createContext({});
  runInContext(source, context, { filename: bearerToNomadTokenFile });
  const handler = runInContext('handler', context) as (event: unknown) => Promise<CloudFrontRequest>;
  const event = {
    version: '1.0',
    context: {
      distributionDomainName: 'd111111abcdef8.cloudfront.net',
      distributionId: 'EDFDVBD6EXAMPLE',
      eventType: 'viewer-request',
      requestId: 'r1',
    },
    viewer: { ip: '198.51.100.7' },
    request: {
      method: 'GET',
      uri: '/v1/event/stream',
      querystring: { topic: { value: 'ACLToken' } },
      headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), { value }])),
      cookies: {},
    },
  };
  return handler(event);
}

describe('stacks/cloudfront/bearer-to-nomad-token.js (CloudFront Function on the stream route)', () => {
  it('fits CloudFront Functions: a plain script under 10 KB defining handler, no import, require or Node globals', () => {
    expect(Buffer.byteLength(source)).toBeLessThan(10 * 1024);
    expect(source).not.toMatch(/\b(import|export|require|process|Buffer|setTimeout)\b/);
    expect(typeof runInContext(`${source}; handler`, createContext({}))).toBe('function');
  });

  it('copies an Authorization: Bearer token to X-Nomad-Token and passes everything else on', async () => {
    const request = await viewerRequest({ Authorization: 'Bearer 5f1c-secret', Accept: 'application/json' });
    expect(request.headers['x-nomad-token']).toEqual({ value: '5f1c-secret' });
    expect(request.headers.accept).toEqual({ value: 'application/json' });
    expect(request.uri).toBe('/v1/event/stream');
    expect(request.querystring).toEqual({ topic: { value: 'ACLToken' } });
    expect((await viewerRequest({ authorization: 'bearer   spaced  ' })).headers['x-nomad-token']).toEqual({
      value: 'spaced',
    });
  });

  it('leaves a request alone that has no Bearer token, or already names its token in a header', async () => {
    expect((await viewerRequest({})).headers).toEqual({});
    expect((await viewerRequest({ Authorization: 'Basic dXNlcjpwdw==' })).headers['x-nomad-token']).toBeUndefined();
    expect((await viewerRequest({ Authorization: 'Bearer ' })).headers['x-nomad-token']).toBeUndefined();
    const direct = await viewerRequest({ Authorization: 'Bearer other', 'X-Nomad-Token': 'mine' });
    expect(direct.headers['x-nomad-token']).toEqual({ value: 'mine' });
    const scheduler = await viewerRequest({ Authorization: 'Bearer other', 'X-Scheduler-Token': 'mine' });
    expect(scheduler.headers['x-nomad-token']).toBeUndefined();
  });

  describe('through to the stream function, with the Authorization header replaced as origin access control does', () => {
    let client: DynamoDBClient;
    let management = '';
    beforeAll(async () => {
      ({ client } = await deployedEnvironment());
      process.env.KEYHAVEN_STREAM_LIMIT_MS = '300';
      const { handler } = await import('../../functions/scheduler/api.ts');
      management = (await invoke(handler, httpApiEvent('POST', '/v1/acl/bootstrap', { routeKey: 'ANY /v1/{proxy+}' })))
        .body.SecretID;
    });
    afterAll(() => client?.destroy());

    /** The stream function's answer status to a viewer's headers, after CloudFront (with or without the function) and OAC. */
    async function streamStatus(viewerHeaders: Record<string, string>, withFunction: boolean): Promise<number> {
      const headers = withFunction
        ? Object.fromEntries(
            Object.entries((await viewerRequest(viewerHeaders)).headers).map(([name, { value }]) => [name, value]),
          )
        : Object.fromEntries(Object.entries(viewerHeaders).map(([name, value]) => [name.toLowerCase(), value]));
      headers.authorization =
        'AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261123/us-east-1/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123';
      const { handler } = await import('../../functions/scheduler/event-stream.ts');
      const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
      const finished = new Promise<void>((resolve) => sink.on('finish', () => resolve()));
      await (handler as unknown as (event: unknown, stream: Writable, context: unknown) => Promise<void>)(
        httpApiEvent('GET', '/v1/event/stream?topic=ACLToken', { headers }),
        sink,
        lambdaContext,
      );
      await finished;
      return (streamMetadata.at(-1) as { statusCode: number }).statusCode;
    }

    it('a Bearer token reaches the stream only with the function', async () => {
      expect(await streamStatus({ Authorization: `Bearer ${management}` }, false)).toBe(403);
      expect(await streamStatus({ Authorization: `Bearer ${management}` }, true)).toBe(200);
      expect(await streamStatus({ 'X-Nomad-Token': management }, true)).toBe(200);
    });
  });
});
