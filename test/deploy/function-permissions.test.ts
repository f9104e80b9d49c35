import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Table } from 'sst/constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { META_PK, SECRET_PK, TOKEN_EXPIRY_QUEUE, TOKEN_PK } from '../../packages/core/src/scheduler/keys.ts';
import { allSecretsFamilies, type SecretsFamily, secretsFamilies } from '../../packages/core/src/secrets/families.ts';
import { engineFamilies, engineLeaseTypes, extraReads, periodicQueues } from '../../stacks/families.ts';
import { corePermissions } from '../../stacks/functions.ts';
import { engineJobs } from '../../stacks/Jobs.ts';
import { tableAccessOf } from '../../stacks/permissions.ts';
import { familyHandlers } from '../../stacks/SecretsApi.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { scenarioOf } from './engine-scenarios.ts';
import { driveEveryFunction, type Environment, recordedEnvironment } from './function-calls.ts';
import {
  type AuthorisedRequest,
  authorisedRequestsOf,
  iamActionsOf,
  partitionKeysOf,
  type SentCall,
} from './sdk-recorder.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, asList, resourcesOf, roleStatementsOf } from './template-queries.ts';

/** Function id (as the stacks name it) -> its handler. */
const handlers: Record<string, string> = {
  ...Object.fromEntries(Object.entries(familyHandlers).map(([family, handler]) => [`Secrets-${family}`, handler])),
  'Scheduler-api': 'functions/scheduler/api.handler',
  'Scheduler-event-stream': 'functions/scheduler/event-stream.handler',
  'Scheduler-client': 'functions/scheduler/client.handler',
  'Job-sweep': 'functions/jobs/sweep.handler',
  ...Object.fromEntries(Object.entries(engineJobs).map(([family, handler]) => [`Job-${family}`, handler])),
  'Job-table-stream': 'functions/jobs/table-stream.handler',
  'Job-evaluation-trigger': 'functions/jobs/evaluation-trigger.handler',
  'Deploy-first-tokens': 'functions/deploy/first-tokens.handler',
};

/**
 * The grants stacks/permissions.ts says a function's recorded run does not reach, with the family's scenario's own
 * notes (test/deploy/engine-scenarios.ts, or the generic scenario's) over them: a reason for a grant its run leaves unused, `undefined` for one it
 * uses.
 */
