import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AuditOptionError,
  type AuditSink,
  deviceTypes,
  openSink,
  probeFile,
  realDestination,
} from '../../lib/audit-sinks.ts';
import type { Clock } from '../../lib/clock.ts';
import { badRequest } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { itemKind } from '../../storage/item-mac.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { ConditionFailed, type Item, type Store } from '../../storage/store.ts';
import { auditHash } from './audit-hash.ts';

/** An audit device as `sys/audit` shows it. */
export interface AuditDeviceInfo {
  path: string;
  type: string;
  description: string;
  options: Record<string, string>;
  local: boolean;
}

interface StoredDevice extends AuditDeviceInfo {
  /** The device's HMAC salt, sealed: every function of a stage hashes with the same one. */
  salt: string;
}

interface LiveDevice extends AuditDeviceInfo {
  salt: Uint8Array;
  sink: AuditSink;
  /** Stands for an item that failed its MAC: it has no salt and writes nothing. */
  forged?: true;
}

const knownOptions = new Set([
  'file_path',
  'path',
  'mode',
  'address',
  'socket_type',
  'write_timeout',
  'log_raw',
  'hmac_accessor',
  'prefix',
  'elide_list_responses',
  'format',
  'facility',
  'tag',
  'fallback',
  'filter',
  'exclude',
]);
const saltContext = (path: string) => `audit-salt:${path}`;

/** The partition and sort key of a device's item. */
export const auditDevicePk = 'sys';
export const auditDeviceSk = (devicePath: string) => `audit/${devicePath}`;

/**
 * A device item is authenticated whole (`storage/item-mac.ts`): where the audit trail goes, and whether it carries
 * raw tokens (`log_raw`), is security state as much as a policy is. A forged, edited, moved or MAC-less device is
 * never opened: it stands in the list of live devices as one that fails every entry (so the service fails closed,
 * as for a device the checks refuse), and `sys/audit` does not list it.
 */
export const auditDeviceKind = itemKind('audit-device', [], { epoch: 'init' });

/**
 * What only the operator decides about audit devices, read from the environment when the process starts (never
 * from a request): Vault's `allow_audit_log_prefixing`, and the directories no file device may write into.
 */
export interface AuditOperatorSettings {
  /** `KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING=true`: a device may set `prefix` (text written before every line). */
  allowPrefix: boolean;
  /** Real paths (symlinks resolved) of the data directory and of the code this process runs. */
  protectedDirectories: string[];
}

/**
 * The data directory (`KEYHAVEN_DATA_DIR`, default `.keyhaven`, as `npm start` resolves it) and the code: the
 * repository (its `node_modules` included) this module runs from, or its own folder in a Lambda bundle.
 */
export function auditSettingsFromEnvironment(env: Record<string, string | undefined>): AuditOperatorSettings {
  const allowPrefix = parseFlag(env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING);
  if (env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING !== undefined && allowPrefix === undefined)
    throw new Error(
      `KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING must be true or false, not "${env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING}"`,
    );
  // A bundle without a module URL (none today: the functions are ESM) falls back to the working directory (/var/task).
  const moduleDirectory = import.meta.url ? dirname(fileURLToPath(import.meta.url)) : process.cwd();
  return {
    allowPrefix: allowPrefix ?? false,
    protectedDirectories: [resolve(env.KEYHAVEN_DATA_DIR || '.keyhaven'), codeRoot(moduleDirectory)].map(realOrSame),
  };
}

/** The nearest ancestor whose package.json declares workspaces (the repository), else the module's own folder. */
function codeRoot(moduleDirectory: string): string {
  for (let directory = moduleDirectory; ; directory = dirname(directory)) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest) && /"workspaces"\s*:/.test(readFileSync(manifest, 'utf8'))) return directory;
    if (directory === dirname(directory)) return moduleDirectory;
  }
}

function realOrSame(directory: string): string {
  try {
    return realpathSync(directory);
  } catch {
    return directory; // not created yet: compared as written
  }
}

const isInside = (path: string, directory: string) =>
  path === directory || path.startsWith(directory.endsWith(sep) ? directory : directory + sep);

