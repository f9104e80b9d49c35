import { createPrivateKey } from 'node:crypto';
import { Cron } from 'croner';
import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { formatDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { bool, duration } from '../../framework/fields.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { CredentialsFile } from './google-client.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `config`: the engine's root credential and the TTLs of the keys it issues. The credentials are a
 * service-account JSON file's content (the CLI's `credentials=@file.json` reads the file and sends its
 * content), sealed and never shown; or workload identity federation (`identity_token_audience` with
 * `service_account_email`); or, with neither, the server's application default credentials.
 */

export interface ConfigValue {
  ttl: number;
  max_ttl: number;
  identity_token_audience: string;
  service_account_email: string;
  identity_token_ttl: number;
  rotation_period: number;
  rotation_schedule: string;
  rotation_window: number;
  disable_automated_rotation: boolean;
}

export interface ConfigItem {
  value: ConfigValue;
  /** Sealed credentials JSON. */
  credentials?: string;
  /** Epoch seconds of the next automatic root rotation. */
  rotateAt?: number;
  lastRotation?: number;
}

export const configKey = 'config';
const defaults: ConfigValue = {
  ttl: 0,
  max_ttl: 0,
  identity_token_audience: '',
  service_account_email: '',
  identity_token_ttl: 3600,
  rotation_period: 0,
  rotation_schedule: '',
  rotation_window: 0,
  disable_automated_rotation: false,
};

const fields = z.object({
  credentials: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The content of a GCP service-account credentials JSON file, the root credential the engine acts with (it needs permission to create service accounts, keys and IAM bindings). Sealed and never shown; "" removes it.',
    ),
  ttl: duration
    .optional()
    .describe("Default lease TTL of the service-account keys the engine issues; 0 uses the mount's default."),
  max_ttl: duration
    .optional()
    .describe("Maximum lease TTL of the service-account keys the engine issues; 0 uses the mount's maximum."),
  identity_token_audience: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Audience of the plugin identity tokens exchanged at Google STS (workload identity federation); set together with "service_account_email".',
    ),
  service_account_email: typeString
    .pipe(z.string())
    .optional()
    .describe('Email of the service account to impersonate with the federated token (workload identity federation).'),
  identity_token_ttl: duration
    .optional()
    .describe('Time-to-live of the plugin identity tokens; 0 means the default, one hour.'),
  rotation_period: duration
    .optional()
    .describe(
      'Rotate the root credential automatically this often (at least 10 seconds). Mutually exclusive with "rotation_schedule".',
    ),
  rotation_schedule: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Cron-style schedule (five fields, UTC) on which the root credential is rotated. Mutually exclusive with "rotation_period".',
    ),
  rotation_window: duration
    .optional()
    .describe(
      'How long after each scheduled time a rotation may still happen (at least 1h); only with "rotation_schedule".',
    ),
  disable_automated_rotation: bool
    .optional()
    .describe('If true, the root credential is not rotated automatically, whatever the period or schedule.'),
});
type Fields = z.output<typeof fields>;

export async function loadConfig(storage: MountStorage): Promise<ConfigItem | undefined> {
  const item = await storage.getItem<ConfigItem & Record<string, unknown>>(configKey);
  return item ? { ...item, value: { ...defaults, ...item.value } } : undefined;
}

export function configValue(item: ConfigItem | undefined): ConfigValue {
  return { ...defaults, ...item?.value };
}

