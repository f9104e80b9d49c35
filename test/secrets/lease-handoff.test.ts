import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { tokenBackend } from '../../packages/core/src/secrets/auth/token/token-backend.ts';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { systemBackend } from '../../packages/core/src/secrets/sys/system-backend.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { mountRecording, recordingBackend, upstreamOf } from '../support/recording-backend.ts';
import {
  type CallOptions,
  type CallResult,
  type SecretsService,
  startSecretsInMemory,
} from '../support/secrets-harness.ts';

/**
 * In AWS the system function serves `sys/*` but bundles no engine, so it cannot run a lease's revoke hook; the
 * sweep function bundles every family. Here the harness's core (every family and the recording engine) plays the
 * sweep and the engine's own function; a second core on the same table with only the system backends plays the
 * system function.
 */
let h: SecretsService;
let keyDir: string;
let systemCore: Core;
let systemApp: ReturnType<typeof createSecretsApp>;

beforeEach(async () => {
  keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-handoff-'));
  const keySource = fileKeySource(path.join(keyDir, 'key'));
  h = await startSecretsInMemory({ extraBackends: [recordingBackend], keySource });
  await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
  systemCore = await createCore({
    store: h.core.store,
    keySource,
    backends: [systemBackend, tokenBackend],
    clock: h.clock,
    log: silentLogger,
  });
  systemApp = createSecretsApp({ core: async () => systemCore, clientIp: () => '127.0.0.1' });
});
afterEach(async () => {
  await h.close();
  rmSync(keyDir, { recursive: true, force: true });
});

async function callSystem(
  method: string,
  url: string,
  { token = h.rootToken, body }: CallOptions = {},
): Promise<CallResult> {
  const response = await systemApp.request(url, {
    method,
    headers: { 'X-Secrets-Token': token, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function issue(): Promise<string> {
  const reply = await h.call('GET', '/v1/rec/creds/app', { token: h.rootToken });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.lease_id as string;
}

const lookupThere = (leaseId: string) => callSystem('PUT', '/v1/sys/leases/lookup', { body: { lease_id: leaseId } });
const storedMount = async (mountPath: string) =>
  (await h.core.store.get('mounts', mountPath))?.entry as MountEntry | undefined;

describe('revoking a lease where its backend is not bundled', () => {
  it('hands the revocation to the sweep: 204 at once, the hook runs once in the sweep', async () => {
    const leaseId = await issue();
    const revoked = await callSystem('PUT', '/v1/sys/leases/revoke', { body: { lease_id: leaseId } });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(204);
    expect(await upstreamOf(h.core, leaseId)).toBeUndefined();

    const found = await lookupThere(leaseId);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({
      id: leaseId,
      revocation_attempts: 0,
      irrevocable: false,
      renewable: false,
    });
    // Renewing would move it back to its expiry in the queue and undo the revocation.
    expect(
      (await h.call('PUT', '/v1/sys/leases/renew', { token: h.rootToken, body: { lease_id: leaseId } })).status,
    ).toBe(400);

    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookupThere(leaseId)).status).toBe(404);
    expect(await h.core.leases.get(leaseId)).toBeUndefined();

    expect((await sweepExpired(h.core)).leases).toBe(0);
    expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
  });

  it('hands over every lease under a prefix with revoke-prefix', async () => {
    const leases = [await issue(), await issue()];
    const revoked = await callSystem('PUT', '/v1/sys/leases/revoke-prefix/rec/creds');
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(204);
    for (const leaseId of leases) {
      expect(await upstreamOf(h.core, leaseId)).toBeUndefined();
      expect((await lookupThere(leaseId)).status).toBe(200);
    }
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 2, failed: 0 });
    for (const leaseId of leases) {
      expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
      expect(await h.core.leases.get(leaseId)).toBeUndefined();
    }
  });

  it('still forgets the lease with revoke-force, without the hook', async () => {
    const leaseId = await issue();
    expect((await callSystem('PUT', '/v1/sys/leases/revoke-force/rec/creds')).status).toBe(204);
    expect(await h.core.leases.get(leaseId)).toBeUndefined();
    await sweepExpired(h.core);
    expect(await upstreamOf(h.core, leaseId)).toBeUndefined();
  });

  it('revokes at once where the backend is bundled', async () => {
    const leaseId = await issue();
    expect(
      (await h.call('PUT', '/v1/sys/leases/revoke', { token: h.rootToken, body: { lease_id: leaseId } })).status,
    ).toBe(204);
    expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await h.core.leases.get(leaseId)).toBeUndefined();
  });
});