/** The table's record of the stage's audit devices (`pk = sys`, `sk = audit/<path>`), cached per process like mounts. */
export class AuditDevices {
  private cache: { devices: LiveDevice[]; loadedAt: number } | undefined;

  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
    private readonly cacheSeconds: number,
    private readonly stdout: (line: string) => void,
    readonly log: Logger,
    readonly settings: AuditOperatorSettings = auditSettingsFromEnvironment(process.env),
  ) {}

  /** The devices whose items verify (a forged one is not listed: it is not ours, and it writes nothing). */
  async list(): Promise<AuditDeviceInfo[]> {
    return (await this.stored()).trusted.map(({ salt: _salt, ...info }) => info);
  }

  async enable(
    path: string,
    input: {
      type: string;
      description?: string;
      options?: Record<string, string>;
      local?: boolean;
    },
  ): Promise<void> {
    const devicePath = normalisePath(path);
    const options = input.options ?? {};
    const unknown = Object.keys(options).filter((key) => !knownOptions.has(key));
    if (unknown.length > 0) throw badRequest(`unknown audit device options: ${unknown.join(', ')}`);
    if (!deviceTypes.includes(input.type as (typeof deviceTypes)[number])) {
      throw badRequest(`unknown audit device type "${input.type}" (supported: ${deviceTypes.join(', ')})`);
    }
    if ((options.format ?? 'json') !== 'json') throw badRequest(`"format" must be json, not "${options.format}"`);
    for (const flag of ['log_raw', 'hmac_accessor', 'elide_list_responses'] as const) {
      if (options[flag] !== undefined && parseFlag(options[flag]) === undefined)
        throw badRequest(`"${flag}" must be a boolean, not "${options[flag]}"`);
    }
    if (options.prefix !== undefined && !this.settings.allowPrefix) {
      // CVE-2025-6000 / HCSEC-2025-14: a chosen prefix before attacker-influenced lines is how an audit file becomes a script.
      throw badRequest(
        '"prefix" is not allowed: audit log prefixing is off unless the operator sets KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING=true',
      );
    }
    const sink = sinkOrRefusal(() => openSink(input.type, options, this.stdout));
    if (input.type === 'file') await this.refuseProtectedDestination(options);
    try {
      if (input.type === 'file') await probeFile(options);
      else await sink.write(''); // Vault's socket device connects when enabled: a listener that is not there is a 400 now.
    } catch (error) {
      throw badRequest(
        error instanceof AuditOptionError ? error.message : `audit device cannot write: ${(error as Error).message}`,
      );
    } finally {
      sink.close();
    }
    const salt = this.keyring.seal(randomBytes(32).toString('base64'), saltContext(devicePath));
    const item: StoredDevice = {
      path: devicePath,
      type: input.type,
      description: input.description ?? '',
      options,
      local: input.local ?? false,
      salt,
    };
    try {
      await this.store.put(
        this.store.signed(auditDeviceKind, { pk: auditDevicePk, sk: auditDeviceSk(devicePath), ...item }),
        { when: { absent: true } },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) throw badRequest(`path already in use at ${devicePath}`);
      throw error;
    }
    this.invalidate();
  }

  /** A file device never writes into the data directory or the code, however its path is spelled (`..`, symlinks). */
  private async refuseProtectedDestination(options: Record<string, string>): Promise<void> {
    const filePath = options.file_path ?? options.path;
    if (filePath === undefined || filePath === 'stdout' || filePath === 'discard') return;
    let destination: string;
    try {
      destination = await realDestination(filePath);
    } catch (error) {
      if (error instanceof AuditOptionError) throw badRequest(error.message);
      throw badRequest(`cannot resolve audit file "${filePath}": ${(error as Error).message}`);
    }
    const inside = this.settings.protectedDirectories.find((directory) => isInside(destination, directory));
    if (inside) {
      throw badRequest(
        `"file_path" must not be inside the data directory or the code (${inside}): "${filePath}" leads to ${destination}`,
      );
    }
  }

  async disable(path: string): Promise<void> {
    await this.store.delete({ pk: auditDevicePk, sk: auditDeviceSk(normalisePath(path)) });
    this.invalidate();
  }

  /** `sys/audit-hash/:path`: what the device would write for this value. */
  async hash(path: string, input: string): Promise<string | undefined> {
    const device = (await this.live()).find((candidate) => candidate.path === normalisePath(path) && !candidate.forged);
    return device && auditHash(device.salt, input);
  }

  /** The enabled devices with their salts opened and sinks ready; refreshed after `cacheSeconds`. */
  async live(): Promise<LiveDevice[]> {
    const now = this.clock.now();
    if (this.cache && now - this.cache.loadedAt <= this.cacheSeconds * 1000) return this.cache.devices;
    const { trusted, forged } = await this.stored();
    const previous = new Map((this.cache?.devices ?? []).map((device) => [device.path, device]));
    const devices = await Promise.all(
      trusted.map(async (device): Promise<LiveDevice> => {
        const known = previous.get(device.path);
        // Keep an open sink (a socket's connection) while the device is the same one.
        if (known && known.type === device.type && JSON.stringify(known.options) === JSON.stringify(device.options)) {
          previous.delete(device.path);
          return known;
        }
        return {
          ...device,
          salt: Buffer.from(this.keyring.open(device.salt, saltContext(device.path)), 'base64'),
          sink: await this.storedSink(device),
        };
      }),
    );
    for (const gone of previous.values()) gone.sink.close();
    for (const sk of forged) devices.push(forgedDevice(sk));
    this.cache = { devices, loadedAt: now };
    return devices;
  }

  /**
   * A stored device's sink, checked again as `enable` checks it: a device stored before a refusal existed (an
   * executable mode, a path in the data directory) or written into the table directly writes nothing; it fails
   * every entry, so with no other device the service refuses requests (fails closed), and it is logged.
   */
  private async storedSink(device: StoredDevice): Promise<AuditSink> {
    try {
      const sink = openSink(device.type, device.options, this.stdout);
      if (device.type === 'file') await this.refuseProtectedDestination(device.options);
      return sink;
    } catch (error) {
      const reason = (error as Error).message;
      this.log.error('audit device refused', { device: device.path, error: reason });
      return { write: () => Promise.reject(new Error(`audit device ${device.path} refused: ${reason}`)), close() {} };
    }
  }

  /** The device items that verify, and the keys of those that do not (each logged by `verified`, by key only). */
  private async stored(): Promise<{ trusted: StoredDevice[]; forged: string[] }> {
    const trusted: StoredDevice[] = [];
    const forged: string[] = [];
    for (const item of await this.store.list(auditDevicePk, { prefix: 'audit/' })) {
      const verified = this.store.verified<Item>(auditDeviceKind, item);
      if (!verified) {
        forged.push(item.sk);
        continue;
      }
      trusted.push({
        path: verified.path as string,
        type: verified.type as string,
        description: verified.description as string,
        options: verified.options as Record<string, string>,
        local: verified.local as boolean,
        salt: verified.salt as string,
      });
    }
    return { trusted, forged };
  }

  /** Reopens the devices at the next use (a write here, or a new initialisation, whose epoch the old ones do not carry). */
  invalidate(): void {
    this.cache = this.cache && {
      ...this.cache,
      loadedAt: Number.NEGATIVE_INFINITY,
    };
  }
}

/**
 * What stands for a device item that failed its MAC: nothing of it is read (its options could point anywhere), it
 * fails every entry as a refused device does, and it is named by its key.
 */
function forgedDevice(sk: string): LiveDevice {
  const path = sk.slice('audit/'.length);
  const reason = `audit device ${path} refused: its stored item failed its integrity check`;
  return {
    path,
    type: 'refused',
    description: '',
    options: {},
    local: false,
    salt: new Uint8Array(0),
    forged: true,
    sink: { write: () => Promise.reject(new Error(reason)), close() {} },
  };
}

function sinkOrRefusal(open: () => AuditSink): AuditSink {
  try {
    return open();
  } catch (error) {
    throw error instanceof AuditOptionError ? badRequest(error.message) : error;
  }
}

/** Vault keeps device paths with a trailing slash: `file/`. */
function normalisePath(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (!/^[\w.\-/]+$/.test(trimmed) || trimmed.length > 128) throw badRequest(`invalid audit device path "${path}"`);
  return `${trimmed}/`;
}

/** Go's ParseBool, as Vault reads these options. */
export function parseFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}
