/**
 * Attacker: a table writer (storage is untrusted: docs/security.md), who can edit any item of the cloud engine's
 * partition but holds no keyring. The engine acts in the project with its root credential, so they try:
 *  - editing a key roleset's service-account email to the root account's, so `roleset/:name/key` mints a key of the
 *    engine's own root service account for whoever may read that roleset's keys;
 *  - adding a binding (`roles/owner` on the project) to a roleset, so its next rotation grants it in the project;
 *  - editing a static account to another service account, and a MAC-less configuration (as before item MACs).
 * They must never reach: a key or token of an account the engine was not told to use, a role in the project no
 * roleset was given. Each item carries a MAC (`cloud-item`, `engines/cloud/records.ts`), signed by `MountStorage` on
 * every write and checked on every read: an edited item reads as absent (the request is refused naming it) and
 * nothing of it is used. Google's APIs are the emulator (test/emulators/google.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudItemKind } from '../../packages/core/src/secrets/engines/cloud/records.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

const viewerOnly = `resource "//cloudresourcemanager.googleapis.com/projects/proj-1" { roles = ["roles/viewer"] }`;
const scopes = ['https://www.googleapis.com/auth/cloud-platform'];

describe('attack: a table writer edits the cloud engine’s items', () => {
  let engine: CloudEngine;
  let raw: MountStorage;
  /** Whether the item at `key` verifies as the engine's. */
  const verifies = async (key: string) =>
    engine.h.core.store.verified(cloudItemKind, await raw.getItem(key)) !== undefined;

  beforeAll(async () => {
    engine = await startCloudEngine();
    const mount = await engine.h.core.mounts.resolve('cloud/');
    raw = new MountStorage(engine.h.core.store, engine.h.core.keyring, mount?.uuid as string);
    for (const [name, body] of [
      ['keys', { project: 'proj-1', bindings: viewerOnly, secret_type: 'service_account_key' }],
      ['tokens', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes }],
    ] as const)
      expect((await engine.call('POST', `/v1/cloud/roleset/${name}`, body)).status).toBe(204);
  });
  afterAll(async () => engine?.close());

  const ownersOfProject = () =>
    engine.google
      .policy('projects/proj-1')
      .bindings.filter((binding) => binding.role === 'roles/owner')
      .flatMap((binding) => binding.members);

  it('every item the engine wrote verifies (config, rolesets)', async () => {
    for (const key of ['config', 'roleset/keys', 'roleset/tokens']) expect(await verifies(key), key).toBe(true);
  });

  it("a key roleset edited to the root account's email mints no key of the root account", async () => {
    const genuine = (await raw.getItem('roleset/keys')) as Record<string, unknown> & { value: object };
    const rootKeys = engine.google.keys(engine.root.email).length;
    await raw.putItem('roleset/keys', {
      ...genuine,
      value: { ...genuine.value, service_account_email: engine.root.email },
    });
    const issued = await engine.call('POST', '/v1/cloud/roleset/keys/key');
    expect(issued.status).toBe(400);
    expect(issued.body.errors[0]).toContain('roleset "keys" does not exist');
    expect(issued.body.data).toBeUndefined();
    expect(engine.google.keys(engine.root.email)).toHaveLength(rootKeys);
    expect((await engine.call('GET', '/v1/cloud/roleset/keys')).status).toBe(404);
    expect(await verifies('roleset/keys')).toBe(false);
    await raw.putItem('roleset/keys', genuine);
    expect((await engine.call('POST', '/v1/cloud/roleset/keys/key')).status).toBe(200);
  });

  it('a binding added to a roleset is never granted in the project', async () => {
    const genuine = (await raw.getItem('roleset/tokens')) as Record<string, unknown> & {
      value: { bindings: Record<string, string[]> };
    };
    const bindings = Object.fromEntries(
      Object.entries(genuine.value.bindings).map(([resource, roles]) => [resource, [...roles, 'roles/owner']]),
    );
    await raw.putItem('roleset/tokens', { ...genuine, value: { ...genuine.value, bindings } });
    const rotated = await engine.call('POST', '/v1/cloud/roleset/tokens/rotate');
    expect(rotated.status).toBe(400);
    expect(rotated.body.errors[0]).toContain('roleset "tokens" does not exist');
    expect(ownersOfProject()).toEqual([]);
    const token = await engine.call('GET', '/v1/cloud/roleset/tokens/token');
    expect(token.status).toBe(400);
    expect(token.body.data).toBeUndefined();
    await raw.putItem('roleset/tokens', genuine);
    expect((await engine.call('GET', '/v1/cloud/roleset/tokens/token')).status).toBe(200);
  });

  it('a MAC-less configuration is refused: the engine acts with no credential it did not store', async () => {
    const genuine = (await raw.getItem('config')) as Record<string, unknown>;
    const { mac: _mac, ...bare } = genuine;
    await raw.putItem('config', { ...bare, value: { ...(genuine.value as object), ttl: 1 } });
    expect((await engine.call('GET', '/v1/cloud/config')).status).toBe(404);
    expect(await verifies('config')).toBe(false);
    await raw.putItem('config', genuine);
    expect((await engine.call('GET', '/v1/cloud/config')).status).toBe(200);
  });
});
