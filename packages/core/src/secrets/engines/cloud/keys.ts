import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { leasedSecret, type PathSpec, path, type Request } from '../../framework/backend.ts';
import { duration } from '../../framework/fields.ts';
import { configValue, loadConfig } from './config.ts';
import { contextOf } from './engine-context.ts';
import { asDomainError } from './google-client.ts';
import { loadAccount, rolesetKey, staticAccountKey, type WalItem } from './records.ts';
import { rootClient } from './root-client.ts';
import { leasedKeyDelay, settleNow, walItem, writeAhead } from './wal.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * Service-account keys (`roleset/:roleset/key`, its deprecated alias `key/:roleset`,
 * `static-account/:name/key`): a new key on the account, leased. Renewable up to config `max_ttl` while the
 * account's bindings are those it was issued under; revoking the lease deletes the key in the cloud. A key
 * no lease holds (the lease write failed, the request died) is deleted by the clean-up job (cleanup.ts).
 */

export const keySecretType = 'service_account_key';

const keyFields = {
  key_algorithm: z
    .enum(['KEY_ALG_RSA_2048', 'KEY_ALG_RSA_1024'])
    .default('KEY_ALG_RSA_2048')
    .describe('Private key algorithm of the service-account key; defaults to KEY_ALG_RSA_2048.'),
  key_type: z
    .enum(['TYPE_GOOGLE_CREDENTIALS_FILE', 'TYPE_PKCS12_FILE'])
    .default('TYPE_GOOGLE_CREDENTIALS_FILE')
    .describe('Private key type of the service-account key; defaults to TYPE_GOOGLE_CREDENTIALS_FILE.'),
  ttl: duration.optional().describe('Lease TTL of the key; defaults to config "ttl", and never past config "max_ttl".'),
};
type KeyFields = { key_algorithm: string; key_type: string; ttl?: number };

/** What a key's lease keeps: whose key it is, and the generation of the account it was issued under. */
type KeyInternal = {
  owner: string;
  email: string;
  keyName: string;
  generation: number;
};

async function issueKey(request: Request<KeyFields>, owner: string, what: string) {
  const item = await loadAccount(request.storage, owner);
  if (!item) throw badRequest(`${what} does not exist`);
  if (item.value.secret_type !== 'service_account_key') {
    throw badRequest(`${what} cannot generate service account keys (has secret type ${item.value.secret_type})`);
  }
  const config = configValue(await loadConfig(request.storage));
  const ctx = contextOf(request);
  const google = await rootClient(ctx);
  const email = item.value.service_account_email;
  // Write-ahead, as nothing of ours runs after the pipeline records the lease (or fails to): the request never
  // clears the record; the job settles it once the request is surely over, deleting the key unless one of the
  // account's key leases holds it. Knowing the lease id ahead would not spare that look at the leases: when
  // Google's answer is lost, the key has no name and is told from other keys of the window only by its lease.
  // The record holds no secret (the private key is only returned), so it is not sealed.
  const [ahead] = (await writeAhead(ctx, [{ kind: 'leased-key', owner, email }], leasedKeyDelay)) as [WalItem];
  let created: { name: string; privateKeyData: string; keyAlgorithm: string; privateKeyType: string };
  try {
    created = await google.createKey(email, request.data.key_algorithm, request.data.key_type);
  } catch (error) {
    // The key may exist all the same (the answer lost): the record, still unnamed, stays for the job.
    throw asDomainError(error, `creating a key for ${what}`);
  }
  await ctx.storage.update(ahead.sk, { set: { keyName: created.name } }, { when: { exists: true } });
  const internal: KeyInternal = { owner, email, keyName: created.name, generation: item.value.generation };
  const ttl = request.data.ttl || config.ttl;
  return {
    data: {
      private_key_data: created.privateKeyData,
      key_algorithm: created.keyAlgorithm ?? request.data.key_algorithm,
      key_type: created.privateKeyType ?? request.data.key_type,
    },
    secret: keyLeases.secret({
      ...(ttl ? { ttl: config.max_ttl ? Math.min(ttl, config.max_ttl) : ttl } : {}),
      ...(config.max_ttl ? { maxTtl: config.max_ttl } : {}),
      renewable: true,
      internal,
    }),
  };
}

const rolesetKeyHandler = (request: Request<KeyFields & { roleset: string }>) =>
  issueKey(request, rolesetKey(request.data.roleset), `roleset "${request.data.roleset}"`);
const staticKeyHandler = (request: Request<KeyFields & { name: string }>) =>
  issueKey(request, staticAccountKey(request.data.name), `static account "${request.data.name}"`);

const rolesetFields = z.object({
  roleset: typeString.pipe(z.string()).describe('Name of the roleset to generate the key under.'),
  ...keyFields,
});
const staticFields = z.object({
  name: typeString.pipe(z.string()).describe('Name of the static account to generate the key under.'),
  ...keyFields,
});
const both = (summary: string) => ({ read: summary, update: summary });

export const keyPaths: PathSpec[] = [
  path({
    pattern: 'roleset/:roleset/key',
    fields: rolesetFields,
    summaries: both('Generate a leased service-account key under the roleset.'),
    operations: { read: rolesetKeyHandler, update: rolesetKeyHandler },
  }),
  path({
    pattern: 'key/:roleset',
    fields: rolesetFields,
    summaries: both('Generate a leased service-account key under the roleset (deprecated: use roleset/:roleset/key).'),
    operations: { read: rolesetKeyHandler, update: rolesetKeyHandler },
  }),
  path({
    pattern: 'static-account/:name/key',
    fields: staticFields,
    summaries: both('Generate a leased service-account key under the static account.'),
    operations: { read: staticKeyHandler, update: staticKeyHandler },
  }),
];

const keyLeases = leasedSecret<KeyInternal>(keySecretType, {
  async renew({ internal: key, increment, storage }) {
    const item = await loadAccount(storage, key.owner);
    if (!item || item.value.generation !== key.generation || item.value.service_account_email !== key.email) {
      throw badRequest(
        `cannot renew: the bindings or service account of ${key.owner} changed since this key was issued`,
      );
    }
    const config = configValue(await loadConfig(storage));
    const ttl = increment || config.ttl;
    return { ...(ttl ? { ttl } : {}), ...(config.max_ttl ? { maxTtl: config.max_ttl } : {}) };
  },
  async revoke(lease) {
    const key = lease.internal;
    const ctx = contextOf(lease);
    const google = await rootClient(ctx);
    try {
      await google.deleteKey(key.keyName);
    } catch (error) {
      // Left for the clean-up job as well, so the key goes even if the lease is later force-revoked.
      await settleNow(
        ctx,
        [walItem(ctx, { kind: 'key', owner: key.owner, email: key.email, keyName: key.keyName }, 'now')],
        google,
      );
      throw error;
    }
  },
});

export const keyLeaseHooks = keyLeases.hooks;
