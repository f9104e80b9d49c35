import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { type CoreBase, createCoreBase } from '../composition/shared-core.ts';
import { sharedUntilRejected } from '../lib/shared-until-rejected.ts';
import { fileKeySource, type KeySource, kmsKeySource } from '../storage/keyring.ts';
import { storeClientOptions } from '../storage/store-client.ts';

// What a deployed function reads from its environment to reach its state: `KEYHAVEN_TABLE`, and either
// `KEYHAVEN_KMS_KEY_ID` (AWS) or `KEYHAVEN_KEY_FILE` (a laptop); `KEYHAVEN_DYNAMODB_ENDPOINT` and `KEYHAVEN_KMS_ENDPOINT`
// point the SDK at local stand-ins. The secrets service's core is built on it in `secrets-core-from-environment.ts`; the scheduler needs this
// alone, so its functions bundle none of the secrets service.

/**
 * The table, keyring, clock and log alone, from the environment (`composition/shared-core.ts`): what the scheduler's functions run
 * on, without the secrets service's mounts, policies, tokens, leases and audit.
 */
export function coreBaseFromEnvironment(env = process.env): () => Promise<CoreBase> {
  return sharedUntilRejected(() =>
    createCoreBase({
      dynamodb: dynamoDbClient(env.KEYHAVEN_DYNAMODB_ENDPOINT),
      tableName: tableName(env),
      keySource: keySource(env),
      epochs: ['bootstrap'],
    }),
  );
}

export const tableName = (env = process.env) => env.KEYHAVEN_TABLE ?? 'keyhaven';

/** The region every client of a local stand-in uses (DynamoDB Local keeps one database per access key and region). */
export const localRegion = 'us-east-1';

/** An access key for a local stand-in. */
export interface LocalCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The placeholder credentials the local stand-ins accept: the test suite's in-memory DynamoDB Local and an endpoint
 * given with KEYHAVEN_DYNAMODB_ENDPOINT keep their data under these (`npm start`'s kept data has a key of its own).
 */
export const localCredentials: LocalCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * An AWS client's settings for a local stand-in at `endpoint` (DynamoDB Local, the KMS and Lambda emulators): a fixed
 * region and the placeholder credentials they accept, or another key (`packages/local`'s kept DynamoDB Local). In AWS
 * no endpoint is set and the SDK's defaults apply.
 */
export const localEndpoint = (endpoint: string, credentials: LocalCredentials = localCredentials) => ({
  endpoint,
  region: localRegion,
  credentials,
});

export function dynamoDbClient(endpoint: string | undefined): DynamoDBClient {
  if (!endpoint) return new DynamoDBClient({ ...storeClientOptions() });
  return new DynamoDBClient({ ...storeClientOptions(), ...localEndpoint(endpoint) });
}

export function keySource(env: NodeJS.ProcessEnv): KeySource {
  if (env.KEYHAVEN_KMS_KEY_ID) {
    const client = new KMSClient(env.KEYHAVEN_KMS_ENDPOINT ? localEndpoint(env.KEYHAVEN_KMS_ENDPOINT) : {});
    return kmsKeySource({ keyId: env.KEYHAVEN_KMS_KEY_ID, client });
  }
  if (env.KEYHAVEN_KEY_FILE) return fileKeySource(env.KEYHAVEN_KEY_FILE);
  throw new Error('set KEYHAVEN_KMS_KEY_ID (AWS) or KEYHAVEN_KEY_FILE (local) so secrets can be sealed');
}
