import { DeleteItemCommand, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leasePk, leaseQueueShard } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import {
  deployedEnvironment,
  engineJob,
  httpApiEvent,
  invoke,
  scheduledEvent,
  secretsFunction,
  ttlRemoval,
} from './lambda-events.ts';

type HttpHandler = Parameters<typeof invoke>[0];
type JobHandler = (event: unknown) => Promise<Record<string, number>>;

/**
 * The deployed shape: the system function bundles no engine, each engine's job bundles only its engine. A lease
 * revoked through `sys/` is handed to its engine's queue; the token sweep leaves it alone; the engine's job revokes it.
 */
describe('each engine job sweeps its own leases (functions/jobs/engine-job.ts as the mesh job, with the Consul emulator)', () => {
  let client: DynamoDBClient;
  let tableName: string;
  let consul: ConsulEmulator;
  let root = '';
  let system: HttpHandler;
  let mesh: HttpHandler;
  let sweepJob: JobHandler;
  let meshJob: JobHandler;

  const call = (handler: HttpHandler, method: string, url: string, body?: unknown) =>
    invoke(handler, httpApiEvent(method, url, { headers: root ? { 'x-secrets-token': root } : {}, body }));

  beforeAll(async () => {
    ({ client, tableName } = await deployedEnvironment());
    process.env.KEYHAVEN_JOB_RUN_MS = '0';
    process.env.KEYHAVEN_DECLARED_MOUNTS = JSON.stringify([{ path: 'mesh/', type: 'mesh' }]);
    consul = await startConsulEmulator();
    const bootstrap = await consul.request('PUT', '/v1/acl/bootstrap');
    const consulRoot = (bootstrap.json as { SecretID: string }).SecretID;
    system = await secretsFunction('system');
    mesh = await secretsFunction('mesh');
    sweepJob = (await import('../../functions/jobs/sweep.ts')).handler as unknown as JobHandler;
    meshJob = await engineJob('mesh');

    const init = await call(system, 'PUT', '/v1/sys/init');
    expect(init.status).toBe(200);
    root = init.body.root_token;
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
    delete process.env.KEYHAVEN_DECLARED_MOUNTS;
    await consul?.close();
    client?.destroy();
  });

  it('a lease revoked through sys/ waits on the mesh queue; the token sweep leaves it; the mesh job deletes the token', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    expect(creds.status).toBe(200);
    const { lease_id: leaseId } = creds.body;
    const accessor = creds.body.data.accessor as string;
    expect(consul.token(accessor)).toBeDefined();

    expect((await call(system, 'PUT', '/v1/sys/leases/revoke', { lease_id: leaseId })).status).toBe(204);
    expect(consul.token(accessor)).toBeDefined();
    expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(200);

    expect(await sweepJob(scheduledEvent('SweepScheduleRule'))).toEqual({ tokens: 0, leases: 0, failed: 0 });
    expect(consul.token(accessor)).toBeDefined();

    expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 1, failed: 0 });
    expect(consul.token(accessor)).toBeUndefined();
    expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(404);
  });

  it('a lease deleted by TTL before any sweep: the stream function (no engines) hands it to the mesh job, which revokes it', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    const { lease_id: leaseId } = creds.body;
    const accessor = creds.body.data.accessor as string;
    const key = { pk: { S: leasePk(leaseId) }, sk: { S: leaseId as string } };
    const leaseItem = (await client.send(new GetItemCommand({ TableName: tableName, Key: key }))).Item;
    expect(leaseItem?.queue).toEqual({ S: leaseQueueShard('mesh', leaseId) });
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: key }));
    expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(404);

    const tableStream = (await import('../../functions/jobs/table-stream.ts')).handler;
    expect(await tableStream({ Records: [ttlRemoval(tableName, '300', leaseItem)] })).toEqual({
      batchItemFailures: [],
    });
    expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(200);
    expect(consul.token(accessor)).toBeDefined();

    expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 1, failed: 0 });
    expect(consul.token(accessor)).toBeUndefined();
    expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(404);
  });

  it('an idle job returns after one round; a lease expiring within the run is revoked by the same run', async () => {
    process.env.KEYHAVEN_JOB_RUN_MS = '20000';
    process.env.KEYHAVEN_JOB_PAUSE_MS = '100';
    try {
      // Nothing queued: one round, and the run ends (not after 20 s: the test's own time limit would fail first).
      expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 0, failed: 0 });

      expect((await call(mesh, 'POST', '/v1/mesh/roles/brief', { mesh_policies: 'svc-read', ttl: '2s' })).status).toBe(
        204,
      );
      const creds = await call(mesh, 'GET', '/v1/mesh/creds/brief');
      expect(creds.body.lease_duration).toBe(2);
      const accessor = creds.body.data.accessor as string;
      expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 1, failed: 0 });
      expect(consul.token(accessor)).toBeUndefined();
      expect((await call(system, 'PUT', '/v1/sys/leases/lookup', { lease_id: creds.body.lease_id })).status).toBe(404);
    } finally {
      process.env.KEYHAVEN_JOB_RUN_MS = '0';
      delete process.env.KEYHAVEN_JOB_PAUSE_MS;
    }
  });

  it('disabling the mesh mount through sys/: the mesh job revokes its leases, then removes the mount', async () => {
    const creds = await call(mesh, 'GET', '/v1/mesh/creds/app');
    const accessor = creds.body.data.accessor as string;
    expect((await call(system, 'DELETE', '/v1/sys/mounts/mesh')).status).toBe(204);
    expect(consul.token(accessor)).toBeDefined();
    expect(Object.keys((await call(system, 'GET', '/v1/sys/mounts')).body.data)).not.toContain('mesh/');

    expect(await meshJob(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 1, failed: 0 });
    expect(consul.token(accessor)).toBeUndefined();
    // The path is free again once the job has finished the disable.
    expect((await call(system, 'POST', '/v1/sys/mounts/mesh', { type: 'mesh' })).status).toBe(204);
  });
});
