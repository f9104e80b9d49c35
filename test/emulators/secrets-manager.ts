/**
 * A small in-process emulator of AWS Secrets Manager speaking its JSON 1.1 protocol (`POST /`,
 * `X-Amz-Target: secretsmanager.<Operation>`, errors as HTTP 400 `{"__type", "message"}`), for the few calls this
 * project makes, field by field as the API reference describes them:
 * - `CreateSecret`: `Name` (1–512 chars), optional `KmsKeyId`, `Description`, `ClientRequestToken` (32–64 chars) and at
 *   most one of `SecretString` / `SecretBinary`; answers `ARN`, `Name` and, with a value, `VersionId`.
 *   A taken name is `ResourceExistsException`.
 * - `PutSecretValue`: `SecretId` (name or ARN), exactly one of `SecretString` / `SecretBinary`, optional
 *   `ClientRequestToken` (the SDK fills it in: it becomes the `VersionId`) and `VersionStages` (default
 *   `AWSCURRENT`). Repeating a token with the same value is a no-op; with another value `ResourceExistsException`.
 *   The new `AWSCURRENT` moves the old one to `AWSPREVIOUS`. Answers `ARN`, `Name`, `VersionId`, `VersionStages`.
 * - `GetSecretValue`: `SecretId`, optional `VersionId` / `VersionStage` (default `AWSCURRENT`); answers `ARN`,
 *   `Name`, `VersionId`, `SecretString` or `SecretBinary`, `VersionStages`, `CreatedDate` (epoch seconds).
 * - `DescribeSecret`: `SecretId`; answers `ARN`, `Name`, `KmsKeyId` (when set), `Description`, `VersionIdsToStages`.
 * An unknown secret is `ResourceNotFoundException` ("Secrets Manager can't find the specified secret."); a bad field is
 * `InvalidParameterException`. Secrets are not encrypted here: the emulator records the `KmsKeyId` they name.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

class ServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

interface Version {
  id: string;
  string?: string;
  binary?: string;
  stages: string[];
  created: number;
}

interface Secret {
  arn: string;
  name: string;
  kmsKeyId?: string;
  description?: string;
  versions: Version[];
}

type Body = Record<string, unknown>;

export interface SecretsManagerEmulator {
  endpoint: string;
  /** Requests received, by operation name. */
  calls: Record<string, number>;
  /** A secret as stored (by name or ARN), for assertions. */
  secret(id: string): { arn: string; name: string; kmsKeyId?: string; current?: string } | undefined;
  stop(): Promise<void>;
}

const optionalString = (body: Body, field: string, min = 0, max = Number.POSITIVE_INFINITY): string | undefined => {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ServiceError('InvalidParameterException', `${field} must be a string`);
  if (value.length < min || value.length > max) {
    throw new ServiceError('InvalidParameterException', `${field} must be between ${min} and ${max} characters`);
  }
  return value;
};

const requiredString = (body: Body, field: string, min = 1, max = 2048): string => {
  const value = optionalString(body, field, min, max);
  if (value === undefined) throw new ServiceError('InvalidParameterException', `${field} is required`);
  return value;
};

function secretValue(body: Body, required: boolean): { string?: string; binary?: string } {
  const string = optionalString(body, 'SecretString', 0, 65_536);
  const binary = optionalString(body, 'SecretBinary', 0, 87_384);
  if (string !== undefined && binary !== undefined) {
    throw new ServiceError(
      'InvalidParameterException',
      'You must provide either SecretString or SecretBinary, not both.',
    );
  }
  if (required && string === undefined && binary === undefined) {
    throw new ServiceError('InvalidRequestException', 'You must provide either SecretString or SecretBinary.');
  }
  return { ...(string !== undefined ? { string } : {}), ...(binary !== undefined ? { binary } : {}) };
}

async function readJson(request: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Body;
  } catch {
    // reported below
  }
  throw new ServiceError('SerializationException', 'request body is not a JSON object');
}