describe('disabling a mount where its backend is not bundled', () => {
  it('takes the mount out of service at once and leaves its leases and storage to the sweep', async () => {
    const leases = [await issue(), await issue()];
    const uuid = (await storedMount('rec/'))?.uuid as string;
    expect((await h.core.store.list(`mount#${uuid}`)).length).toBeGreaterThan(0);
    expect(Object.keys((await callSystem('GET', '/v1/sys/mounts')).body.data)).toContain('rec/');

    const disabled = await callSystem('DELETE', '/v1/sys/mounts/rec');
    expect(disabled.status, JSON.stringify(disabled.body)).toBe(204);
    expect(await systemCore.mounts.resolve('rec/creds/app')).toBeUndefined();
    expect(Object.keys((await callSystem('GET', '/v1/sys/mounts')).body.data)).not.toContain('rec/');
    expect((await callSystem('GET', '/v1/sys/mounts/rec')).status).toBe(404);
    expect((await callSystem('DELETE', '/v1/sys/mounts/rec')).status).toBe(204);
    // The path stays taken until the sweep has finished with it.
    const reused = await h.call('POST', '/v1/sys/mounts/rec', { token: h.rootToken, body: { type: 'recording' } });
    expect(reused.status).toBe(400);
    expect(reused.body.errors[0]).toContain('already in use');
    for (const leaseId of leases) {
      expect(await upstreamOf(h.core, leaseId)).toBeUndefined();
      expect((await lookupThere(leaseId)).status).toBe(200);
    }
    expect(await storedMount('rec/')).toMatchObject({ uuid, disabling: true });

    // The engine's own process stops routing it once its mount cache expires, before the sweep runs.
    h.clock.advance(6);
    expect((await h.call('GET', '/v1/rec/creds/app', { token: h.rootToken })).status).toBe(404);
    expect(Object.keys((await h.call('GET', '/v1/sys/mounts', { token: h.rootToken })).body.data)).not.toContain(
      'rec/',
    );

    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 2, failed: 0 });
    for (const leaseId of leases) {
      expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
      expect(await h.core.leases.get(leaseId)).toBeUndefined();
    }
    expect(await h.core.store.list(`mount#${uuid}`)).toEqual([]);
    expect(await storedMount('rec/')).toBeUndefined();

    // The path is free again, and a new mount there starts empty.
    expect(
      (await h.call('POST', '/v1/sys/mounts/rec', { token: h.rootToken, body: { type: 'recording' } })).status,
    ).toBe(204);
    expect((await h.call('GET', '/v1/rec/creds/app', { token: h.rootToken })).status).toBe(404);
  });

  it('keeps the mount while a lease cannot be revoked, and finishes once it is', async () => {
    const leaseId = await issue();
    expect((await h.call('POST', '/v1/rec/config', { token: h.rootToken, body: { fail_revoke: true } })).status).toBe(
      204,
    );
    expect((await callSystem('DELETE', '/v1/sys/mounts/rec')).status).toBe(204);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 1 });
    expect(await storedMount('rec/')).toMatchObject({ disabling: true });
    expect(await h.core.leases.get(leaseId)).toMatchObject({ revocationAttempts: 1 });

    // An operator gives up on the upstream account; the next sweep removes the mount.
    expect((await callSystem('PUT', '/v1/sys/leases/revoke-force/rec')).status).toBe(204);
    await sweepExpired(h.core);
    expect(await storedMount('rec/')).toBeUndefined();
  });

  it('queues a lease issued after the mount was marked (a process whose cache still routed it)', async () => {
    expect((await callSystem('DELETE', '/v1/sys/mounts/rec')).status).toBe(204);
    // The harness's process still has the mount cached as in service for a few seconds.
    const late = await issue();
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
    expect(await storedMount('rec/')).toMatchObject({ disabling: true });
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, late)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await storedMount('rec/')).toBeUndefined();
  });

  it('disables at once where the backend is bundled', async () => {
    const leaseId = await issue();
    expect((await h.call('DELETE', '/v1/sys/mounts/rec', { token: h.rootToken })).status).toBe(204);
    expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await storedMount('rec/')).toBeUndefined();
  });
});
