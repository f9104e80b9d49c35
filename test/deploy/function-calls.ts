import { generateKeyPairSync } from 'node:crypto';
import { Writable } from 'node:stream';
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SignJWT } from 'jose';
import { expect, vi } from 'vitest';
import { PlanApplier } from '../../packages/core/src/scheduler/cluster/evaluations/plan-apply.ts';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { coreBaseFromEnvironment } from '../../packages/core/src/entry-points/shared-core-from-environment.ts';
import { allocationOf, webJob } from '../support/cluster-allocations.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';
import { allSecretsFamilies, backendsOf, type SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import { leasePk } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type GoogleEmulator, startGoogleEmulator } from '../emulators/google.ts';
import { type KmsEmulator, startKmsEmulator } from '../emulators/kms.ts';
import { type InvokedHandler, type LambdaEmulator, startLambdaEmulator } from '../emulators/lambda.ts';
import { type SecretsManagerEmulator, startSecretsManagerEmulator } from '../emulators/secrets-manager.ts';
import { useEmulatedGoogle } from '../support/cloud-engine.ts';
import { engineFamilies, engineJobs } from '../../stacks/families.ts';
import { declaredMountsEnv, defaultMounts, familyOfType } from '../../stacks/stage-config.ts';
import { type Slapd, startSlapd } from '../support/slapd.ts';
import { mountsToEnable } from '../support/secrets-routes.ts';
import { type Handler, scenarioOf } from './engine-scenarios.ts';
import {
  deployedEnvironment,
  engineJob,
  httpApiEvent,
  invoke,
  lambdaContext,
  scheduledEvent,
  secretsFunction,
  standInAwsLambda,
  startCloudFormationResponses,
  itemWritten,
  ttlRemoval,
} from './lambda-events.ts';
import { asFunction, installSdkRecorder, recordedAs, type SentCall } from './sdk-recorder.ts';

/** The families the run drives through their scenarios (test/deploy/engine-scenarios.ts): every one but `system`. */
const scenarioFamilies = allSecretsFamilies.filter((family) => family !== 'system');

/**
 * The engine functions the system function invokes (`KEYHAVEN_ENGINE_FUNCTIONS`: mount type -> function), as the stack
 * names them: every engine backend's type, to its family's function.
 */
const engineFunctions: Record<string, string> = Object.fromEntries(
  backendsOf(engineFamilies).map((backend) => [backend.type, `Secrets-${familyOfType[backend.type]}`]),
);

export interface Environment {
  client: DynamoDBClient;
  tableName: string;
  kms: KmsEmulator;
  consul: ConsulEmulator;
  slapd: Slapd;
  google: GoogleEmulator;
  lambda: LambdaEmulator;
  secretsManager: SecretsManagerEmulator;
  cloudFormation: Awaited<ReturnType<typeof startCloudFormationResponses>>;
  close(): Promise<void>;
}

/**
 * The deployed environment with every AWS call recorded: DynamoDB Local, the KMS emulator holding the stage's key
 * (so the keyring goes through KMS as in AWS), the Lambda emulator in front of the engine functions, and a
 * Consul emulator for the mesh engine.
 */