export async function startSecretsManagerEmulator(): Promise<SecretsManagerEmulator> {
  const secrets = new Map<string, Secret>();
  const calls: Record<string, number> = {};

  const find = (id: string): Secret => {
    const secret = secrets.get(id) ?? [...secrets.values()].find((candidate) => candidate.arn === id);
    if (!secret)
      throw new ServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return secret;
  };

  /** Adds a version (or finds the same one again for a repeated token); the new AWSCURRENT demotes the old one. */
  function putVersion(
    secret: Secret,
    token: string,
    value: { string?: string; binary?: string },
    stages: string[],
  ): Version {
    const existing = secret.versions.find((version) => version.id === token);
    if (existing) {
      if (existing.string !== value.string || existing.binary !== value.binary) {
        throw new ServiceError(
          'ResourceExistsException',
          `You can't modify an existing version, you can only create a new version.`,
        );
      }
      return existing;
    }
    // Each stage names one version: the new one takes its stages from the others; the old AWSCURRENT becomes AWSPREVIOUS.
    const promotes = stages.includes('AWSCURRENT');
    for (const version of secret.versions) {
      const wasCurrent = version.stages.includes('AWSCURRENT');
      version.stages = version.stages.filter(
        (stage) => !stages.includes(stage) && !(promotes && stage === 'AWSPREVIOUS'),
      );
      if (promotes && wasCurrent) version.stages.push('AWSPREVIOUS');
    }
    const version: Version = { id: token, ...value, stages, created: Math.floor(Date.now() / 1000) };
    secret.versions.push(version);
    return version;
  }

  const operations: Record<string, (body: Body) => Body> = {
    CreateSecret(body) {
      const name = requiredString(body, 'Name', 1, 512);
      if (secrets.has(name))
        throw new ServiceError(
          'ResourceExistsException',
          `The operation failed because the secret ${name} already exists.`,
        );
      const kmsKeyId = optionalString(body, 'KmsKeyId', 0, 2048);
      const description = optionalString(body, 'Description', 0, 2048);
      const token = optionalString(body, 'ClientRequestToken', 32, 64) ?? randomUUID();
      const value = secretValue(body, false);
      const secret: Secret = {
        arn: `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-${randomBytes(3).toString('hex')}`,
        name,
        ...(kmsKeyId ? { kmsKeyId } : {}),
        ...(description !== undefined ? { description } : {}),
        versions: [],
      };
      secrets.set(name, secret);
      const hasValue = value.string !== undefined || value.binary !== undefined;
      if (hasValue) putVersion(secret, token, value, ['AWSCURRENT']);
      return { ARN: secret.arn, Name: name, ...(hasValue ? { VersionId: token } : {}) };
    },
    PutSecretValue(body) {
      const secret = find(requiredString(body, 'SecretId'));
      const value = secretValue(body, true);
      const token = optionalString(body, 'ClientRequestToken', 32, 64) ?? randomUUID();
      const stages = body.VersionStages === undefined ? ['AWSCURRENT'] : body.VersionStages;
      if (!Array.isArray(stages) || stages.length === 0 || !stages.every((stage) => typeof stage === 'string')) {
        throw new ServiceError('InvalidParameterException', 'VersionStages must be a non-empty list of strings');
      }
      const version = putVersion(secret, token, value, stages as string[]);
      return { ARN: secret.arn, Name: secret.name, VersionId: version.id, VersionStages: version.stages };
    },
    GetSecretValue(body) {
      const secret = find(requiredString(body, 'SecretId'));
      const versionId = optionalString(body, 'VersionId', 32, 64);
      const stage = optionalString(body, 'VersionStage', 1, 256) ?? (versionId ? undefined : 'AWSCURRENT');
      const version = secret.versions.find(
        (candidate) => (!versionId || candidate.id === versionId) && (!stage || candidate.stages.includes(stage)),
      );
      if (!version)
        throw new ServiceError(
          'ResourceNotFoundException',
          "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
        );
      return {
        ARN: secret.arn,
        Name: secret.name,
        VersionId: version.id,
        ...(version.string !== undefined ? { SecretString: version.string } : { SecretBinary: version.binary }),
        VersionStages: version.stages,
        CreatedDate: version.created,
      };
    },
    DescribeSecret(body) {
      const secret = find(requiredString(body, 'SecretId'));
      return {
        ARN: secret.arn,
        Name: secret.name,
        ...(secret.kmsKeyId ? { KmsKeyId: secret.kmsKeyId } : {}),
        ...(secret.description !== undefined ? { Description: secret.description } : {}),
        VersionIdsToStages: Object.fromEntries(secret.versions.map((version) => [version.id, version.stages])),
      };
    },
  };

  const server = createServer(async (request, response) => {
    const reply = (status: number, body: Body) => {
      response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
      response.end(JSON.stringify(body));
    };
    try {
      const target = String(request.headers['x-amz-target'] ?? '');
      const operation = target.startsWith('secretsmanager.') ? target.slice('secretsmanager.'.length) : '';
      const run = operations[operation];
      if (request.method !== 'POST' || !run)
        throw new ServiceError('UnknownOperationException', `unknown operation ${target}`);
      calls[operation] = (calls[operation] ?? 0) + 1;
      reply(200, run(await readJson(request)));
    } catch (error) {
      if (error instanceof ServiceError) reply(400, { __type: error.type, message: error.message });
      else reply(500, { __type: 'InternalServiceError', message: String(error) });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    secret(id) {
      const secret = secrets.get(id) ?? [...secrets.values()].find((candidate) => candidate.arn === id);
      if (!secret) return undefined;
      const current = secret.versions.find((version) => version.stages.includes('AWSCURRENT'));
      return {
        arn: secret.arn,
        name: secret.name,
        ...(secret.kmsKeyId ? { kmsKeyId: secret.kmsKeyId } : {}),
        ...(current?.string !== undefined ? { current: current.string } : {}),
      };
    },
    stop: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