function unrecordedInTheRun(fn: string, declared: Record<string, string>): Record<string, string> {
  const family = fn.slice('Secrets-'.length) as SecretsFamily;
  const notes = fn.startsWith('Secrets-') && family !== 'system' ? (scenarioOf(family).runNotes ?? {}) : {};
  return Object.fromEntries(
    Object.entries({ ...declared, ...notes }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** One synthesised statement on the table or its `due` index, with the partition patterns it is limited to. */
interface TableStatement {
  actions: string[];
  resource: 'table' | 'due';
  /** `ForAllValues:StringLike` on `dynamodb:LeadingKeys`; undefined when the statement has no condition. */
  leadingKeys?: string[];
}

interface Grants {
  tableItems: Set<string>;
  dueIndex: Set<string>;
  statements: TableStatement[];
  /** KMS actions on the data key, with the encryption context they are limited to. */
  dataKey: Set<string>;
  dataKeyContext?: Record<string, string>;
  /** KMS actions a service (Secrets Manager) may use on the function's behalf: `kms:ViaService` -> actions. */
  viaService: Record<string, string[]>;
  other: Set<string>;
}

/**
 * What a function's synthesised role grants: table and index statements (with their key condition), the rest. The
 * function is found by its role's name (`keyhaven.<stage>.<region>.<function id>`): every engine's job has one handler.
 */
function grantsOf(s: Synthesized, functionId: string): Grants {
  const isIt = (template: Synthesized['jobs'], fn: ReturnType<typeof resourcesOf>[number][1]) => {
    const role = Object.fromEntries(resourcesOf(template, 'AWS::IAM::Role'))[
      fn.Properties?.Role?.['Fn::GetAtt']?.[0] ?? ''
    ];
    return String(role?.Properties.RoleName ?? '').endsWith(`.${functionId}`);
  };
  const template = [s.storage, s.secrets, s.scheduler, s.jobs].find((candidate) =>
    appFunctions(candidate).some(([, fn]) => isIt(candidate, fn)),
  );
  if (!template) throw new Error(`no function ${functionId}`);
  const [id] = appFunctions(template).find(([, fn]) => isIt(template, fn)) ?? [];
  const grants: Grants = {
    tableItems: new Set(),
    dueIndex: new Set(),
    statements: [],
    dataKey: new Set(),
    viaService: {},
    other: new Set(),
  };
  const tableStatements = new Map<object, { resource: 'table' | 'due'; actions: string[] }>();
  for (const statement of roleStatementsOf(template, id as string)) {
    expect(statement.Effect).toBe('Allow');
    for (const action of asList(statement.Action) as string[]) {
      if (action.startsWith('kms:')) {
        const via = statement.Condition?.StringEquals?.['kms:ViaService'];
        // The stream function's on-failure destination (S3 under its own key): checked in operations.test.ts.
        if (via?.startsWith('s3.')) continue;
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
      // Its on-failure destination (the failures bucket, issue 25): checked in operations.test.ts.
      if (action === 's3:PutObject' || action === 's3:ListBucket') continue;
      const resources = asList(statement.Resource).map((resource) => JSON.stringify(resource));
      const onIndex = resources.every((resource) => resource.includes('/index/due'));
      const onTable = resources.every((resource) => /Table[0-9A-F]{8}/.test(resource) && !resource.includes('/index/'));
      if (!onIndex && !onTable)
        throw new Error(`${functionId}: ${action} on ${resources.join(', ')} is neither the table nor its due index`);
      (onIndex ? grants.dueIndex : grants.tableItems).add(action);
      tableStatements.set(statement, {
        resource: onIndex ? 'due' : 'table',
        actions: [...(tableStatements.get(statement)?.actions ?? []), action],
      });
    }
  }
  for (const [statement, { resource, actions }] of tableStatements) {
    // Only the one condition the stacks write: any other operator or key would escape the evaluator below.
    const condition = (statement as { Condition?: Record<string, Record<string, string | string[]>> }).Condition;
    if (condition) expect(Object.keys(condition), functionId).toEqual(['ForAllValues:StringLike']);
    if (condition)
      expect(Object.keys(condition['ForAllValues:StringLike'] ?? {}), functionId).toEqual(['dynamodb:LeadingKeys']);
    const keys = condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
    grants.statements.push({ actions, resource, leadingKeys: keys === undefined ? undefined : asList(keys) });
  }
  return grants;
}

const streamActions = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
];

/** IAM's `StringLike`: `*` any run of characters, `?` one, everything else literal and case-sensitive. */
const matchesPattern = (pattern: string, value: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    's',
  ).test(value);

/**
 * Whether the role allows a request, as IAM decides for Allow-only identity policies: some statement names the action
 * on the request's resource and its condition holds. `ForAllValues:StringLike` holds when every leading key of the
 * request matches one of the patterns, and also when the request has none (a `Scan`): hence no role may hold `Scan`.
 */
const allows = (grants: Grants, request: AuthorisedRequest) =>
  grants.statements.some(
    (statement) =>
      statement.resource === request.resource &&
      statement.actions.includes(request.action) &&
      (statement.leadingKeys === undefined ||
        request.leadingKeys.every((key) => statement.leadingKeys?.some((pattern) => matchesPattern(pattern, key)))),
  );

const isRead = (action: string) => ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'].includes(action);

/**
 * Requests each function's role must refuse: the other service's partitions and queues (attacker: an AWS principal
 * holding the function's credentials, e.g. code execution in a compromised engine function), the partitions it only
 * reads (policies, the mount table, the keyring and audit devices in `sys`), the other jobs' queues, and a Scan.
 */
const tableActions = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
];
const anything = (keys: string[]): AuthorisedRequest[] =>
  keys.flatMap((key) => tableActions.map((action) => ({ action, resource: 'table' as const, leadingKeys: [key] })));
const reading = (keys: string[]) => anything(keys).filter((request) => isRead(request.action));
const writing = (keys: string[]) => anything(keys).filter((request) => !isRead(request.action));
const queues = (names: string[]): AuthorisedRequest[] =>
  names.map((name) => ({ action: 'dynamodb:Query', resource: 'due', leadingKeys: [name] }));
const scan: AuthorisedRequest = { action: 'dynamodb:Scan', resource: 'table', leadingKeys: [] };

const schedulerItems = [TOKEN_PK, SECRET_PK, META_PK, 'sched#policy'];
const schedulerQueues = [TOKEN_EXPIRY_QUEUE, `${TOKEN_EXPIRY_QUEUE}#03`];
const uuid = '6a2b9c1e-0000-4000-8000-000000000001';
const secretsItems = [
  'token#0f3a9d',
  'accessor#Kx1Yz',
  'policies',
  'mounts',
  `mount#${uuid}`,
  'leases#07',
  'leases',
  'revoked-leases#07',
  `issued#${uuid}#03`,
  `in-service#${uuid}#03`,
  'password-policies',
];
/** Each family's `due` queues, from what its backends declare: each lease type's expiry queue, its periodic jobs'. */
const engineQueues: Partial<Record<SecretsFamily, string[]>> = Object.fromEntries(
  allSecretsFamilies.map((family) => [
    family,
    [
      ...engineLeaseTypes(family).flatMap((type) => [`expiry:${type}`, `expiry:${type}#03`]),
      ...periodicQueues(family).map((queue) => queue.replace(/#\*$/, '#02')),
    ],
  ]),
);
const tokenQueue = ['expiry', 'expiry#03'];
const allQueues = [...schedulerQueues, ...tokenQueue, ...Object.values(engineQueues).flat()];
const otherEngines = (own: SecretsFamily) =>
  Object.entries(engineQueues).flatMap(([family, names]) => (family === own ? [] : (names ?? [])));
/** The login families (every backend of kind `auth`): their functions log in, and serve no engine's mount. */
const loginFamilies = allSecretsFamilies.filter(
  (family) => family !== 'system' && secretsFamilies[family].every((backend) => backend.kind === 'auth'),
);

function refused(fn: string): AuthorisedRequest[] {
  const onlyRead = writing(['sys', 'policies', 'password-policies']);
  // A family's function or job, by what the family serves: its login methods, an engine, an engine's job.
  const family = fn.slice(fn.indexOf('-') + 1) as SecretsFamily;
  const group =
    fn.startsWith('Secrets-') && loginFamilies.includes(family)
      ? 'Secrets-login'
      : fn.startsWith('Secrets-') && engineFamilies.includes(family)
        ? 'Secrets-engine'
        : fn.startsWith('Job-') && family in engineJobs
          ? 'Job-engine'
          : fn;
  switch (group) {
    case 'Secrets-system':
      return [...anything(schedulerItems), ...queues(allQueues), scan];
    case 'Secrets-login':
      return [
        ...anything(schedulerItems),
        ...onlyRead,
        ...writing(['mounts']),
        ...reading(['leases#07', 'accessor#Kx1Yz']),
        ...queues(allQueues),
        scan,
      ];
    case 'Secrets-engine':
      return [
        ...anything(schedulerItems),
        ...onlyRead,
        ...anything([`in-service#${uuid}#03`]),
        ...reading(['accessor#Kx1Yz', `issued#${uuid}#03`]),
        ...queues(allQueues),
        scan,
      ];
    case 'Scheduler-api':
    case 'Scheduler-event-stream':
    case 'Scheduler-client':
    case 'Job-evaluation-trigger':
      return [...anything(secretsItems), ...writing(['sys']), ...queues(allQueues), scan];
    case 'Job-sweep':
      return [
        ...anything(['policies', 'password-policies', `in-service#${uuid}#03`]),
        ...writing(['sys']),
        ...queues([...otherEngines('kv')]),
        scan,
      ];
    case 'Job-engine': {
      // Beside the other engines' queues: what its periodic jobs do not declare they read (the directory's job reads
      // the password policies).
      const jobReads = Object.keys(extraReads(family, 'job'));
      const items = [
        ...schedulerItems,
        'policies',
        'accessor#Kx1Yz',
        `issued#${uuid}#03`,
        `in-service#${uuid}#03`,
        'password-policies',
      ].filter((item) => !jobReads.includes(item));
      return [
        ...anything(items),
        ...writing(['sys']),
        ...queues([...schedulerQueues, ...tokenQueue, ...otherEngines(family)]),
        scan,
      ];
    }
    case 'Job-table-stream':
      return [
        ...anything([...schedulerItems, `mount#${uuid}`, 'policies', 'password-policies', `in-service#${uuid}#03`]),
        ...writing(['sys', 'mounts']),
        ...queues(allQueues),
        scan,
      ];
    case 'Deploy-first-tokens':
      return [
        ...anything([
          `mount#${uuid}`,
          'policies',
          'mounts',
          'leases#07',
          'revoked-leases#07',
          `in-service#${uuid}#03`,
          'password-policies',
        ]),
        ...queues(allQueues),
        scan,
      ];
    default:
      throw new Error(`no refusals listed for ${fn}`);
  }
}

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

  for (const fn of Object.keys(handlers)) {
    it(`${fn}: table and due-index actions are exactly those it sent; every request it sent is allowed, key by key`, () => {
      const calls = recorded(fn);
      expect(calls.length, `${fn} made no AWS call: the scenario does not reach it`).toBeGreaterThan(0);
      const dynamo = calls.filter((call) => call.service === 'DynamoDB');
      const onIndex = (call: SentCall) => call.operation === 'Query' && call.input.IndexName !== undefined;
      const needed = {
        tableItems: new Set(dynamo.filter((call) => !onIndex(call)).flatMap(iamActionsOf)),
        dueIndex: new Set(dynamo.filter(onIndex).flatMap(iamActionsOf)),
      };
      const granted = grantsOf(s, fn);
      expect([...granted.tableItems].sort()).toEqual([...needed.tableItems].sort());
      expect([...granted.dueIndex].sort()).toEqual([...needed.dueIndex].sort());
      for (const call of dynamo.filter(onIndex)) expect(call.input.IndexName).toBe('due');
      for (const request of dynamo.flatMap(authorisedRequestsOf)) {
        expect(
          allows(granted, request),
          `${fn} was refused ${request.action} on the ${request.resource}, ${request.leadingKeys.join(', ')}`,
        ).toBe(true);
      }
    });

    it(`${fn}: every statement on the table or its index is limited to partition patterns, each used or its need written down`, () => {
      const granted = grantsOf(s, fn);
      const access = tableAccessOf(fn);
      expect(granted.statements.length).toBeGreaterThan(0);
      const unrecorded = unrecordedInTheRun(fn, access.unrecorded ?? {});
      for (const statement of granted.statements) {
        expect(
          statement.leadingKeys,
          `${fn}: ${statement.actions.join(', ')} on the ${statement.resource} without dynamodb:LeadingKeys`,
        ).toBeDefined();
        // ForAllValues holds for a request without any leading key: a Scan (or PartiQL) would read every partition.
        for (const action of statement.actions)
          expect(['dynamodb:Scan', 'dynamodb:PartiQLSelect'], fn).not.toContain(action);
      }
      const requests = recorded(fn).flatMap(authorisedRequestsOf);
      const touched = (kind: 'read' | 'write' | 'due', pattern: string) =>
        requests.some(
          (request) =>
            (kind === 'due'
              ? request.resource === 'due'
              : request.resource === 'table' && isRead(request.action) === (kind === 'read')) &&
            request.leadingKeys.some((key) => matchesPattern(pattern, key)),
        );
      const declared = { read: access.reads, write: access.writes, due: access.dueQueues ?? [] };
      for (const [kind, patterns] of Object.entries(declared) as Array<['read' | 'write' | 'due', string[]]>) {
        for (const pattern of patterns) {
          if (unrecorded[`${kind}:${pattern}`] === undefined)
            expect(touched(kind, pattern), `${fn} may ${kind} ${pattern} but never did, and no reason is given`).toBe(
              true,
            );
          else expect(touched(kind, pattern), `${fn} does ${kind} ${pattern}: drop it from unrecorded`).toBe(false);
        }
      }
      for (const [entry, reason] of Object.entries(unrecorded)) {
        const kind = entry.slice(0, entry.indexOf(':')) as 'read' | 'write' | 'due';
        expect(declared[kind] ?? [], `${fn}: unrecorded ${entry} is not granted`).toContain(
          entry.slice(entry.indexOf(':') + 1),
        );
        expect(reason.length, entry).toBeGreaterThan(20);
      }
      // The synthesised role holds what permissions.ts declares (the checks above read the one, the evaluator the other).
      const patternsOf = (resource: 'table' | 'due', read: boolean) =>
        [
          ...new Set(
            granted.statements
              .filter((st) => st.resource === resource && st.actions.some((action) => isRead(action) === read))
              .flatMap((st) => st.leadingKeys ?? []),
          ),
        ].sort();
      expect(patternsOf('table', true)).toEqual([...access.reads].sort());
      expect(patternsOf('table', false)).toEqual([...access.writes].sort());
      expect(patternsOf('due', true)).toEqual([...(access.dueQueues ?? [])].sort());
    });

    it(`${fn}: the role refuses the partitions and queues it has no business in (the other service's, what it only reads)`, () => {
      const granted = grantsOf(s, fn);
      const probes = refused(fn);
      expect(probes.length, fn).toBeGreaterThan(0);
      for (const request of probes) {
        expect(
          allows(granted, request),
          `${fn} may ${request.action} on the ${request.resource}, ${request.leadingKeys.join(', ')}`,
        ).toBe(false);
      }
      // Not vacuous: what the function did is allowed beside those refusals, and one refused key refuses a whole batch.
      const sent = recorded(fn).flatMap(authorisedRequestsOf);
      expect(sent.length > 0 && sent.every((request) => allows(granted, request)), fn).toBe(true);
      const read = sent.find((request) => request.resource === 'table' && request.action === 'dynamodb:GetItem');
      const foreign = probes.find((probe) => probe.resource === 'table' && probe.action === 'dynamodb:GetItem');
      if (read && foreign) {
        expect(
          allows(granted, { ...read, action: 'dynamodb:BatchGetItem' }) ||
            !granted.tableItems.has('dynamodb:BatchGetItem'),
          fn,
        ).toBe(true);
        expect(
          allows(granted, {
            action: 'dynamodb:BatchGetItem',
            resource: 'table',
            leadingKeys: [...read.leadingKeys, ...foreign.leadingKeys],
          }),
          fn,
        ).toBe(false);
      }
    });

    it(`${fn}: KMS actions on the data key exactly those it sent, under the context it sent; Lambda and Secrets Manager likewise`, () => {
      const calls = recorded(fn);
      const granted = grantsOf(s, fn);
      const kms = calls.filter((call) => call.service === 'KMS');
      expect([...granted.dataKey].sort()).toEqual([...new Set(kms.flatMap(iamActionsOf))].sort());
      for (const call of kms) {
        const context = Object.fromEntries(
          Object.entries(call.input.EncryptionContext ?? {}).map(([key, value]) => [
            `kms:EncryptionContext:${key}`,
            value,
          ]),
        );
        expect(granted.dataKeyContext, `${fn} ${call.operation}`).toEqual(context);
      }
      const others = calls.filter((call) => call.service === 'Lambda' || call.service === 'SecretsManager');
      expect([...granted.other].sort()).toEqual([...new Set(others.flatMap(iamActionsOf))].sort());
      // Secrets Manager encrypts what it is given under the stage's key with the caller's permission.
      const puts = others.some((call) => call.operation === 'PutSecretValue');
      expect(granted.viaService).toEqual(
        puts ? { 'secretsmanager.us-east-1.amazonaws.com': ['kms:GenerateDataKey'] } : {},
      );
    });
  }

  it('the scheduler functions and the stream function never touch a secrets engine item (mount#…)', () => {
    for (const fn of [
      'Scheduler-api',
      'Scheduler-event-stream',
      'Scheduler-client',
      'Job-table-stream',
      'Job-evaluation-trigger',
    ]) {
      const keys = recorded(fn)
        .filter((call) => call.service === 'DynamoDB')
        .flatMap((call) => partitionKeysOf(call).keys);
      expect(
        keys.filter((key) => key.startsWith('mount#')),
        fn,
      ).toEqual([]);
      expect(
        grantsOf(s, fn).statements.every((statement) => statement.leadingKeys !== undefined),
        fn,
      ).toBe(true);
    }
  });
});

describe('a stage whose first request makes the data key (firstTokens "http", a dev stage)', () => {
  const table = { tableArn: 'arn:aws:dynamodb:us-east-1:123456789012:table/keyhaven' } as Table;
  const sealingKey = { keyArn: 'arn:aws:kms:us-east-1:123456789012:key/k' } as IKey;
  const putsKeyring = (statements: ReturnType<typeof corePermissions>) =>
    statements.some((statement) => {
      const json = statement.toJSON();
      return (
        asList(json.Action).includes('dynamodb:PutItem') &&
        asList(json.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys']).includes('sys')
      );
    });

  it('lets every function put the keyring into sys (any may be first), and no other partition beyond its own', () => {
    const dev = stageConfig('dev-alice', 'us-east-1');
    expect(dev.firstTokens).toBe('http');
    for (const fn of Object.keys(handlers)) {
      const statements = corePermissions(fn, { table, sealingKey, config: dev });
      expect(putsKeyring(statements), fn).toBe(true);
      // Beside its prod grants, only that put: the same statements otherwise.
      const prod = corePermissions(fn, { table, sealingKey, config: stageConfig('prod', 'us-east-1') }).map(
        (statement) => JSON.stringify(statement.toJSON()),
      );
      const added = statements
        .map((statement) => statement.toJSON())
        .filter(
          (json) =>
            !prod.includes(JSON.stringify(json)) &&
            !asList(json.Action).some((action) => String(action).startsWith('kms:')),
        );
      for (const json of added) {
        expect(asList(json.Action), fn).toEqual(['dynamodb:PutItem']);
        expect(json.Condition['ForAllValues:StringLike']['dynamodb:LeadingKeys'], fn).toEqual(['sys']);
      }
    }
  });

  it('a stage with deploy-time tokens lets only the functions that write sys put into it', () => {
    const prod = stageConfig('prod', 'us-east-1');
    expect(prod.firstTokens).toBe('deploy');
    const writers = Object.keys(handlers).filter((fn) =>
      putsKeyring(corePermissions(fn, { table, sealingKey, config: prod })),
    );
    expect(writers.sort()).toEqual(['Deploy-first-tokens', 'Secrets-system']);
  });
});