export async function recordedEnvironment(): Promise<Environment & { calls: SentCall[] }> {
  const calls = installSdkRecorder();
  standInAwsLambda();
  const { client, tableName } = await deployedEnvironment();
  const kms = await startKmsEmulator();
  process.env.KEYHAVEN_KMS_KEY_ID = await kms.createKey();
  process.env.KEYHAVEN_KMS_ENDPOINT = kms.endpoint;
  process.env.KEYHAVEN_JOB_RUN_MS = '0';
  process.env.KEYHAVEN_STREAM_LIMIT_MS = '300';
  process.env.KEYHAVEN_DECLARED_MOUNTS = declaredMountsEnv(defaultMounts);
  const [consul, slapd, google] = await Promise.all([startConsulEmulator(), startSlapd(), startGoogleEmulator()]);
  google.addProject('proj-1');
  // The operator's configuration of the cloud function: where it calls Google (as the stage config sets it).
  useEmulatedGoogle(google);
  const secrets = async (family: string) => (await secretsFunction(family)) as unknown as Handler;
  const lambda = await startLambdaEmulator(
    Object.fromEntries(
      await Promise.all(
        engineFamilies.map(
          async (family) =>
            [`Secrets-${family}`, recordedAs(`Secrets-${family}`, (await secrets(family)) as InvokedHandler)] as const,
        ),
      ),
    ),
  );
  process.env.KEYHAVEN_LAMBDA_ENDPOINT = lambda.endpoint;
  const secretsManager = await startSecretsManagerEmulator();
  const cloudFormation = await startCloudFormationResponses();
  process.env.KEYHAVEN_SECRETSMANAGER_ENDPOINT = secretsManager.endpoint;
  return {
    client,
    tableName,
    kms,
    consul,
    slapd,
    google,
    lambda,
    secretsManager,
    cloudFormation,
    calls,
    async close() {
      for (const name of [
        'KEYHAVEN_KMS_KEY_ID',
        'KEYHAVEN_KMS_ENDPOINT',
        'KEYHAVEN_DECLARED_MOUNTS',
        'KEYHAVEN_ENGINE_FUNCTIONS',
        'KEYHAVEN_LAMBDA_ENDPOINT',
        'KEYHAVEN_SECRETSMANAGER_ENDPOINT',
        'KEYHAVEN_FIRST_TOKENS_SECRET',
      ]) {
        delete process.env[name];
      }
      await lambda.stop();
      await secretsManager.stop();
      await cloudFormation.stop();
      await consul.close();
      await slapd.close();
      await google.close();
      await kms.stop();
      client.destroy();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Every function of the app, driven through what it serves with the events AWS delivers: the system function's
 * init, mounts, policies, tokens and revocations (through the engine functions), each engine's configuration,
 * roles and credentials, a login, the scheduler's ACL writes and reads and its event stream, every job with work due,
 * and the stream function's TTL backstop for a token and a lease.
 */
export async function driveEveryFunction(env: Environment): Promise<void> {
  const secrets = async (family: string) => (await secretsFunction(family)) as unknown as Handler;
  // An engine's job is functions/jobs/engine-job.ts with KEYHAVEN_ENGINE naming it, as the stack deploys it.
  const job = async (name: string) =>
    name in engineJobs
      ? ((await engineJob(name)) as Handler)
      : ((await import(`../../functions/jobs/${name}.ts`)).handler as Handler);
  let root = '';
  const send = async (fn: string, handler: Handler, method: string, url: string, body?: unknown, token = root) => {
    const answer = await asFunction(fn, () =>
      invoke(handler, httpApiEvent(method, url, { headers: token ? { 'x-secrets-token': token } : {}, body })),
    );
    expect(answer.status, `${fn} ${method} ${url}: ${JSON.stringify(answer.body)}`).toBeLessThan(500);
    return answer;
  };
  const call = async (fn: string, handler: Handler, method: string, url: string, body?: unknown, token = root) => {
    const answer = await send(fn, handler, method, url, body, token);
    expect(answer.status, `${fn} ${method} ${url}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer;
  };
  const system = await secrets('system');
  const families = Object.fromEntries(
    await Promise.all(scenarioFamilies.map(async (family) => [family, await secrets(family)] as const)),
  ) as Record<SecretsFamily, Handler>;

  // deploy: the first-tokens resource makes the data key, the root and the management token (a stage outside dev)
  const sdk = new SecretsManagerClient({
    endpoint: env.secretsManager.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const secretArn =
    (await sdk.send(new CreateSecretCommand({ Name: 'FirstTokensSecret', KmsKeyId: process.env.KEYHAVEN_KMS_KEY_ID })))
      .ARN ?? '';
  sdk.destroy();
  const firstTokens = (await import('../../functions/deploy/first-tokens.ts')).handler as unknown as Handler;
  const created = await asFunction('Deploy-first-tokens', () =>
    firstTokens(env.cloudFormation.event('Create', { SecretId: secretArn }) as never),
  );
  expect(created).toMatchObject({ Status: 'SUCCESS' });
  const tokens = JSON.parse(env.secretsManager.secret(secretArn)?.current ?? '{}');
  process.env.KEYHAVEN_FIRST_TOKENS_SECRET = secretArn;

  // system: mounts, policies, tokens. Only the system function is told the engine functions (as the stack sets
  // it); each handler builds its core on its first invocation, from the environment it then sees.
  process.env.KEYHAVEN_ENGINE_FUNCTIONS = JSON.stringify(engineFunctions);
  root = tokens.root_token;
  expect(
    (await asFunction('Secrets-system', () => invoke(system, httpApiEvent('PUT', '/v1/sys/init', { body: {} }))))
      .status,
  ).toBe(403);
  expect((await call('Secrets-system', system, 'GET', '/v1/sys/init', undefined, '')).body).toEqual({
    initialized: true,
  });
  delete process.env.KEYHAVEN_ENGINE_FUNCTIONS;
  // Every backend of the list at its default path (kv at secret/), each with its scenario's options.
  for (const { table, path, type } of mountsToEnable(backendsOf(scenarioFamilies))) {
    const options = scenarioOf(familyOfType[type] as SecretsFamily).mountOptions;
    await call('Secrets-system', system, 'POST', `/v1/sys/${table === 'auth' ? 'auth' : 'mounts'}/${path}`, {
      type,
      ...(options ? { options } : {}),
    });
  }
  await call('Secrets-system', system, 'PUT', '/v1/sys/policies/acl/app', {
    policy: 'path "secret/*" { capabilities = ["create", "read", "update", "list"] }',
  });
  await call('Secrets-system', system, 'GET', '/v1/sys/policies/acl?list=true');
  const limited = (
    await call('Secrets-system', system, 'POST', '/v1/auth/token/create', {
      policies: ['app'],
      ttl: '1h',
      num_uses: 10,
    })
  ).body.auth.client_token;
  await call('Secrets-system', system, 'GET', '/v1/auth/token/lookup-self', undefined, limited);
  await call('Secrets-system', system, 'PUT', '/v1/auth/token/renew-self', {}, limited);
  await call('Secrets-system', system, 'GET', '/v1/identity/oidc/plugins/.well-known/keys', undefined, '');

  const other = (await call('Secrets-system', system, 'POST', '/v1/auth/token/create', { policies: ['app'] })).body
    .auth;
  await call('Secrets-system', system, 'POST', '/v1/auth/token/lookup-accessor', { accessor: other.accessor });
  await call('Secrets-system', system, 'POST', '/v1/auth/token/revoke', { token: other.client_token });
  await call('Secrets-system', system, 'PUT', '/v1/sys/policies/acl/gone', {
    policy: 'path "x/*" { capabilities = ["read"] }',
  });
  await call('Secrets-system', system, 'DELETE', '/v1/sys/policies/acl/gone');
  await call('Secrets-system', system, 'POST', '/v1/sys/capabilities-self', { paths: ['secret/app/db'] }, limited);

  // Each family's scenario (its own in test/deploy/engine-scenarios.ts, else the generic one), in the list's order.
  for (const family of scenarioFamilies) {
    const fn = `Secrets-${family}`;
    const { consul, slapd, google } = env;
    const context = { consul, slapd, google, fn, handler: families[family], system, call, send, limited };
    await scenarioOf(family).drive(context);
  }

  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  // scheduler: bootstrap, policies, tokens, a blocking query, the event stream
  const api = (await import('../../functions/scheduler/api.ts')).handler as unknown as Handler;
  const scheduler = async (method: string, url: string, body?: unknown, token?: string) => {
    const answer = await asFunction('Scheduler-api', () =>
      invoke(
        api,
        httpApiEvent(method, url, {
          headers: token ? { 'x-scheduler-token': token } : {},
          body,
          routeKey: 'ANY /v1/{proxy+}',
        }),
      ),
    );
    expect(answer.status, `${method} ${url}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer;
  };
  const management = tokens.scheduler_management_token as string;
  await scheduler('GET', '/v1/acl/token/self', undefined, management);
  await scheduler(
    'POST',
    '/v1/acl/policy/readers',
    { Name: 'readers', Rules: 'namespace "default" { policy = "read" }' },
    management,
  );
  const token = (await scheduler('POST', '/v1/acl/token', { Name: 'brief', Policies: ['readers'] }, management)).body;
  await scheduler('GET', '/v1/acl/tokens?index=1', undefined, management);
  await scheduler('GET', '/v1/acl/token/self', undefined, token.SecretID);
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  await scheduler(
    'POST',
    '/v1/acl/auth-method',
    { Name: 'corp', Type: 'JWT', MaxTokenTTL: '30m', Config: { JWTValidationPubKeys: [pem] } },
    management,
  );
  const rule = (
    await scheduler(
      'POST',
      '/v1/acl/binding-rule',
      { AuthMethod: 'corp', BindType: 'policy', BindName: 'readers' },
      management,
    )
  ).body;
  const loginToken = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256' })
    .setSubject('alice')
    .setExpirationTime('5m')
    .sign(privateKey);
  const loggedIn = (await scheduler('POST', '/v1/acl/login', { AuthMethodName: 'corp', LoginToken: loginToken })).body;
  await scheduler('DELETE', `/v1/acl/token/${loggedIn.AccessorID}`, undefined, management);
  await scheduler('DELETE', `/v1/acl/binding-rule/${rule.ID}`, undefined, management);
  await scheduler('DELETE', '/v1/acl/auth-method/corp', undefined, management);
  await scheduler('DELETE', `/v1/acl/token/${token.AccessorID}`, undefined, management);
  await scheduler('DELETE', '/v1/acl/policy/readers', undefined, management);
  // a node: introduced, registered, a heartbeat (the sweep below finds it late and marks it down)
  const intro = (await scheduler('PUT', '/v1/acl/identity/client-introduction-token', {}, management)).body.JWT;
  const nodeId = crypto.randomUUID();
  const nodeSecret = crypto.randomUUID();
  // The agent's calls go to the client protocol's own function (its Function URL).
  const clientHandler = (await import('../../functions/scheduler/client.ts')).handler as unknown as Handler;
  const client = async (method: string, url: string, body: unknown, token: string) => {
    const answer = await asFunction('Scheduler-client', () =>
      invoke(
        clientHandler,
        httpApiEvent(method, url, { headers: { 'x-nomad-token': token }, body, routeKey: '$default' }),
      ),
    );
    expect(answer.status, `${method} ${url}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer;
  };
  await client(
    'POST',
    '/v1/client/register',
    {
      Node: {
        ID: nodeId,
        SecretID: nodeSecret,
        Name: 'deploy-node',
        Datacenter: 'dc1',
        Attributes: { 'os.name': 'linux' },
      },
    },
    intro,
  );
  await client('PUT', `/v1/client/node/${nodeId}/status`, { Status: 'ready' }, nodeSecret);
  await client('PUT', `/v1/client/node/${nodeId}/events`, { Events: [{ Message: 'deploy check' }] }, nodeSecret);
  // An allocation of a job placed on the node, as the plan apply writes it (outside the functions recorded here), so
  // the node can register its task's service through the client function.
  const submitted = (await scheduler('PUT', '/v1/jobs', { Job: webJob('deploy-web') }, management)).body;
  const placing = schedulerFor(await coreBaseFromEnvironment()());
  const allocation = await allocationOf(
    { scheduler: placing, clock: placing.core.clock } as unknown as SchedulerService,
    { id: 'deploy-web', evalId: submitted.EvalID },
    { ID: nodeId, Name: 'deploy-node' },
  );
  await new PlanApplier(placing.state, placing.nodes, placing.allocations).apply({
    place: [allocation],
    update: [],
    nodeVersions: new Map([[nodeId, (await placing.nodes.beat(nodeId))?.allocIndex ?? 0]]),
  });
  const allocId = allocation.ID;
  const serviceId = `_nomad-task-${allocId}-server-web-http`;
  await client(
    'PUT',
    '/v1/client/services',
    {
      Services: [
        {
          ID: serviceId,
          ServiceName: 'web',
          Namespace: 'default',
          NodeID: nodeId,
          Datacenter: '',
          JobID: 'deploy-web',
          AllocID: allocId,
          Tags: ['http'],
          Address: '10.0.0.7',
          Port: 25_000,
        },
      ],
    },
    nodeSecret,
  );
  await client('GET', `/v1/client/node/${nodeId}/allocations`, undefined, nodeSecret);
  await client('DELETE', `/v1/client/service/${encodeURIComponent(serviceId)}`, undefined, nodeSecret);
  await scheduler('GET', `/v1/node/${nodeId}`, undefined, management);
  // a second node that stays alive, with room, and a job the sweep's evaluation worker places on it
  const workerId = crypto.randomUUID();
  const workerSecret = crypto.randomUUID();
  const workerIntro = (await scheduler('PUT', '/v1/acl/identity/client-introduction-token', {}, management)).body.JWT;
  await scheduler(
    'POST',
    '/v1/client/register',
    {
      Node: {
        ID: workerId,
        SecretID: workerSecret,
        Name: 'deploy-worker',
        Datacenter: 'dc1',
        Attributes: { 'os.name': 'linux', 'driver.raw_exec': '1' },
        NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 4096 }, Disk: { DiskMB: 20_000 } },
        Drivers: { raw_exec: { Detected: true, Healthy: true } },
      },
    },
    workerIntro,
  );
  await scheduler('PUT', `/v1/client/node/${workerId}/status`, { Status: 'ready' }, workerSecret);
  await scheduler(
    'PUT',
    '/v1/jobs',
    { Job: { ID: 'deploy-job', TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec' }] }] } },
    management,
  );
  const stream = (await import('../../functions/scheduler/event-stream.ts')).handler as unknown as (
    event: unknown,
    sink: Writable,
    context: unknown,
  ) => Promise<void>;
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const finished = new Promise<void>((resolve) => sink.on('finish', () => resolve()));
  await asFunction('Scheduler-event-stream', () =>
    stream(
      httpApiEvent('GET', '/v1/event/stream?topic=ACLToken', { headers: { 'x-scheduler-token': management } }),
      sink,
      lambdaContext,
    ),
  );
  await finished;

  // jobs: a secrets token and a scheduler token expire; the sweep revokes both; each engine's job its queued lease
  await call('Secrets-system', system, 'POST', '/v1/auth/token/create', { policies: ['app'], ttl: '1s' });
  const beat = ClusterNodes.beatKey(nodeId);
  await env.client.send(
    new UpdateItemCommand({
      TableName: env.tableName,
      Key: { pk: { S: beat.pk }, sk: { S: beat.sk } },
      UpdateExpression: 'SET deadline = :past',
      ExpressionAttributeValues: { ':past': { N: '0' } },
    }),
  );
  await sleep(1_100);
  const run = async (fn: string, name: string) =>
    asFunction(fn, async () => (await job(name))(scheduledEvent(`${name}ScheduleRule`) as never));
  expect(await run('Job-sweep', 'sweep')).toMatchObject({ tokens: 1, failed: 0 });
  // the allocation the sweep's worker placed, listed through the API and reported on by its node
  // (the deploy node's allocation of `deploy-web`, placed above for its service, is listed too)
  const placed = (await scheduler('GET', '/v1/allocations', undefined, management)).body.find(
    (allocation: { JobID: string }) => allocation.JobID === 'deploy-job',
  );
  expect(placed).toMatchObject({ JobID: 'deploy-job', NodeID: workerId });
  await scheduler('GET', '/v1/job/deploy-job/allocations', undefined, management);
  await scheduler(
    'PUT',
    `/v1/client/node/${workerId}/allocations`,
    { Allocs: [{ ID: placed.ID, ClientStatus: 'running' }] },
    workerSecret,
  );
  for (const family of Object.keys(engineJobs) as SecretsFamily[])
    expect(await run(`Job-${family}`, family), family).toMatchObject(scenarioOf(family).jobAnswer ?? { failed: 0 });

  // table stream: DynamoDB's TTL removes a token and a lease (the mesh engine's) before any sweep
  const mesh = families.mesh;
  await call('Secrets-mesh', mesh, 'POST', '/v1/mesh/roles/again', { mesh_policies: 'svc-read' });
  const lease = (await call('Secrets-mesh', mesh, 'GET', '/v1/mesh/creds/again')).body.lease_id;
  const leaseKey = { pk: { S: leasePk(lease) }, sk: { S: lease } };
  const leaseItem = (await env.client.send(new GetItemCommand({ TableName: env.tableName, Key: leaseKey }))).Item;
  await env.client.send(new DeleteItemCommand({ TableName: env.tableName, Key: leaseKey }));
  const before = new Set((await tokenItems(env)).map((item) => item.pk?.S));
  await call('Secrets-system', system, 'POST', '/v1/auth/token/create', { policies: ['app'] });
  const tokenItem = (await tokenItems(env)).find((item) => !before.has(item.pk?.S));
  await env.client.send(
    new DeleteItemCommand({ TableName: env.tableName, Key: { pk: tokenItem?.pk ?? { S: '' }, sk: { S: 'token' } } }),
  );
  const tableStream = await job('table-stream');
  const result = await asFunction('Job-table-stream', () =>
    tableStream({
      Records: [ttlRemoval(env.tableName, '100', tokenItem), ttlRemoval(env.tableName, '101', leaseItem)],
    } as never),
  );
  expect(result).toEqual({ batchItemFailures: [] });

  // the evaluation trigger: a job submitted, its evaluation's stream record run at once (delivered twice: run once),
  const triggeredJob = await scheduler(
    'PUT',
    '/v1/jobs',
    { Job: { ID: 'deploy-triggered', TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec' }] }] } },
    management,
  );
  const evalKey = Evaluations.key(triggeredJob.body.EvalID);
  const evalItem = (
    await env.client.send(
      new GetItemCommand({ TableName: env.tableName, Key: { pk: { S: evalKey.pk }, sk: { S: evalKey.sk } } }),
    )
  ).Item as Record<string, AttributeValue>;
  const trigger = await job('evaluation-trigger');
  const pending = itemWritten(env.tableName, '200', evalItem);
  // and a record of room made: the blocked evaluations (none) are looked for on the blocked queue
  const room = itemWritten(env.tableName, '201', { pk: { S: 'sched#capacity#00' }, sk: { S: `${'0'.repeat(15)}1#x` } });
  const triggered = await asFunction('Job-evaluation-trigger', () =>
    trigger({ Records: [pending, pending, room] } as never),
  );
  expect(triggered).toEqual({ batchItemFailures: [] });
  const triggeredAllocs = (await scheduler('GET', '/v1/job/deploy-triggered/allocations', undefined, management)).body;
  expect(triggeredAllocs).toHaveLength(1);

  // deploy again: a fresh instance of the first-tokens function finds both tokens and unwraps the data key
  vi.resetModules();
  const again = (await import('../../functions/deploy/first-tokens.ts')).handler as unknown as Handler;
  const updated = await asFunction('Deploy-first-tokens', () =>
    again(env.cloudFormation.event('Update', { SecretId: secretArn }) as never),
  );
  expect(updated).toMatchObject({ Status: 'SUCCESS', Data: { RootToken: 'existing', ManagementToken: 'existing' } });
}

async function tokenItems(env: Environment) {
  const scanned = await env.client.send(
    new ScanCommand({
      TableName: env.tableName,
      FilterExpression: 'sk = :sk',
      ExpressionAttributeValues: { ':sk': { S: 'token' } },
    }),
  );
  return (scanned.Items ?? []).filter((item) => item.pk?.S?.startsWith('token#'));
}
