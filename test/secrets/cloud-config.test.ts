import { afterEach, describe, expect, it } from 'vitest';
import { cleanupPending } from '../../packages/core/src/secrets/engines/cloud/cleanup.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

let engine: CloudEngine;
afterEach(() => engine?.close());

const keyIdOf = (credentials: string) => JSON.parse(credentials).private_key_id as string;

describe('cloud config', () => {
  it('stores credentials sealed, never shows them, and reads ttl/max_ttl as durations', async () => {
    engine = await startCloudEngine();
    const written = await engine.call('POST', '/v1/cloud/config', { ttl: '1h', max_ttl: 7200 });
    expect(written.status).toBe(204);
    const read = await engine.call('GET', '/v1/cloud/config');
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({
      ttl: '1h0m0s',
      max_ttl: '2h0m0s',
      identity_token_audience: '',
      service_account_email: '',
      identity_token_ttl: 3600,
      rotation_period: 0,
      rotation_schedule: '',
      rotation_window: 0,
      disable_automated_rotation: false,
    });
    expect(JSON.stringify(read.body)).not.toContain('PRIVATE KEY');
    const stored = await engine.h.core.store.list(`mount#${(await engine.h.core.mounts.resolve('cloud/'))?.uuid}`, {
      prefix: 'config',
    });
    expect(JSON.stringify(stored)).not.toContain('PRIVATE KEY');
  });

  it('refuses bad credentials, conflicting sources and bad rotation fields with 400s naming them', async () => {
    engine = await startCloudEngine({ configure: false });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ credentials: '{not json' }, /^invalid credentials JSON file: /],
      [{ credentials: JSON.stringify({ type: 'authorized_user' }) }, /invalid credentials JSON file: "type"/],
      [
        {
          credentials: JSON.stringify({
            type: 'service_account',
            client_email: 'a@b',
            private_key_id: 'x',
            private_key: 'nope',
          }),
        },
        /"private_key"/,
      ],
      [
        { credentials: engine.root.credentials, identity_token_audience: 'aud', service_account_email: 'x@y' },
        /mutually exclusive/,
      ],
      [{ identity_token_audience: 'aud' }, /must be set together/],
      [{ credentials: engine.root.credentials, rotation_period: 5 }, /"rotation_period": must be at least 10/],
      [
        { credentials: engine.root.credentials, rotation_period: 60, rotation_schedule: '0 * * * *' },
        /cannot both be set/,
      ],
      [{ credentials: engine.root.credentials, rotation_schedule: '0 * *' }, /"rotation_schedule"/],
      [
        { credentials: engine.root.credentials, rotation_schedule: '0 * * * *', rotation_window: 60 },
        /"rotation_window"/,
      ],
      [{ credentials: engine.root.credentials, ttl: 7200, max_ttl: 3600 }, /"ttl" cannot be greater than "max_ttl"/],
      [{ ttl: 'soon' }, /ttl/],
    ];
    for (const [body, message] of cases) {
      const reply = await engine.call('POST', '/v1/cloud/config', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.errors[0]).toMatch(message);
    }
  });

  it('rotate-root makes a new key the stored credential and deletes the old key', async () => {
    engine = await startCloudEngine();
    const oldKey = keyIdOf(engine.root.credentials);
    const reply = await engine.call('POST', '/v1/cloud/config/rotate-root');
    expect(reply.status).toBe(200);
    const newKey = reply.body.data.private_key_id;
    expect(newKey).toMatch(/^[0-9a-f]{40}$/);
    expect(engine.google.keys(engine.root.email).map((key) => key.id)).toEqual([newKey]);
    expect(engine.google.keys().some((key) => key.id === oldKey)).toBe(false);
    // The old key was deleted acting with the new key, which proves the stored credential works.
    const tokens = engine.google.issuedTokens().filter((token) => token.principal === engine.root.email);
    expect(tokens.at(-1)?.keyId).toBe(newKey);
  });

  it('rotate-root is refused without credentials, and a failed key creation leaves nothing behind', async () => {
    engine = await startCloudEngine({ configure: false });
    const refused = await engine.call('POST', '/v1/cloud/config/rotate-root');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/config did not use "credentials"/);
    await engine.call('POST', '/v1/cloud/config', { credentials: engine.root.credentials });
    engine.google.failNext('serviceAccounts.keys.create', { status: 500, afterApply: true });
    const failed = await engine.call('POST', '/v1/cloud/config/rotate-root');
    expect(failed.status).toBe(502);
    // The key was made though the answer was lost; the write-ahead record removes it.
    expect(engine.google.keys(engine.root.email).map((key) => key.id)).toEqual([keyIdOf(engine.root.credentials)]);
  });

  it('a crash after the new key is stored: the job deletes the old key', async () => {
    engine = await startCloudEngine();
    engine.google.failNext('serviceAccounts.keys.delete', { status: 503 });
    expect((await engine.call('POST', '/v1/cloud/config/rotate-root')).status).toBe(200);
    expect(engine.google.keys(engine.root.email)).toHaveLength(2);
    expect(await cleanupPending(engine.h.core)).toMatchObject({ settled: 1, failed: 0 });
    expect(engine.google.keys(engine.root.email)).toHaveLength(1);
  });

  it('rotates the root key automatically on its period', async () => {
    engine = await startCloudEngine();
    await engine.call('POST', '/v1/cloud/config', { rotation_period: '1h' });
    expect(await cleanupPending(engine.h.core)).toMatchObject({ rotated: 0 });
    engine.h.clock.advance(3601);
    expect(await cleanupPending(engine.h.core)).toMatchObject({ rotated: 1 });
    const keys = engine.google.keys(engine.root.email);
    expect(keys).toHaveLength(1);
    expect(keys[0]?.id).not.toBe(keyIdOf(engine.root.credentials));
  });
});
