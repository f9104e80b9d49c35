import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type LambdaEmulator, startLambdaEmulator } from '../emulators/lambda.ts';
import {
  deployedEnvironment,
  engineJob,
  httpApiEvent,
  invoke,
  scheduledEvent,
  secretsFunction,
} from './lambda-events.ts';

type HttpHandler = Parameters<typeof invoke>[0];
type Handler = (event: unknown) => Promise<unknown>;

/**
 * `sys/leases/revoke` in the system function, which bundles no engine: with `KEYHAVEN_ENGINE_FUNCTIONS` (as the
 * stack sets it) it invokes the mesh function to revoke the lease and answers once that is done, as Vault's
 * synchronous revocation does. The Lambda service is the Invoke emulator, calling the real mesh handler.
 */
describe('revoking through the engine function (functions/secrets/family.ts: the system function -> the mesh function)', () => {
  let client: DynamoDBClient;
  let consul: ConsulEmulator;
  let lambda: LambdaEmulator;
  let root = '';
  let system: HttpHandler;
  let mesh: HttpHandler;

  const call = (handler: HttpHandler, method: string, url: string, body?: unknown, token = root) =>
    invoke(handler, httpApiEvent(method, url, { headers: token ? { 'x-secrets-token': token } : {}, body }));
  const lookup = (leaseId: string) => call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId });

  beforeAll(async () => {
    ({ client } = await deployedEnvironment());
    process.env.KEYHAVEN_JOB_RUN_MS = '0';
    process.env.KEYHAVEN_DECLARED_MOUNTS = JSON.stringify([{ path: 'mesh/', type: 'mesh' }]);
    consul = await startConsulEmulator();
    const consulRoot = ((await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string }).SecretID;
    system = await secretsFunction('system');
    mesh = await secretsFunction('mesh');
    lambda = await startLambdaEmulator({
      'prod-keyhaven-Secrets-mesh': (event) => (mesh as unknown as Handler)(event),
    });
    process.env.KEYHAVEN_ENGINE_FUNCTIONS = JSON.stringify({ mesh: 'prod-keyhaven-Secrets-mesh' });
    process.env.KEYHAVEN_LAMBDA_ENDPOINT = lambda.endpoint;

    root = (await call(system, 'PUT', '/v1/sys/init', undefined, '')).body.root_token;
    expect((await call(system, 'POST', '/v1/sys/mounts/mesh', { type: 'mesh' })).status).toBe(204);
    expect(
      (await call(mesh, 'POST', '/v1/mesh/config/access', { address: consul.address, token: consulRoot })).status,
    ).toBe(204);
    await consul.request('PUT', '/v1/acl/policy', {
      token: consulRoot,
      body: { Name: 'svc-read', Rules: 'service_prefix "" { policy = "read" }' },
    });
    expect((await call(mesh, 'POST', '/v1/mesh/roles/app', { mesh_policies: 'svc-read' })).status).toBe(204);
  });
  afterAll(async () => {
    for (const name of ['KEYHAVEN_DECLARED_MOUNTS', 'KEYHAVEN_ENGINE_FUNCTIONS', 'KEYHAVEN_LAMBDA_ENDPOINT'])
      delete process.env[name];
    await lambda?.stop();
    await consul?.close();
    client?.destroy();
  });

  it('sys/leases/revoke answers once the mesh function has deleted the token', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    const { lease_id: leaseId } = creds.body;
    expect(consul.token(creds.body.data.accessor)).toBeDefined();

    expect((await call(system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leaseId })).status).toBe(204);
    expect(consul.token(creds.body.data.accessor)).toBeUndefined();
    expect((await lookup(leaseId)).status).toBe(404);
    expect(lambda.invocations.at(-1)).toEqual({
      functionName: 'prod-keyhaven-Secrets-mesh',
      invocationType: 'RequestResponse',
      payload: { keyhaven: { revokeLease: leaseId } },
    });
  });

  it('revoking a token in the system function revokes the mesh lease it owns the same way', async () => {
    const owner = (await call(system, 'POST', '/v1/auth/token/create', { policies: ['root'] })).body.auth.client_token;
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app', undefined, owner);
    expect(creds.status).toBe(200);
    expect((await call(system, 'POST', '/v1/auth/token/revoke', { token: owner })).status).toBe(204);
    expect(consul.token(creds.body.data.accessor)).toBeUndefined();
    expect((await lookup(creds.body.lease_id)).status).toBe(404);
  });

  it('revoke-prefix hands the mesh function all the leases under the prefix in one invocation', async () => {
    const issued = [await call(mesh, 'GET', '/v1/mesh/creds/app'), await call(mesh, 'GET', '/v1/mesh/creds/app')];
    const before = lambda.invocations.length;
    expect((await call(system, 'PUT', '/v1/sys/leases/revoke-prefix/mesh/creds/app')).status).toBe(204);
    expect(lambda.invocations.slice(before)).toEqual([
      {
        functionName: 'prod-keyhaven-Secrets-mesh',
        invocationType: 'RequestResponse',
        payload: { keyhaven: { revokePrefix: 'mesh/creds/app' } },
      },
    ]);
    for (const creds of issued) {
      expect(consul.token(creds.body.data.accessor)).toBeUndefined();
      expect((await lookup(creds.body.lease_id)).status).toBe(404);
    }
  });

  it('a mesh server that is down: 502 naming the failure, the lease stays queued, and the mesh job revokes it later', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    const { lease_id: leaseId } = creds.body;
    await consul.stop();
    const failed = await call(system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leaseId });
    expect(failed.status).toBe(502);
    expect(failed.body.errors[0]).toMatch(new RegExp(`failed to revoke lease ${leaseId}: the mesh function failed`));
    expect((await lookup(leaseId)).body.data).toMatchObject({ id: leaseId, irrevocable: false });
    expect((await lookup(leaseId)).body.data.revocation_attempts).toBeGreaterThan(0);

    await consul.start();
    const meshJob = await engineJob('mesh');
    // The failure queued the lease again with a backoff; an operator's asynchronous revoke queues it for now.
    expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 0, failed: 0 });
    expect((await call(system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leaseId, sync: false })).status).toBe(204);
    expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 1, failed: 0 });
    expect(consul.token(creds.body.data.accessor)).toBeUndefined();
    expect((await lookup(leaseId)).status).toBe(404);
  });

  it('disabling the mesh mount answers once its leases are revoked and the mount is gone; the path is free at once', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    expect((await call(system, 'DELETE', '/v1/sys/mounts/mesh')).status).toBe(204);
    expect(consul.token(creds.body.data.accessor)).toBeUndefined();
    expect((await lookup(creds.body.lease_id)).status).toBe(404);
    expect(lambda.invocations.at(-1)?.payload).toEqual({ keyhaven: { finishDisabled: true } });
    expect(Object.keys((await call(system, 'GET', '/v1/sys/mounts')).body.data)).not.toContain('mesh/');
    expect((await call(system, 'POST', '/v1/sys/mounts/mesh', { type: 'mesh' })).status).toBe(204);
  });
});
