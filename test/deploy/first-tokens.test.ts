import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsManagerEmulator, startSecretsManagerEmulator } from '../emulators/secrets-manager.ts';
import {
  deployedEnvironment,
  httpApiEvent,
  invoke,
  secretsFunction,
  startCloudFormationResponses,
} from './lambda-events.ts';

type Handler = (event: unknown) => Promise<{ Status: string; Reason?: string; Data?: Record<string, string> }>;

/**
 * `functions/deploy/first-tokens.ts`, invoked as CloudFormation invokes a custom resource (Create, Update, Delete
 * events; the answer PUT to the response URL), against DynamoDB Local and the Secrets Manager emulator; then the
 * system and scheduler API functions as the stack configures them on such a stage (`KEYHAVEN_FIRST_TOKENS_SECRET`).
 */
describe('first tokens at deploy time (functions/deploy/first-tokens.ts)', () => {
  let client: DynamoDBClient;
  let secretsManager: SecretsManagerEmulator;
  let cloudFormation: Awaited<ReturnType<typeof startCloudFormationResponses>>;
  let firstTokens: Handler;
  let secretArn = '';
  const stored = () =>
    JSON.parse(secretsManager.secret(secretArn)?.current ?? '{}') as {
      root_token?: string;
      scheduler_management_token?: string;
    };

  beforeAll(async () => {
    ({ client } = await deployedEnvironment());
    secretsManager = await startSecretsManagerEmulator();
    cloudFormation = await startCloudFormationResponses();
    process.env.KEYHAVEN_SECRETSMANAGER_ENDPOINT = secretsManager.endpoint;
    const sdk = new SecretsManagerClient({
      endpoint: secretsManager.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    // What CloudFormation does first: the secret resource (no value yet), under the stage's key.
    secretArn =
      (
        await sdk.send(
          new CreateSecretCommand({
            Name: 'FirstTokensSecret-abc',
            KmsKeyId: 'arn:aws:kms:us-east-1:123456789012:key/stage',
          }),
        )
      ).ARN ?? '';
    sdk.destroy();
    firstTokens = (await import('../../functions/deploy/first-tokens.ts')).handler as unknown as Handler;
  });
  afterAll(async () => {
    for (const name of ['KEYHAVEN_SECRETSMANAGER_ENDPOINT', 'KEYHAVEN_FIRST_TOKENS_SECRET']) delete process.env[name];
    await cloudFormation?.stop();
    await secretsManager?.stop();
    client?.destroy();
  });

  it('a Create whose secret does not exist fails, naming why, and leaves the stage uninitialised', async () => {
    const answer = await firstTokens(
      cloudFormation.event('Create', { SecretId: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-xyz' }),
    );
    expect(answer.Status).toBe('FAILED');
    expect(answer.Reason).toMatch(/^keyhaven first tokens: Secrets Manager can't find the specified secret/);
    expect(cloudFormation.answers.at(-1)).toMatchObject({
      Status: 'FAILED',
      LogicalResourceId: 'FirstTokens',
      PhysicalResourceId: 'keyhaven-first-tokens',
    });
    const missing = await firstTokens(cloudFormation.event('Create', {}));
    expect(missing.Reason).toBe('keyhaven first tokens: the SecretId property is missing');
    const system = await secretsFunction('system');
    expect((await invoke(system, httpApiEvent('GET', '/v1/sys/init'))).body).toEqual({ initialized: false });
  });

  it('Create makes the root token and the management token into the secret, and answers CloudFormation with no secret in Data', async () => {
    const event = cloudFormation.event('Create', { SecretId: secretArn });
    const answer = await firstTokens(event);
    expect(answer).toEqual({
      Status: 'SUCCESS',
      PhysicalResourceId: 'keyhaven-first-tokens',
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: 'FirstTokens',
      Data: { RootToken: 'created', ManagementToken: 'created' },
    });
    expect(cloudFormation.answers.at(-1)).toEqual(answer);
    expect(stored().root_token).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);
    expect(stored().scheduler_management_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(cloudFormation.answers)).not.toContain(stored().root_token);
    expect(secretsManager.secret(secretArn)?.kmsKeyId).toBe('arn:aws:kms:us-east-1:123456789012:key/stage');
  });

  it('the stored tokens work: root in the system function, management in the scheduler API', async () => {
    const system = await secretsFunction('system');
    const self = await invoke(
      system,
      httpApiEvent('GET', '/v1/auth/token/lookup-self', { headers: { 'x-secrets-token': stored().root_token ?? '' } }),
    );
    expect(self.status).toBe(200);
    expect(self.body.data).toMatchObject({ policies: ['root'], display_name: 'root', path: 'auth/token/root' });
    const api = (await import('../../functions/scheduler/api.ts')).handler;
    const management = await invoke(
      api,
      httpApiEvent('GET', '/v1/acl/token/self', {
        headers: { 'x-nomad-token': stored().scheduler_management_token ?? '' },
      }),
    );
    expect(management.status).toBe(200);
    expect(management.body).toMatchObject({ Type: 'management', Name: 'Bootstrap Token' });
  });

  it('on such a stage, sys/init and acl/bootstrap over HTTP are refused (403, naming the secret); reading the init status is not', async () => {
    process.env.KEYHAVEN_FIRST_TOKENS_SECRET = secretArn;
    try {
      const system = await secretsFunction('system');
      for (const method of ['PUT', 'POST']) {
        const refused = await invoke(system, httpApiEvent(method, '/v1/sys/init', { body: {} }));
        expect(refused.status).toBe(403);
        expect(refused.body.errors).toEqual([
          `sys/init is disabled over HTTP on this stage: the first token was made at deploy time and is in Secrets Manager secret ${secretArn}`,
        ]);
      }
      expect(await invoke(system, httpApiEvent('GET', '/v1/sys/init'))).toEqual({
        status: 200,
        body: { initialized: true },
      });
      const api = (await import('../../functions/scheduler/api.ts')).handler;
      const bootstrap = await invoke(api, httpApiEvent('POST', '/v1/acl/bootstrap', { routeKey: 'ANY /v1/{proxy+}' }));
      expect(bootstrap.status).toBe(403);
      expect(bootstrap.body).toBe(
        `acl/bootstrap is disabled over HTTP on this stage: the first token was made at deploy time and is in Secrets Manager secret ${secretArn}`,
      );
    } finally {
      delete process.env.KEYHAVEN_FIRST_TOKENS_SECRET;
    }
    // Without the setting (dev stages, `npm start`), the call answers as Vault does on an initialised store.
    const system = await secretsFunction('system');
    expect((await invoke(system, httpApiEvent('PUT', '/v1/sys/init', { body: {} }))).status).toBe(400);
  });

  it('Update makes nothing new and leaves the secret alone; Delete succeeds and the tokens stay valid', async () => {
    const before = secretsManager.secret(secretArn)?.current;
    const calls = secretsManager.calls.PutSecretValue;
    const update = await firstTokens(cloudFormation.event('Update', { SecretId: secretArn }));
    expect(update).toMatchObject({
      Status: 'SUCCESS',
      PhysicalResourceId: 'keyhaven-first-tokens',
      Data: { RootToken: 'existing', ManagementToken: 'existing' },
    });
    expect(secretsManager.calls.PutSecretValue).toBe(calls);
    expect(secretsManager.secret(secretArn)?.current).toBe(before);
    const deleted = await firstTokens(cloudFormation.event('Delete', { SecretId: secretArn }));
    expect(deleted).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'keyhaven-first-tokens', Data: {} });
    const system = await secretsFunction('system');
    expect(
      (
        await invoke(
          system,
          httpApiEvent('GET', '/v1/auth/token/lookup-self', {
            headers: { 'x-secrets-token': stored().root_token ?? '' },
          }),
        )
      ).status,
    ).toBe(200);
  });
});
