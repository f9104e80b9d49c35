import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileKeySource, Keyring, type KeySource, SealError, type WrappedKeyStore } from './keyring.ts';

function memoryStore(): WrappedKeyStore & { puts: Uint8Array[] } {
  let stored: Uint8Array | undefined;
  const puts: Uint8Array[] = [];
  return {
    puts,
    async get() {
      return stored;
    },
    async putIfAbsent(wrapped) {
      puts.push(wrapped);
      if (stored) return false;
      stored = wrapped;
      return true;
    },
  };
}

describe('Keyring sealing', () => {
  const keyring = Keyring.fromDataKey(randomBytes(32));

  it('opens what it sealed, under the same context', () => {
    const sealed = keyring.seal('s3cr3t-value ✓', 'secret/db/password');
    expect(sealed).toMatch(/^v1:[A-Za-z0-9_-]+$/);
    expect(keyring.open(sealed, 'secret/db/password')).toBe('s3cr3t-value ✓');
  });

  it('uses a fresh IV each time', () => {
    const a = keyring.seal('same', 'ctx');
    const b = keyring.seal('same', 'ctx');
    expect(a).not.toBe(b);
    expect(keyring.open(a, 'ctx')).toBe('same');
    expect(keyring.open(b, 'ctx')).toBe('same');
  });

  it('never contains the plaintext, raw or encoded', () => {
    const plaintext = 'hunter2-hunter2-hunter2';
    const sealed = keyring.seal(plaintext, 'ctx');
    expect(sealed).not.toContain(plaintext);
    expect(sealed).not.toContain(Buffer.from(plaintext).toString('base64url').slice(0, 16));
    // 12-byte IV + 16-byte tag around a ciphertext as long as the plaintext
    expect(Buffer.from(sealed.slice(3), 'base64url').length).toBe(12 + plaintext.length + 16);
  });

  it('refuses another context', () => {
    const sealed = keyring.seal('value', 'secret/a');
    expect(() => keyring.open(sealed, 'secret/b')).toThrow(SealError);
  });

  it('refuses a tampered value', () => {
    const sealed = keyring.seal('value', 'ctx');
    const bytes = Buffer.from(sealed.slice(3), 'base64url');
    bytes[14]! ^= 1;
    expect(() => keyring.open(`v1:${bytes.toString('base64url')}`, 'ctx')).toThrow(SealError);
  });

  it('refuses another keyring', () => {
    const sealed = keyring.seal('value', 'ctx');
    expect(() => Keyring.fromDataKey(randomBytes(32)).open(sealed, 'ctx')).toThrow(SealError);
  });

  it.each(['', 'v1:', 'v2:AAAA', 'v1:not base64!', 'v1:AAAA', keyring.seal('x', 'ctx').slice(3)])(
    'refuses malformed input %j',
    (input) => {
      expect(() => keyring.open(input, 'ctx')).toThrow(SealError);
    },
  );

  it('hashes deterministically, differently per keyring and per value', () => {
    const other = Keyring.fromDataKey(randomBytes(32));
    expect(keyring.hash('token-1')).toBe(keyring.hash('token-1'));
    expect(keyring.hash('token-1')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(keyring.hash('token-2')).not.toBe(keyring.hash('token-1'));
    expect(other.hash('token-1')).not.toBe(keyring.hash('token-1'));
  });

  it('derives a stable 32-byte token key distinct from the data key', () => {
    const dataKey = randomBytes(32);
    const tokenKey = Keyring.fromDataKey(dataKey).tokenKey;
    expect(tokenKey).toHaveLength(32);
    expect(Buffer.from(tokenKey).equals(dataKey)).toBe(false);
    expect(Keyring.fromDataKey(dataKey).tokenKey).toEqual(tokenKey);
  });

  it('rejects a data key that is not 32 bytes', () => {
    expect(() => Keyring.fromDataKey(new Uint8Array(16))).toThrow('data key must be 32 bytes, got 16');
  });
});

describe('fileKeySource', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keyring-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the key file 0600 with its parent dirs and reuses it across loads', async () => {
    const path = join(dir, 'nested', 'deeper', 'kek');
    const store = memoryStore();
    const first = await Keyring.load(fileKeySource(path), store);
    const info = await stat(path);
    expect(info.mode & 0o777).toBe(0o600);
    expect(info.size).toBe(32);

    const second = await Keyring.load(fileKeySource(path), store);
    expect(second.hash('token')).toBe(first.hash('token'));
    expect(second.open(first.seal('value', 'ctx'), 'ctx')).toBe('value');
    expect(store.puts).toHaveLength(1);
    expect((await stat(path)).mtimeMs).toBe(info.mtimeMs);
  });

  it('wraps the data key so the wrapped form does not reveal it', async () => {
    const source = fileKeySource(join(dir, 'kek'));
    const { plain, wrapped } = await source.generate();
    expect(plain).toHaveLength(32);
    expect(wrapped).toHaveLength(12 + 32 + 16);
    expect(Buffer.from(wrapped).includes(Buffer.from(plain))).toBe(false);
    expect(await source.unwrap(wrapped)).toEqual(plain);
  });

  it('refuses a data key wrapped under another key file', async () => {
    const { wrapped } = await fileKeySource(join(dir, 'a')).generate();
    await expect(fileKeySource(join(dir, 'b')).unwrap(wrapped)).rejects.toThrow(join(dir, 'b'));
  });

  it('agrees on one key file when two sources create it at once', async () => {
    const path = join(dir, 'kek');
    const [a, b] = [fileKeySource(path), fileKeySource(path)];
    const [fromA, fromB] = await Promise.all([a.generate(), b.generate()]);
    expect(await b.unwrap(fromA.wrapped)).toEqual(fromA.plain);
    expect(await a.unwrap(fromB.wrapped)).toEqual(fromB.plain);
  });

  it('names a key file of the wrong size', async () => {
    const path = join(dir, 'kek');
    await writeFile(path, randomBytes(31));
    await expect(fileKeySource(path).generate()).rejects.toThrow(`key file ${path} holds 31 bytes, expected 32`);
  });

  it('ends with one data key when two loads race', async () => {
    const inner = fileKeySource(join(dir, 'kek'));
    const counts = { generate: 0, unwrap: 0 };
    const source: KeySource = {
      kind: inner.kind,
      generate: () => {
        counts.generate++;
        return inner.generate();
      },
      unwrap: (wrapped) => {
        counts.unwrap++;
        return inner.unwrap(wrapped);
      },
    };
    const store = memoryStore();

    const [a, b] = await Promise.all([Keyring.load(source, store), Keyring.load(source, store)]);

    expect(counts).toEqual({ generate: 2, unwrap: 1 });
    expect(store.puts).toHaveLength(2);
    expect(await store.get()).toBe(store.puts[0]);
    expect(b.hash('token')).toBe(a.hash('token'));
    expect(b.tokenKey).toEqual(a.tokenKey);
    expect(a.open(b.seal('value', 'ctx'), 'ctx')).toBe('value');
  });
});
