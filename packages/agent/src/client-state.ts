/**
 * What the agent keeps in its data directory across restarts, where Nomad's client keeps it: `client/client-id` (the
 * node ID) and `client/secret-id` (the node's SecretID), both generated at the first start, so a restarted agent is
 * the same node and re-registers with its own secret. The folder is 0700 and the files 0600 (the secret is the node's
 * whole credential); a file found readable by others is made private again. Nomad's third way to hand an agent its
 * introduction token, `client/intro_token.jwt`, is read here too.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface NodeIdentity {
  id: string;
  secretId: string;
  /** Whether this start made them (a new node, which needs an introduction token to register). */
  created: boolean;
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function clientDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'client');
}

/** Writes `text` to `file` with mode 0600, whole or not at all (a temporary file renamed over it). */
function writePrivate(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

function readPrivate(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/** The node's ID and SecretID from the data directory, made (and kept) at the first start. */
export function loadOrCreateIdentity(dataDir: string): NodeIdentity {
  const folder = clientDir(dataDir);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  chmodSync(folder, 0o700);
  const idFile = path.join(folder, 'client-id');
  const secretFile = path.join(folder, 'secret-id');
  const id = readPrivate(idFile);
  const secretId = readPrivate(secretFile);
  for (const [file, value] of [
    [idFile, id],
    [secretFile, secretId],
  ] as const) {
    if (value !== undefined && !uuid.test(value))
      throw new Error(`${file} does not hold a UUID; remove it to start as a new node`);
  }
  if (id && secretId) return { id, secretId, created: false };
  // Both are written before the first registration, so one alone is a first start cut short: start it again.
  const made = { id: randomUUID(), secretId: randomUUID() };
  writePrivate(secretFile, `${made.secretId}\n`);
  writePrivate(idFile, `${made.id}\n`);
  return { ...made, created: true };
}

/** The introduction token left in `client/intro_token.jwt`, if any. */
export function storedIntroToken(dataDir: string): string | undefined {
  return readPrivate(path.join(clientDir(dataDir), 'intro_token.jwt')) || undefined;
}
