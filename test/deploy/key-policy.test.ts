import { KMSClient } from '@aws-sdk/client-kms';
import { App, Stack } from 'aws-cdk-lib';
import type { Stack as SstStack } from 'sst/constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kmsKeySource } from '../../packages/core/src/storage/keyring.ts';
import { dataKeyContext } from '../../stacks/functions.ts';
import { keyAdminActions, sealingKeyPolicy } from '../../stacks/Storage.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type KmsEmulator, startKmsEmulator } from '../emulators/kms.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, asList, resourcesOf, roleStatementsOf, sealingKeyOf, single } from './template-queries.ts';

const account = '123456789012';
const root = { AWS: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::${account}:root`]] } };

type Statement = {
  Sid: string;
  Effect: string;
  Principal: unknown;
  Action: string | string[];
  Resource: string;
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped
  Condition?: any;
};

/** An `ArnLike` pattern as IAM matches it (`*` any run of characters, `?` one), over `arn:aws:…`. */
function arnLike(pattern: unknown, arn: string): boolean {
  const text = resolvePartition(pattern);
  return new RegExp(
    `^${text
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  ).test(arn);
}

/** `{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, "…"]]}` -> `arn:aws:…`. */
function resolvePartition(value: unknown): string {
  if (typeof value === 'string') return value;
  const parts = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  return parts
    .map((part) =>
      typeof part === 'string' ? part : (part as { Ref: string }).Ref === 'AWS::Partition' ? 'aws' : '<unresolved>',
    )
    .join('');
}

