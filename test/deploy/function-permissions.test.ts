import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineJobs } from '../../stacks/Jobs.ts';
import { familyHandlers } from '../../stacks/SecretsApi.ts';
import { driveEveryFunction, type Environment, recordedEnvironment } from './function-calls.ts';
import { iamActionsOf, partitionKeysOf, type SentCall } from './sdk-recorder.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, asList, roleStatementsOf } from './template-queries.ts';

/** Function id (as the stacks name it) -> its handler. */
const handlers: Record<string, string> = {
  ...Object.fromEntries(Object.entries(familyHandlers).map(([family, handler]) => [`Secrets-${family}`, handler])),
  'Scheduler-api': 'functions/scheduler/api.handler',
  'Scheduler-event-stream': 'functions/scheduler/event-stream.handler',
  'Job-sweep': 'functions/jobs/sweep.handler',
  ...Object.fromEntries(Object.entries(engineJobs).map(([family, handler]) => [`Job-${family}`, handler])),
  'Job-table-stream': 'functions/jobs/table-stream.handler',
  'Deploy-first-tokens': 'functions/deploy/first-tokens.handler',
};

interface Grants {
  tableItems: Set<string>;
  dueIndex: Set<string>;
  leadingKeys?: string[];
  /** KMS actions on the data key, with the encryption context they are limited to. */
  dataKey: Set<string>;
  dataKeyContext?: Record<string, string>;
  /** KMS actions a service (Secrets Manager) may use on the function's behalf: `kms:ViaService` -> actions. */
  viaService: Record<string, string[]>;
  other: Set<string>;
}

/** What a function's synthesised role grants: table item actions (and their key condition), index actions, the rest. */
function grantsOf(s: Synthesized, handler: string): Grants {
  const template = [s.storage, s.secrets, s.scheduler, s.jobs].find((candidate) => appFunctions(candidate).some(([, fn]) => fn.Properties.Handler === handler));
  if (!template) throw new Error(`no function with handler ${handler}`);
  const [id] = appFunctions(template).find(([, fn]) => fn.Properties.Handler === handler) ?? [];
  const grants: Grants = { tableItems: new Set(), dueIndex: new Set(), dataKey: new Set(), viaService: {}, other: new Set() };
  for (const statement of roleStatementsOf(template, id as string)) {
    expect(statement.Effect).toBe('Allow');
    for (const action of asList(statement.Action) as string[]) {
      if (action.startsWith('kms:')) {
        const via = statement.Condition?.StringEquals?.['kms:ViaService'];
        if (via) grants.viaService[via] = [...(grants.viaService[via] ?? []), action];
        else {
          grants.dataKey.add(action);
          grants.dataKeyContext = statement.Condition?.StringEquals;
        }
        continue;
      }
      if (action.startsWith('lambda:') || action.startsWith('secretsmanager:')) {
        grants.other.add(action);
        continue;
      }
      // The stream function's event source (the stream, its dead-letter queue): granted by CDK, checked in synthesis.test.ts.
      if (action.startsWith('sqs:') || streamActions.includes(action)) continue;
      const resources = asList(statement.Resource).map((resource) => JSON.stringify(resource));
      if (resources.every((resource) => resource.includes('/index/due'))) grants.dueIndex.add(action);
      else if (resources.every((resource) => /Table[0-9A-F]{8}/.test(resource) && !resource.includes('/index/'))) {
        grants.tableItems.add(action);
        const keys = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
        if (keys) grants.leadingKeys = keys;
      } else {
        throw new Error(`${handler}: ${action} on ${resources.join(', ')} is neither the table nor its due index`);
      }
    }
  }
  return grants;
}

const streamActions = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];

const matchesPattern = (pattern: string, value: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(value);

describe('each function is granted what it sends, and nothing more (recorded from running every function, stage "prod")', () => {
  let s: Synthesized;
  let env: Environment & { calls: SentCall[] };

  beforeAll(async () => {
    env = await recordedEnvironment();
    // Synthesis first (it bundles with esbuild, CPU-bound), then the functions.
    s = await synthesize('prod');
    await driveEveryFunction(env);
  }, 240_000);
  afterAll(() => env?.close());

  const recorded = (fn: string) => env.calls.filter((call) => call.fn === fn);

  for (const [fn, handler] of Object.entries(handlers)) {
    it(`${fn}: table and due-index actions are exactly those it sent; every partition key it touched is allowed`, () => {
      const calls = recorded(fn);
      expect(calls.length, `${fn} made no AWS call: the scenario does not reach it`).toBeGreaterThan(0);
      const dynamo = calls.filter((call) => call.service === 'DynamoDB');
      const onIndex = (call: SentCall) => call.operation === 'Query' && call.input.IndexName !== undefined;
      const needed = {
        tableItems: new Set(dynamo.filter((call) => !onIndex(call)).flatMap(iamActionsOf)),
        dueIndex: new Set(dynamo.filter(onIndex).flatMap(iamActionsOf)),
      };
      const granted = grantsOf(s, handler);
      expect([...granted.tableItems].sort()).toEqual([...needed.tableItems].sort());
      expect([...granted.dueIndex].sort()).toEqual([...needed.dueIndex].sort());
      for (const call of dynamo.filter(onIndex)) expect(call.input.IndexName).toBe('due');

      if (granted.leadingKeys) {
        const touched = new Set(dynamo.flatMap((call) => partitionKeysOf(call).keys));
        for (const key of touched) {
          expect(granted.leadingKeys.some((pattern) => matchesPattern(pattern, key)), `${fn} touched partition ${key}`).toBe(true);
        }
        for (const pattern of granted.leadingKeys) {
          expect([...touched].some((key) => matchesPattern(pattern, key)), `${fn} is allowed ${pattern} but never touched it`).toBe(true);
        }
      }
    });

    it(`${fn}: KMS actions on the data key exactly those it sent, under the context it sent; Lambda and Secrets Manager likewise`, () => {
      const calls = recorded(fn);
      const granted = grantsOf(s, handler);
      const kms = calls.filter((call) => call.service === 'KMS');
      expect([...granted.dataKey].sort()).toEqual([...new Set(kms.flatMap(iamActionsOf))].sort());
      for (const call of kms) {
        const context = Object.fromEntries(Object.entries(call.input.EncryptionContext ?? {}).map(([key, value]) => [`kms:EncryptionContext:${key}`, value]));
        expect(granted.dataKeyContext, `${fn} ${call.operation}`).toEqual(context);
      }
      const others = calls.filter((call) => call.service === 'Lambda' || call.service === 'SecretsManager');
      expect([...granted.other].sort()).toEqual([...new Set(others.flatMap(iamActionsOf))].sort());
      // Secrets Manager encrypts what it is given under the stage's key with the caller's permission.
      const puts = others.some((call) => call.operation === 'PutSecretValue');
      expect(granted.viaService).toEqual(puts ? { 'secretsmanager.us-east-1.amazonaws.com': ['kms:GenerateDataKey'] } : {});
    });
  }

  it('the scheduler functions and the stream function never touch a secrets engine item (mount#…)', () => {
    for (const fn of ['Scheduler-api', 'Scheduler-event-stream', 'Job-table-stream']) {
      const keys = recorded(fn)
        .filter((call) => call.service === 'DynamoDB')
        .flatMap((call) => partitionKeysOf(call).keys);
      expect(keys.filter((key) => key.startsWith('mount#')), fn).toEqual([]);
      expect(grantsOf(s, handlers[fn] as string).leadingKeys, fn).toBeDefined();
    }
  });
});
