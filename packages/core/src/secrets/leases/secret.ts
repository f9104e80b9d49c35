/** A leased secret a backend just issued: the lease manager records it and renews and revokes it through its hooks. */
export interface Secret<Internal = Record<string, unknown>> {
  /** Which of the backend's `leases` hooks renews and revokes it. */
  type: string;
  ttl?: number;
  maxTtl?: number;
  renewable?: boolean;
  /** Kept sealed with the lease for the revoke hook; never shown. */
  internal: Internal;
  /**
   * The lease id's last segment, for a backend that records the id with what it issued (to end the lease
   * itself, e.g. on a library check-in): it knows the id, `leaseIdFor(mount, path, leaseSuffix)`, before
   * the lease exists, so no crash leaves the record without it. Unique (e.g. `randomBase62(24)`); random if unset.
   */
  leaseSuffix?: string;
}