describe('the sealing key policy (stage "prod", first tokens made at deploy time)', () => {
  let s: Synthesized;
  let statements: Statement[];
  beforeAll(async () => {
    s = await synthesize('prod');
    statements = sealingKeyOf(s.storage)[1].Properties.KeyPolicy.Statement;
  }, 120_000);

  const bySid = (sid: string) => statements.find((statement) => statement.Sid === sid) as Statement;

  /** Every IAM role the app synthesises, with the ARN it gets: its explicit name, or CloudFormation's `<stack>-<id>-<suffix>`. */
  const roles = () =>
    (['storage', 'secrets', 'scheduler', 'jobs', 'audit'] as const).flatMap((which) => {
      const template = s[which];
      const functionRoles = new Set(
        appFunctions(template).map(([, fn]) => fn.Properties.Role['Fn::GetAtt'][0] as string),
      );
      const handlerOf = Object.fromEntries(
        appFunctions(template).map(([, fn]) => [fn.Properties.Role['Fn::GetAtt'][0], fn.Properties.Handler]),
      );
      return resourcesOf(template, 'AWS::IAM::Role').map(([id, role]) => ({
        id,
        handler: handlerOf[id] as string | undefined,
        isFunctionRole: functionRoles.has(id),
        arn: `arn:aws:iam::${account}:role/${role.Properties.RoleName ?? `prod-keyhaven-${which}-${id}-A1B2C3D4E5F6`}`,
      }));
    });

  it('lets the account administer the key and nothing more, and names no other principal', () => {
    expect(statements.map((statement) => statement.Sid)).toEqual([
      'KeyAdministration',
      'DecryptDataKey',
      'GenerateDataKey',
      'FirstTokensSecret',
      'SecretsManagerDescribe',
    ]);
    for (const statement of statements) {
      expect(statement.Effect).toBe('Allow');
      expect(statement.Principal).toEqual(root);
      expect(statement.Resource).toBe('*');
    }
    const admin = bySid('KeyAdministration');
    expect(admin.Action).toEqual(keyAdminActions);
    expect(admin.Condition).toBeUndefined();
    // No wildcard in the administration actions reaches a use of the key.
    for (const use of [
      'kms:Decrypt',
      'kms:Encrypt',
      'kms:GenerateDataKey',
      'kms:ReEncryptFrom',
      'kms:ReEncryptTo',
      'kms:GenerateDataKeyWithoutPlaintext',
    ]) {
      expect(
        asList(admin.Action).some((action) => arnLike(action, use)),
        use,
      ).toBe(false);
    }
    // Every statement that allows a use of the key is limited to named roles or to Secrets Manager for one secret.
    for (const statement of statements.filter(
      (candidate) => candidate.Sid !== 'KeyAdministration' && candidate.Sid !== 'SecretsManagerDescribe',
    )) {
      const limited =
        statement.Condition?.ArnLike?.['aws:PrincipalArn'] ??
        statement.Condition?.StringLike?.['kms:EncryptionContext:SecretARN'];
      expect(limited, statement.Sid).toBeDefined();
    }
    expect(bySid('SecretsManagerDescribe').Action).toBe('kms:DescribeKey');
  });

  it("grants Decrypt to every function role of the stage and to no other role, under the keyring's encryption context", () => {
    const decrypt = bySid('DecryptDataKey');
    expect(decrypt.Action).toBe('kms:Decrypt');
    expect(decrypt.Condition.StringEquals).toEqual(dataKeyContext);
    const all = roles();
    const functionCount = [s.storage, s.secrets, s.scheduler, s.jobs, s.audit].reduce(
      (sum, template) => sum + appFunctions(template).length,
      0,
    );
    expect(functionCount).toBe(16); // with Job-evaluation-trigger (4f362f3)
    expect(all.filter((role) => role.isFunctionRole)).toHaveLength(functionCount);
    for (const role of all)
      expect(arnLike(decrypt.Condition.ArnLike['aws:PrincipalArn'], role.arn), role.arn).toBe(role.isFunctionRole);
    // Nor the same functions' roles of another stage or region.
    expect(
      arnLike(
        decrypt.Condition.ArnLike['aws:PrincipalArn'],
        `arn:aws:iam::${account}:role/keyhaven.prod-2.us-east-1.Secrets-kv`,
      ),
    ).toBe(false);
    expect(
      arnLike(
        decrypt.Condition.ArnLike['aws:PrincipalArn'],
        `arn:aws:iam::${account}:role/keyhaven.prod.eu-west-1.Secrets-kv`,
      ),
    ).toBe(false);
  });

  it('grants GenerateDataKey only to the first-tokens resource role, under the same context', () => {
    const generate = bySid('GenerateDataKey');
    expect(generate.Action).toBe('kms:GenerateDataKey');
    expect(generate.Condition.StringEquals).toEqual(dataKeyContext);
    const matched = roles().filter((role) => arnLike(generate.Condition.ArnLike['aws:PrincipalArn'], role.arn));
    expect(matched.map((role) => role.handler)).toEqual(['functions/deploy/first-tokens.handler']);
  });

  it("the key policy's context is the one each function role is granted (function-permissions.test.ts: what they send)", () => {
    for (const template of [s.storage, s.secrets, s.scheduler, s.jobs]) {
      for (const [id, fn] of appFunctions(template)) {
        const onKey = roleStatementsOf(template, id).filter(
          (statement) =>
            asList(statement.Action).some((action) => String(action).startsWith('kms:')) &&
            !statement.Condition?.StringEquals?.['kms:ViaService'],
        );
        expect(onKey, fn.Properties.Handler).toHaveLength(1);
        expect(onKey[0].Condition.StringEquals, fn.Properties.Handler).toEqual(
          bySid('DecryptDataKey').Condition.StringEquals,
        );
      }
    }
  });

  it('lets Secrets Manager use the key for the first-tokens secret only, which is named so the policy can say so', () => {
    const secret = single(s.storage, 'AWS::SecretsManager::Secret');
    expect(secret.Properties.Name).toBe('keyhaven/prod/first-tokens');
    const statement = bySid('FirstTokensSecret');
    expect(statement.Action).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
    expect(statement.Condition.StringEquals).toEqual({ 'kms:ViaService': 'secretsmanager.us-east-1.amazonaws.com' });
    const pattern = statement.Condition.StringLike['kms:EncryptionContext:SecretARN'];
    expect(
      arnLike(pattern, `arn:aws:secretsmanager:us-east-1:${account}:secret:keyhaven/prod/first-tokens-Ab12Cd`),
    ).toBe(true);
    expect(
      arnLike(pattern, `arn:aws:secretsmanager:us-east-1:${account}:secret:keyhaven/prod/first-tokens-other-Ab12Cd`),
    ).toBe(false);
    expect(arnLike(pattern, `arn:aws:secretsmanager:us-east-1:${account}:secret:other-Ab12Cd`)).toBe(false);
  });
});

