import type { MountEntry } from '../mounts/mount-table.ts';

/** One lease as its backend's hooks see it: the id, the internals the backend kept with it, and its mount. */
export interface LeaseRecord<Internal = Record<string, unknown>> {
  leaseId: string;
  internal: Internal;
  /** The renewal asked for, in seconds (0 for a revocation). */
  increment: number;
  mount: MountEntry;
}

/** How the lease manager renews and revokes one kind of secret: the backend's hooks, bound to their mount. */
export interface LeaseRunner {
  renew?(lease: LeaseRecord): Promise<{ ttl?: number; maxTtl?: number } | undefined>;
  revoke(lease: LeaseRecord): Promise<void>;
}
