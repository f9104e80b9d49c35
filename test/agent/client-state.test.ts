/** The node's ID and secret in the agent's data directory: made once, kept private, the same after a restart. */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOrCreateIdentity, storedIntroToken } from '../../packages/agent/src/client-state.ts';

const folders: string[] = [];
const fresh = () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-state-'));
  folders.push(folder);
  return folder;
};
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
const mode = (file: string) => statSync(file).mode & 0o777;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("the node's identity in the data directory", () => {
  it('is made at the first start, in client/client-id and client/secret-id (0600, folder 0700), and kept', () => {
    const dataDir = fresh();
    const first = loadOrCreateIdentity(dataDir);
    expect(first.created).toBe(true);
    expect(first.id).toMatch(uuid);
    expect(first.secretId).toMatch(uuid);
    expect(first.secretId).not.toBe(first.id);
    const client = path.join(dataDir, 'client');
    expect(readFileSync(path.join(client, 'client-id'), 'utf8').trim()).toBe(first.id);
    expect(readFileSync(path.join(client, 'secret-id'), 'utf8').trim()).toBe(first.secretId);
    expect(mode(path.join(client, 'client-id'))).toBe(0o600);
    expect(mode(path.join(client, 'secret-id'))).toBe(0o600);
    expect(mode(client)).toBe(0o700);
    const again = loadOrCreateIdentity(dataDir);
    expect(again).toEqual({ id: first.id, secretId: first.secretId, created: false });
  });

  it('makes a secret found readable by others private again, and keeps it', () => {
    const dataDir = fresh();
    const first = loadOrCreateIdentity(dataDir);
    const secretFile = path.join(dataDir, 'client', 'secret-id');
    chmodSync(secretFile, 0o644);
    chmodSync(path.join(dataDir, 'client'), 0o755);
    expect(loadOrCreateIdentity(dataDir).secretId).toBe(first.secretId);
    expect(mode(secretFile)).toBe(0o600);
    expect(mode(path.join(dataDir, 'client'))).toBe(0o700);
  });

  it('refuses a file that holds no UUID (naming it), rather than becoming another node', () => {
    const dataDir = fresh();
    loadOrCreateIdentity(dataDir);
    const idFile = path.join(dataDir, 'client', 'client-id');
    writeFileSync(idFile, 'not-a-uuid\n');
    expect(() => loadOrCreateIdentity(dataDir)).toThrow(`${idFile} does not hold a UUID`);
  });

  it('starts over when a first start was cut short between the two files (the node never registered)', () => {
    const dataDir = fresh();
    const first = loadOrCreateIdentity(dataDir);
    rmSync(path.join(dataDir, 'client', 'client-id'));
    const second = loadOrCreateIdentity(dataDir);
    expect(second.created).toBe(true);
    expect(second.secretId).not.toBe(first.secretId);
  });

  it("reads Nomad's intro_token.jwt file, and nothing when there is none", () => {
    const dataDir = fresh();
    loadOrCreateIdentity(dataDir);
    expect(storedIntroToken(dataDir)).toBeUndefined();
    writeFileSync(path.join(dataDir, 'client', 'intro_token.jwt'), 'eyJ.a.b\n', { mode: 0o644 });
    expect(storedIntroToken(dataDir)).toBe('eyJ.a.b');
    expect(mode(path.join(dataDir, 'client', 'intro_token.jwt'))).toBe(0o600);
  });
});