describe('the sealing key policy where the first tokens are made over HTTP (a dev stage)', () => {
  it('grants GenerateDataKey, like Decrypt, to every function role of the stage, and has no Secrets Manager statement', () => {
    const stack = Object.assign(new Stack(new App(), 'Storage', { env: { account, region: 'us-east-1' } }), {
      stage: 'dev-alice',
    }) as unknown as SstStack;
    const config = stageConfig('dev-alice', 'us-east-1');
    expect(config.firstTokens).toBe('http');
    const resolved = stack.resolve(sealingKeyPolicy(stack, config).toJSON()) as { Statement: Statement[] };
    expect(resolved.Statement.map((statement) => statement.Sid)).toEqual([
      'KeyAdministration',
      'DecryptDataKey',
      'GenerateDataKey',
    ]);
    const [, decrypt, generate] = resolved.Statement as [Statement, Statement, Statement];
    expect(generate.Condition).toEqual(decrypt.Condition);
    expect(
      arnLike(
        generate.Condition.ArnLike['aws:PrincipalArn'],
        `arn:aws:iam::${account}:role/keyhaven.dev-alice.us-east-1.Secrets-system`,
      ),
    ).toBe(true);
    expect(
      arnLike(
        generate.Condition.ArnLike['aws:PrincipalArn'],
        `arn:aws:iam::${account}:role/keyhaven.prod.us-east-1.Secrets-system`,
      ),
    ).toBe(false);
  });
});

describe('the replica key policy (a stage in two regions, deployed in its replica region)', () => {
  it("lets only that region's function roles unwrap the data key, and no one create one", () => {
    const stack = Object.assign(new Stack(new App(), 'Storage', { env: { account, region: 'eu-west-1' } }), {
      stage: 'example-multi-region',
    }) as unknown as SstStack;
    const config = stageConfig('example-multi-region', 'eu-west-1');
    const resolved = stack.resolve(sealingKeyPolicy(stack, config).toJSON()) as { Statement: Statement[] };
    expect(resolved.Statement.map((statement) => statement.Sid)).toEqual(['KeyAdministration', 'DecryptDataKey']);
    const pattern = resolved.Statement[1]?.Condition.ArnLike['aws:PrincipalArn'];
    expect(
      arnLike(pattern, `arn:aws:iam::${account}:role/keyhaven.example-multi-region.eu-west-1.Scheduler-event-stream`),
    ).toBe(true);
    expect(
      arnLike(pattern, `arn:aws:iam::${account}:role/keyhaven.example-multi-region.us-east-1.Scheduler-event-stream`),
    ).toBe(false);
    expect(resolved.Statement[1]?.Condition.StringEquals).toEqual(dataKeyContext);
  });
});

describe('the primary key policy of a stage with replica regions', () => {
  it('also lets the account replicate the key (the replica region deploy makes its replica), still without using it', () => {
    const stack = Object.assign(new Stack(new App(), 'Storage', { env: { account, region: 'us-east-1' } }), {
      stage: 'example-multi-region',
    }) as unknown as SstStack;
    const resolved = stack.resolve(
      sealingKeyPolicy(stack, stageConfig('example-multi-region', 'us-east-1')).toJSON(),
    ) as { Statement: Statement[] };
    expect(resolved.Statement.map((statement) => statement.Sid)).toEqual([
      'KeyAdministration',
      'DecryptDataKey',
      'GenerateDataKey',
    ]);
    expect(resolved.Statement[0]?.Action).toEqual([...keyAdminActions, 'kms:ReplicateKey']);
  });
});

describe("the keyring's KMS calls carry the context the key policy requires", () => {
  let kms: KmsEmulator;
  beforeAll(async () => {
    kms = await startKmsEmulator();
  });
  afterAll(() => kms?.stop());

  it('GenerateDataKey and Decrypt of the data key send exactly purpose=keyhaven-data-key', async () => {
    const client = new KMSClient({
      endpoint: kms.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const sent: Array<{ operation: string; context: unknown }> = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push({
          operation: String(context.commandName),
          context: (args.input as { EncryptionContext?: unknown }).EncryptionContext,
        });
        return next(args);
      },
      { step: 'initialize' },
    );
    const source = kmsKeySource({ keyId: await kms.createKey(), client });
    const { plain, wrapped } = await source.generate();
    expect(Buffer.from(await source.unwrap(wrapped))).toEqual(Buffer.from(plain));
    const asCondition = (context: unknown) =>
      Object.fromEntries(
        Object.entries(context as Record<string, string>).map(([key, value]) => [
          `kms:EncryptionContext:${key}`,
          value,
        ]),
      );
    expect(sent.map((call) => call.operation)).toEqual(['GenerateDataKeyCommand', 'DecryptCommand']);
    for (const call of sent) expect(asCondition(call.context)).toEqual(dataKeyContext);
  });
});
