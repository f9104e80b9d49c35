/**
 * Attacker: anonymous, on a stage whose first tokens were made at deploy time (`KEYHAVEN_FIRST_TOKENS_SECRET` set:
 * `sys/init` and `acl/bootstrap` over HTTP are refused so nobody can race the deploy for root or management).
 * They try: the same calls with the method in lower or mixed case (`put`, `Post`), which API Gateway passes on as
 * sent: the refusal compared the method case-sensitively, while the front upper-cases it and initialises.
 * They must never reach: a root or management token over HTTP. The refusal sees the method the front will act on
 * (`canonicalMethod`, the one normalisation every adapter uses).
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployedEnvironment, httpApiEvent, invoke, secretsFunction } from '../deploy/lambda-events.ts';

describe('first-token refusal against method spellings (functions/refuse-first-tokens.ts)', () => {
  const secret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:FirstTokensSecret-abc';
  let environment: Awaited<ReturnType<typeof deployedEnvironment>>;
  const tokens = async () =>
    ((await environment.client.send(new ScanCommand({ TableName: environment.tableName }))).Items ?? [])
      .map((item) => unmarshall(item))
      .filter((item) => String(item.pk).startsWith('token#') || item.pk === 'sched#token');

  beforeAll(async () => {
    environment = await deployedEnvironment();
    process.env.KEYHAVEN_FIRST_TOKENS_SECRET = secret;
  });
  afterAll(() => {
    delete process.env.KEYHAVEN_FIRST_TOKENS_SECRET;
    environment?.client.destroy();
  });

  it('sys/init with put, Put, pOST: refused with 403 naming the secret, and the stage stays uninitialised', async () => {
    const system = await secretsFunction('system');
    for (const method of ['put', 'Put', 'pOST', 'post']) {
      const answer = await invoke(system, httpApiEvent(method, '/v1/sys/init', { body: {} }));
      expect(answer.status, method).toBe(403);
      expect(JSON.stringify(answer.body), method).toContain(secret);
      expect(JSON.stringify(answer.body), method).not.toContain('root_token');
    }
    expect(await invoke(system, httpApiEvent('GET', '/v1/sys/init'))).toEqual({
      status: 200,
      body: { initialized: false },
    });
    expect(await tokens()).toEqual([]);
  });

  it('acl/bootstrap with post, Put: refused with 403 naming the secret, and no management token exists', async () => {
    const api = (await import('../../functions/scheduler/api.ts')).handler;
    for (const method of ['post', 'Post', 'put']) {
      const answer = await invoke(api, httpApiEvent(method, '/v1/acl/bootstrap', { routeKey: 'ANY /v1/{proxy+}' }));
      expect(answer.status, method).toBe(403);
      expect(String(answer.body), method).toContain(secret);
      expect(String(answer.body), method).not.toContain('SecretID');
    }
    expect(await tokens()).toEqual([]);
  });
});
