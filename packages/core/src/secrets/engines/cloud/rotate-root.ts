import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest, conflict } from '../../../lib/errors.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { type PathSpec, path } from '../../framework/backend.ts';
import { configKey, loadConfig, nextRotation, openCredentials, parseCredentials, sealCredentials } from './config.ts';
import type { EngineContext } from './engine-context.ts';
import { asDomainError } from './google-client.ts';
import { rootClient } from './root-client.ts';
import { settleNow, switchWrites, walItem, writeAhead } from './wal.ts';

/**
 * `config/rotate-root`: a new key for the root service account becomes the stored credential, then the old
 * key is deleted. The new key is recorded ahead (a crash before it is stored deletes it); the old key's
 * removal is recorded in the same write that stores the new one.
 */
export async function rotateRootNow(ctx: EngineContext): Promise<string> {
  const { system, storage } = ctx;
  const config = await loadConfig(storage);
  const credentials = openCredentials(storage, config);
  if (!config || !credentials) {
    throw badRequest(
      'cannot rotate the root credential: config did not use "credentials" (workload identity and application default credentials have no key to rotate)',
    );
  }
  const google = await rootClient(ctx, config);
  const email = credentials.client_email;
  let knownBefore: string[];
  try {
    knownBefore = (await google.listKeys(email)).map((key) => key.name);
  } catch (error) {
    throw asDomainError(error, `listing keys of the root service account ${email}`);
  }
  const [ahead] = await writeAhead(ctx, [{ kind: 'new-keys', owner: configKey, email, knownBefore }]);
  let created: { name: string; privateKeyData: string };
  try {
    created = await google.createKey(email, 'KEY_ALG_RSA_2048', 'TYPE_GOOGLE_CREDENTIALS_FILE');
  } catch (error) {
    await settleNow(ctx, ahead ? [ahead] : [], google);
    throw asDomainError(error, `creating a key for the root service account ${email}`);
  }
  const fresh = parseCredentials(Buffer.from(created.privateKeyData, 'base64').toString('utf8'));
  const oldKey = walItem(
    ctx,
    {
      kind: 'key',
      owner: configKey,
      email,
      keyName: `projects/-/serviceAccounts/${email}/keys/${credentials.private_key_id}`,
    },
    'now',
  );
  const now = epochSeconds(system.clock);
  const rotateAt = nextRotation(config.value, now, now);
  try {
    await storage.transact([
      {
        update: configKey,
        // No next rotation (`rotateAt` undefined) removes the one stored.
        change: { set: { credentials: sealCredentials(storage, JSON.stringify(fresh)), lastRotation: now, rotateAt } },
        when: { equals: { credentials: config.credentials } },
      },
      ...switchWrites(ahead ? [ahead] : [], [oldKey]),
    ]);
  } catch (error) {
    await settleNow(ctx, ahead ? [ahead] : [], google);
    if (error instanceof ConditionFailed)
      throw conflict('the root credential changed while it was being rotated; try again');
    throw error;
  }
  // The old key is deleted with the new credential, so the rotation also proves the new key works.
  await settleNow(ctx, [oldKey]);
  return fresh.private_key_id;
}

export const rotateRootPaths: PathSpec[] = [
  path({
    pattern: 'config/rotate-root',
    fields: z.object({}),
    summaries: {
      update:
        'Rotate the root credential: a new key for the root service account replaces the stored one, which is then deleted.',
    },
    operations: {
      update: async ({ system, mount, storage }) => ({
        data: { private_key_id: await rotateRootNow({ system, mount, storage }) },
      }),
    },
  }),
];
