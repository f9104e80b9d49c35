import {
  CreateSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  SecretsManagerClient,
  SecretsManagerServiceException,
} from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsManagerEmulator, startSecretsManagerEmulator } from './secrets-manager.ts';

/** The emulator through the real SDK client, as the deploy-time custom resource uses it. */
describe('Secrets Manager emulator', () => {
  let emulator: SecretsManagerEmulator;
  let client: SecretsManagerClient;
  beforeAll(async () => {
    emulator = await startSecretsManagerEmulator();
    client = new SecretsManagerClient({
      endpoint: emulator.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    client.destroy();
    await emulator.stop();
  });

  it('creates a secret under a KMS key; a taken name is ResourceExistsException', async () => {
    const created = await client.send(
      new CreateSecretCommand({
        Name: 'stage/first-tokens',
        KmsKeyId: 'arn:aws:kms:us-east-1:123456789012:key/k1',
        Description: 'd',
      }),
    );
    expect(created.ARN).toMatch(
      /^arn:aws:secretsmanager:us-east-1:123456789012:secret:stage\/first-tokens-[0-9a-f]{6}$/,
    );
    expect(created.VersionId).toBeUndefined();
    const described = await client.send(new DescribeSecretCommand({ SecretId: created.ARN }));
    expect(described).toMatchObject({
      Name: 'stage/first-tokens',
      KmsKeyId: 'arn:aws:kms:us-east-1:123456789012:key/k1',
      Description: 'd',
      VersionIdsToStages: {},
    });
    await expect(client.send(new CreateSecretCommand({ Name: 'stage/first-tokens' }))).rejects.toBeInstanceOf(
      ResourceExistsException,
    );
  });

  it('puts versions: AWSCURRENT moves to the new one, the old becomes AWSPREVIOUS; a repeated token is idempotent', async () => {
    const first = await client.send(
      new PutSecretValueCommand({ SecretId: 'stage/first-tokens', SecretString: '{"a":1}' }),
    );
    expect(first.VersionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.VersionStages).toEqual(['AWSCURRENT']);
    const token = '0123456789abcdef0123456789abcdef';
    const second = await client.send(
      new PutSecretValueCommand({ SecretId: 'stage/first-tokens', SecretString: '{"a":2}', ClientRequestToken: token }),
    );
    expect(second.VersionId).toBe(token);
    expect((await client.send(new GetSecretValueCommand({ SecretId: 'stage/first-tokens' }))).SecretString).toBe(
      '{"a":2}',
    );
    const previous = await client.send(
      new GetSecretValueCommand({ SecretId: 'stage/first-tokens', VersionStage: 'AWSPREVIOUS' }),
    );
    expect(previous).toMatchObject({
      VersionId: first.VersionId,
      SecretString: '{"a":1}',
      VersionStages: ['AWSPREVIOUS'],
    });
    const again = await client.send(
      new PutSecretValueCommand({ SecretId: 'stage/first-tokens', SecretString: '{"a":2}', ClientRequestToken: token }),
    );
    expect(again.VersionId).toBe(token);
    await expect(
      client.send(
        new PutSecretValueCommand({
          SecretId: 'stage/first-tokens',
          SecretString: '{"a":3}',
          ClientRequestToken: token,
        }),
      ),
    ).rejects.toBeInstanceOf(ResourceExistsException);
    const described = await client.send(new DescribeSecretCommand({ SecretId: 'stage/first-tokens' }));
    expect(
      Object.values(described.VersionIdsToStages ?? {})
        .flat()
        .sort(),
    ).toEqual(['AWSCURRENT', 'AWSPREVIOUS']);
  });

  it('refuses what the service refuses: an unknown secret, no value, both values, a short token', async () => {
    await expect(client.send(new GetSecretValueCommand({ SecretId: 'nope' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
    await expect(
      client.send(new PutSecretValueCommand({ SecretId: 'nope', SecretString: 'x' })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
    const refused = async (input: ConstructorParameters<typeof PutSecretValueCommand>[0]) => {
      const error = await client.send(new PutSecretValueCommand(input)).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SecretsManagerServiceException);
      return (error as SecretsManagerServiceException).name;
    };
    expect(await refused({ SecretId: 'stage/first-tokens' })).toBe('InvalidRequestException');
    expect(
      await refused({ SecretId: 'stage/first-tokens', SecretString: 'x', SecretBinary: new Uint8Array([1]) }),
    ).toBe('InvalidParameterException');
    expect(await refused({ SecretId: 'stage/first-tokens', SecretString: 'x', ClientRequestToken: 'short' })).toBe(
      'InvalidParameterException',
    );
    expect(emulator.secret('stage/first-tokens')?.current).toBe('{"a":2}');
  });
});
