import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { restoreTable } from '../../functions/deploy/restore-table.ts';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { rotateDue } from '../../packages/core/src/entry-points/engine-periodic-jobs.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { mountRecording, recordingBackend, upstreamOf } from '../support/recording-backend.ts';
import { peopleDn } from '../support/slapd.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const alice = `cn=alice,${peopleDn}`;

describe('restoring the table (docs/deployment.md, "Restoring the table"): the service started on a restored table catches up', () => {
  let e: LdapEngine;
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-restore-')), 'keyring.key');
  beforeAll(async () => {
    e = await startLdapEngine({
      extraBackends: [recordingBackend],
      keySource: fileKeySource(keyFile),
    });
    await e.configure();
    await mountRecording(e.h, 'rec', {
      roles: { app: { ttl: 60 }, long: { ttl: '1h' } },
    });
  });
  afterAll(() => e?.close());

  it('leases past their expiry are revoked, due rotations run, tokens past their TTL are gone; what came after the restore point is unknown', async () => {
    const { h } = e;
    const asRoot = (body?: unknown) => ({
      token: h.rootToken,
      ...(body === undefined ? {} : { body }),
    });
    expect(
      (
        await e.call('POST', 'static-role/alice', {
          username: 'alice',
          rotation_period: '20m',
        })
      ).status,
    ).toBe(204);
    const passwordAtPoint = (await e.call('GET', 'static-cred/alice')).body.data.password as string;
    const short = (await h.call('GET', '/v1/rec/creds/app', asRoot())).body;
    const long = (await h.call('GET', '/v1/rec/creds/long', asRoot())).body;
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['default'], ttl: '10m' }))).body
      .auth.client_token;

    // The restore point: DynamoDB restores it into a new table (PITR or an AWS Backup recovery point).
    const pointTable = `restored-${randomUUID()}`;
    await ensureTable(h.client, pointTable);
    await restoreTable(h.client, h.tableName, pointTable);
    const atPoint = (await h.client.send(new ScanCommand({ TableName: pointTable, ConsistentRead: true }))).Items ?? [];

    // After the point the service went on: a rotation and a new lease, which the restored table does not know.
    h.clock.advance(5 * 60);
    expect((await e.call('POST', 'rotate-role/alice')).status).toBe(204);
    const rotatedAfterPoint = (await e.call('GET', 'static-cred/alice')).body.data.password as string;
    const later = (await h.call('GET', '/v1/rec/creds/app', asRoot())).body;

    // The stack's table (here a copy of the service's table as it is now) is brought back to the point.
    const stackTable = `stack-${randomUUID()}`;
    await ensureTable(h.client, stackTable);
    await restoreTable(h.client, h.tableName, stackTable);
    const restore = await run(
      process.execPath,
      ['--import', 'tsx', 'functions/deploy/restore-table.ts', pointTable, stackTable],
      {
        cwd: root,
        env: {
          ...process.env,
          KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
        },
      },
    );
    expect(JSON.parse(restore.stdout)).toMatchObject({
      written: atPoint.length,
      deleted: expect.any(Number),
    });
    expect(JSON.parse(restore.stdout).deleted).toBeGreaterThan(0);
    const restored =
      (await h.client.send(new ScanCommand({ TableName: stackTable, ConsistentRead: true }))).Items ?? [];
    const keys = (items: typeof restored) => items.map((item) => `${item.pk?.S}|${item.sk?.S}`).sort();
    expect(keys(restored)).toEqual(keys(atPoint));

    // The service starts on it half an hour after the point (the restore took that long).
    const clock = new ManualClock(h.clock.now() + 25 * 60 * 1000);
    const core: Core = await createCore({
      dynamodb: h.client,
      tableName: stackTable,
      keySource: fileKeySource(keyFile),
      backends: [...backendsOf(allSecretsFamilies), recordingBackend],
      clock,
      log: silentLogger,
    });
    const app = createSecretsApp({
      core: async () => core,
      clientIp: () => '127.0.0.1',
    });
    const call = async (method: string, url: string, as: string, body?: unknown) => {
      const response = await app.request(url, {
        method,
        headers: { 'X-Secrets-Token': as, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return {
        status: response.status,
        body: await response.json().catch(() => undefined),
      };
    };
    // Before its jobs run, a token past its TTL is already refused.
    expect((await call('GET', '/v1/auth/token/lookup-self', token)).status).toBe(403);

    // The first minute's jobs: the sweep and the directory's rotations.
    expect(await sweepExpired(core)).toEqual({
      tokens: 1,
      leases: 1,
      failed: 0,
    });
    expect(await rotateDue(core)).toEqual({ rotated: 1, failed: 0 });

    expect(await upstreamOf(h.core, short.lease_id)).toMatchObject({
      attempts: 1,
      revoked: 1,
    });
    expect(
      (
        await call('PUT', '/v1/sys/leases/lookup', h.rootToken, {
          lease_id: short.lease_id,
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await call('PUT', '/v1/sys/leases/lookup', h.rootToken, {
          lease_id: long.lease_id,
        })
      ).status,
    ).toBe(200);
    expect(await upstreamOf(h.core, long.lease_id)).toBeUndefined();
    expect(await sweepExpired(core)).toEqual({
      tokens: 0,
      leases: 0,
      failed: 0,
    });

    // The rotation due set a password the directory now takes; neither the point's nor the later one binds.
    const current = (await call('GET', '/v1/ldap/static-cred/alice', h.rootToken)).body.data.password as string;
    expect(current).not.toBe(passwordAtPoint);
    expect(current).not.toBe(rotatedAfterPoint);
    expect(await e.slapd.canBind(alice, current)).toBe(true);
    expect(await e.slapd.canBind(alice, rotatedAfterPoint)).toBe(false);

    // What was issued after the point is unknown to the restored table: docs/deployment.md says to revoke it upstream.
    expect(
      (
        await call('PUT', '/v1/sys/leases/lookup', h.rootToken, {
          lease_id: later.lease_id,
        })
      ).status,
    ).toBe(404);
    expect(await upstreamOf(h.core, later.lease_id)).toBeUndefined();
  });

  it('refuses to restore a table onto itself or from a table that does not exist, naming it', async () => {
    await expect(restoreTable(e.h.client, e.h.tableName, e.h.tableName)).rejects.toThrow(
      'the restored table and the stack table must differ: restore into a new table first',
    );
    await expect(restoreTable(e.h.client, 'no-such-table', e.h.tableName)).rejects.toThrow(
      /^table no-such-table cannot be read: /,
    );
  });
});
