import { randomUUID } from 'node:crypto';
import { randomBase62 } from '@keyhaven/core/lib/random.ts';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { localEndpoint } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';
import { schedulerFor } from '@keyhaven/core/scheduler/composition/scheduler-core.ts';
import { initialize, isInitialized } from '@keyhaven/core/secrets/sys/init.ts';
import type { CloudFormationCustomResourceEvent, CloudFormationCustomResourceResponse } from 'aws-lambda';

/**
 * The first root token and the scheduler's first management token, made at deploy time (a CloudFormation custom
 * resource in the Storage stack), so a deployed stage never has an open `sys/init` or `acl/bootstrap` window. Both
 * are written to the stage's Secrets Manager secret (encrypted with the stage's KMS key) before they exist in the
 * table, so a failure in between loses nothing: the next deploy makes new ones. On a stage already initialised
 * (through HTTP before this resource existed) nothing is made or written. Deleting the resource changes nothing: the
 * tokens stay valid until revoked. This is also the first code to run against the stage's table, so it creates
 * the data key (`kms:GenerateDataKey`); the other functions only unwrap it.
 *
 * Properties: `SecretId` (the secret's ARN). Data (readable with `Fn::GetAtt`, so no secret in it):
 * `RootToken` and `ManagementToken`, each `created` or `existing`.
 */
const core = coreFromEnvironment([]);

/** The one Secrets Manager call this handler makes; the client is loaded on first use (the runtime provides it). */
export interface SecretStore {
  put(secretId: string, value: string): Promise<void>;
}

export function secretsManagerStore(endpoint = process.env.KEYHAVEN_SECRETSMANAGER_ENDPOINT): SecretStore {
  let client: Promise<(secretId: string, value: string) => Promise<void>> | undefined;
  return {
    async put(secretId, value) {
      client ??= import('@aws-sdk/client-secrets-manager').then(({ PutSecretValueCommand, SecretsManagerClient }) => {
        const sdk = new SecretsManagerClient(endpoint ? localEndpoint(endpoint) : {});
        return async (id: string, secret: string) => {
          await sdk.send(new PutSecretValueCommand({ SecretId: id, SecretString: secret }));
        };
      });
      await (await client)(secretId, value);
    },
  };
}

export const physicalResourceId = 'keyhaven-first-tokens';

export function firstTokensHandler(secrets: SecretStore) {
  return async (event: CloudFormationCustomResourceEvent): Promise<CloudFormationCustomResourceResponse> => {
    let response: CloudFormationCustomResourceResponse;
    try {
      const data =
        event.RequestType === 'Delete'
          ? {}
          : await makeFirstTokens(secrets, String(event.ResourceProperties.SecretId ?? ''));
      response = { ...common(event), Status: 'SUCCESS', Data: data };
    } catch (error) {
      response = {
        ...common(event),
        Status: 'FAILED',
        Reason: `keyhaven first tokens: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    // CloudFormation waits for this answer at the pre-signed URL (an S3 object), with no content type.
    const answered = await fetch(event.ResponseURL, {
      method: 'PUT',
      headers: { 'content-type': '' },
      body: JSON.stringify(response),
    });
    if (!answered.ok) throw new Error(`CloudFormation's response URL answered ${answered.status}`);
    return response;
  };
}

const common = (event: CloudFormationCustomResourceEvent) => ({
  PhysicalResourceId: event.RequestType === 'Create' ? physicalResourceId : event.PhysicalResourceId,
  StackId: event.StackId,
  RequestId: event.RequestId,
  LogicalResourceId: event.LogicalResourceId,
});

async function makeFirstTokens(
  secrets: SecretStore,
  secretId: string,
): Promise<{ RootToken: string; ManagementToken: string }> {
  if (!secretId) throw new Error('the SecretId property is missing');
  const instance = await core();
  const scheduler = schedulerFor(instance);
  const rootDone = await isInitialized(instance);
  const managementDone = (await scheduler.tokens.bootstrapStatus()).done;
  const made = {
    RootToken: rootDone ? 'existing' : 'created',
    ManagementToken: managementDone ? 'existing' : 'created',
  };
  if (rootDone && managementDone) return made;
  const rootToken = rootDone ? undefined : `hvs.${randomBase62(24)}`;
  const managementSecret = managementDone ? undefined : randomUUID();
  await secrets.put(
    secretId,
    JSON.stringify({
      ...(rootToken ? { root_token: rootToken } : {}),
      ...(managementSecret ? { scheduler_management_token: managementSecret } : {}),
    }),
  );
  if (rootToken) await initialize(instance, rootToken);
  if (managementSecret) await scheduler.tokens.bootstrap(managementSecret);
  return made;
}

export const handler = firstTokensHandler(secretsManagerStore());
