/** The Consul emulator's data model: builtin ids, name rules, stored items, its errors, versions and durations. */

export const globalManagementId = '00000000-0000-0000-0000-000000000001';
export const anonymousAccessor = '00000000-0000-0000-0000-000000000002';
export const reservedPrefix = '00000000-0000-0000-0000-0000000000';
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const policyNamePattern = /^[A-Za-z0-9\-_]{1,128}$/;
export const roleNamePattern = /^[A-Za-z0-9\-_]{1,256}$/;
export const identityNamePattern = /^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$/;

export interface Scope {
  namespace: string;
  partition: string;
}

export interface Link {
  ID: string;
}

export interface Token extends Scope {
  accessor: string;
  secret: string;
  description: string;
  policies: Link[];
  roles: Link[];
  serviceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  nodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  local: boolean;
  createTime: string;
  expirationTime?: string;
  createIndex: number;
  modifyIndex: number;
  legacy?: { type: 'client' | 'management'; rules: string };
}

export interface Policy extends Scope {
  id: string;
  name: string;
  description: string;
  rules: string;
  datacenters: string[];
  createIndex: number;
  modifyIndex: number;
}

export interface Role extends Scope {
  id: string;
  name: string;
  description: string;
  policies: Link[];
  serviceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  nodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  createIndex: number;
  modifyIndex: number;
}

export interface Namespace {
  name: string;
  partition: string;
  description: string;
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

export interface Partition {
  name: string;
  description: string;
  createIndex: number;
  modifyIndex: number;
}

/** A reply with Consul's status and a plain-text body. */
export class ConsulError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export type Body = Record<string, unknown>;
export type Version = [number, number, number];

export function parseVersion(text: string): Version {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) throw new Error(`not a Consul version: ${text}`);
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export const atLeast = (version: Version, major: number, minor: number, patch = 0) =>
  version[0] !== major ? version[0] > major : version[1] !== minor ? version[1] > minor : version[2] >= patch;

export interface ParsedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: string;
}

/** Go's `time.ParseDuration` for the units Consul's duration fields take. */
export function goDurationSeconds(text: string): number {
  const units: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  const sign = text.startsWith('-') ? -1 : 1;
  let rest = text.replace(/^[-+]/, '');
  if (rest === '0') return 0;
  let total = 0;
  while (rest.length > 0) {
    const match = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest);
    if (!match) throw new ConsulError(400, `Token decoding failed: time: invalid duration "${text}"`);
    total += Number(match[1]) * (units[match[2] as string] as number);
    rest = rest.slice(match[0].length);
  }
  return sign * total;
}
