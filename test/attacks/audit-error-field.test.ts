import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * The audit `error` field (and the 400 answered) must not quote a body that could not be decoded. A caller (any
 * token, or anonymous) sends a secret in a malformed body (a missing quote, a trailing comma); JSON.parse's message
 * quotes a window of the body, and the error is written to every audit device in the clear (only data is HMAC'd).
 * Whoever reads the audit log (an operator, the log pipeline) must never see the secret nor a piece of it.
 */

const secret = 'hvs.Zq8SecretValueNobodyMayRead42';
const plain = 'CorrectHorseBatteryStaple9731';

/** Every 6-character piece of a secret: a window of the body cut mid-value would show one. */
const fragments = (text: string) => Array.from({ length: text.length - 5 }, (_, index) => text.slice(index, index + 6));

describe('the audit error field never quotes a body that could not be decoded', () => {
  let s: SecretsHarness;
  beforeAll(async () => {
    s = await startSecrets();
  });
  afterAll(() => s.close());

  const malformed = [
    `{"password": ${secret}}`, // a bare token: "Unexpected token", with a window of the body
    `{"password": "${plain}", "token": ${secret}`,
    `{"password": "${plain}",, "x": 1}`,
    `{"password": "${plain}"} ${secret}`,
    `\ufeff{"password": "${plain}"}`,
    `{"password": '${plain}'}`,
    `{"password": "${plain}`,
    `${plain}`,
  ];

  it('a root caller sending a secret in a malformed JSON body gets a 400 naming the problem, and the audit file shows no piece of it', async () => {
    for (const body of malformed) {
      const reply = await s.call('PUT', '/v1/secret/app/db', {
        token: s.rootToken,
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect(reply.status, body).toBe(400);
      const error: string = reply.body.errors.join(' ');
      expect(error, body).toMatch(/^failed to parse JSON input: /);
      for (const piece of [...fragments(secret), ...fragments(plain)]) expect(error, body).not.toContain(piece);
    }
    const audit = s.auditLines().join('\n');
    const errors = s
      .auditLines()
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.request.path === 'secret/app/db');
    // Each refused request is audited (request and response entries), with the error recorded.
    expect(errors.length).toBeGreaterThanOrEqual(malformed.length);
    expect(errors.every((entry) => /^failed to parse JSON input: /.test(entry.error))).toBe(true);
    for (const piece of [...fragments(secret), ...fragments(plain)]) expect(audit).not.toContain(piece);
  });

  it('through the Lambda adapter (API Gateway event, base64 body) the same malformed bodies give the same 400, audited without the secret', async () => {
    const lambda = secretsLambda(secretsFront({ core: async () => s.core }));
    for (const body of malformed) {
      const event = {
        version: '2.0',
        routeKey: '$default',
        rawPath: '/v1/secret/app/lambda',
        rawQueryString: '',
        headers: {
          host: 'abc123.execute-api.us-east-1.amazonaws.com',
          'content-type': 'application/json',
          'x-vault-token': s.rootToken,
        },
        requestContext: {
          http: {
            method: 'PUT',
            path: '/v1/secret/app/lambda',
            protocol: 'HTTP/1.1',
            sourceIp: '203.0.113.9',
            userAgent: 'vitest',
          },
        },
        body: Buffer.from(body).toString('base64'),
        isBase64Encoded: true,
      } as unknown as APIGatewayProxyEventV2;
      const result = await lambda(event);
      expect(result.statusCode, body).toBe(400);
      for (const piece of [...fragments(secret), ...fragments(plain)]) expect(result.body, body).not.toContain(piece);
    }
    const audit = s.auditLines().join('\n');
    expect(audit).toContain('secret/app/lambda');
    for (const piece of [...fragments(secret), ...fragments(plain)]) expect(audit).not.toContain(piece);
  });

  it('an anonymous caller gets the same: the error names the problem, never the body', async () => {
    const reply = await s.call('PUT', '/v1/secret/app/db', {
      body: `{"password": ${secret}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(JSON.stringify(reply.body)).not.toContain(secret.slice(4, 12));
    expect(s.auditLines().join('\n')).not.toContain(secret.slice(4, 12));
  });
});