/** Parses and checks a service-account credentials file, or throws the 400 Vault gives. */
export function parseCredentials(text: string): CredentialsFile {
  let parsed: Partial<CredentialsFile>;
  try {
    parsed = JSON.parse(text) as Partial<CredentialsFile>;
  } catch (error) {
    throw badRequest(`invalid credentials JSON file: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object') throw badRequest('invalid credentials JSON file: not a JSON object');
  if (parsed.type !== 'service_account')
    throw badRequest(
      `invalid credentials JSON file: "type" must be "service_account", got ${JSON.stringify(parsed.type ?? null)}`,
    );
  for (const field of ['client_email', 'private_key', 'private_key_id'] as const) {
    if (typeof parsed[field] !== 'string' || parsed[field] === '')
      throw badRequest(`invalid credentials JSON file: missing "${field}"`);
  }
  try {
    createPrivateKey(parsed.private_key as string);
  } catch {
    throw badRequest('invalid credentials JSON file: "private_key" is not a PEM private key');
  }
  return parsed as CredentialsFile;
}

export function openCredentials(storage: MountStorage, item: ConfigItem | undefined): CredentialsFile | undefined {
  return item?.credentials
    ? (JSON.parse(storage.open(`${configKey}#credentials`, item.credentials)) as CredentialsFile)
    : undefined;
}

export const sealCredentials = (storage: MountStorage, text: string) => storage.seal(`${configKey}#credentials`, text);

/** The next automatic root rotation after `now` (from `base` for a period), if any. */
export function nextRotation(value: ConfigValue, now: number, base: number): number | undefined {
  if (value.disable_automated_rotation) return undefined;
  if (value.rotation_period > 0) return base + value.rotation_period;
  if (value.rotation_schedule) {
    const next = new Cron(value.rotation_schedule, { paused: true, timezone: 'UTC' }).nextRun(new Date(now * 1000));
    return next ? Math.floor(next.getTime() / 1000) : undefined;
  }
  return undefined;
}

async function write({ storage, system, data }: Request<Fields>) {
  const item = await loadConfig(storage);
  const stored = configValue(item);
  const { credentials, ...sent } = data;
  const merged: ConfigValue = {
    ...stored,
    ...(Object.fromEntries(Object.entries(sent).filter(([, value]) => value !== undefined)) as Partial<ConfigValue>),
  };
  if (sent.rotation_period && sent.rotation_schedule)
    throw badRequest('"rotation_period" and "rotation_schedule" cannot both be set: choose one');
  if (sent.rotation_period) merged.rotation_schedule = '';
  if (sent.rotation_schedule) merged.rotation_period = 0;
  if (merged.rotation_period > 0 && merged.rotation_period < 10)
    throw badRequest('invalid "rotation_period": must be at least 10 seconds');
  if (merged.rotation_schedule) {
    const parts = merged.rotation_schedule.trim().split(/\s+/);
    if (parts.length !== 5)
      throw badRequest(
        `invalid "rotation_schedule": expected five fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
      );
    try {
      new Cron(merged.rotation_schedule, { paused: true });
    } catch (error) {
      throw badRequest(`invalid "rotation_schedule": ${(error as Error).message}`);
    }
  }
  if (merged.rotation_window > 0) {
    if (merged.rotation_window < 3600)
      throw badRequest('invalid "rotation_window": must be at least 3600 seconds (1h)');
    if (merged.rotation_period > 0)
      throw badRequest('"rotation_window" cannot be used with "rotation_period", only with "rotation_schedule"');
    if (!merged.rotation_schedule) throw badRequest('"rotation_window" needs a "rotation_schedule"');
  }
  if (merged.max_ttl > 0 && merged.ttl > merged.max_ttl) throw badRequest('"ttl" cannot be greater than "max_ttl"');
  if (sent.identity_token_ttl === 0) merged.identity_token_ttl = defaults.identity_token_ttl;

  const hasCredentials = credentials !== undefined ? credentials !== '' : Boolean(item?.credentials);
  if (credentials && sent.identity_token_audience) {
    throw badRequest(
      '"credentials" and "identity_token_audience" are mutually exclusive: use one root credential source',
    );
  }
  // A new source replaces the other one: writing credentials clears federation, and the reverse.
  if (credentials) {
    merged.identity_token_audience = '';
    merged.service_account_email = '';
  }
  if (Boolean(merged.identity_token_audience) !== Boolean(merged.service_account_email)) {
    throw badRequest('"identity_token_audience" and "service_account_email" must be set together');
  }
  const sealed = credentials ? sealCredentials(storage, JSON.stringify(parseCredentials(credentials))) : undefined;
  const dropCredentials = credentials === '' || (merged.identity_token_audience !== '' && !credentials);
  if ((merged.rotation_period > 0 || merged.rotation_schedule) && !(hasCredentials && !dropCredentials)) {
    throw badRequest('automated root rotation needs "credentials": only a stored service-account key can be rotated');
  }
  const now = epochSeconds(system.clock);
  const rotateAt = nextRotation(merged, now, item?.lastRotation ?? now);
  const next: ConfigItem = {
    value: merged,
    ...(sealed
      ? { credentials: sealed }
      : !dropCredentials && item?.credentials
        ? { credentials: item.credentials }
        : {}),
    ...(rotateAt !== undefined ? { rotateAt } : {}),
    ...(item?.lastRotation ? { lastRotation: item.lastRotation } : {}),
  };
  await storage.putItem(configKey, { ...next });
  return undefined;
}

export const configPaths: PathSpec[] = [
  path({
    pattern: 'config',
    fields,
    summaries: {
      read: "Read the engine's configuration (the credentials are never shown).",
      create:
        'Configure the root credential, the TTLs of issued keys and the automatic rotation of the root credential.',
      update:
        'Configure the root credential, the TTLs of issued keys and the automatic rotation of the root credential.',
    },
    exists: async ({ storage }) => (await loadConfig(storage)) !== undefined,
    operations: {
      read: async ({ storage }) => {
        const item = await loadConfig(storage);
        if (!item) return undefined;
        const value = item.value;
        return {
          data: {
            ttl: formatDuration(value.ttl),
            max_ttl: formatDuration(value.max_ttl),
            identity_token_audience: value.identity_token_audience,
            service_account_email: value.service_account_email,
            identity_token_ttl: value.identity_token_ttl,
            rotation_period: value.rotation_period,
            rotation_schedule: value.rotation_schedule,
            rotation_window: value.rotation_window,
            disable_automated_rotation: value.disable_automated_rotation,
          },
        };
      },
      create: write,
      update: write,
    },
  }),
];
