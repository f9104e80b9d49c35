import type { PathSpec } from '../framework/backend.ts';
import { auditPaths } from './audit-paths.ts';
import { type BuiltinServices, builtin } from './builtin.ts';
import { healthAndInitPaths } from './health-and-init.ts';
import { internalUiMountPaths } from './internal-ui-mounts.ts';
import { leasePaths } from './leases-paths.ts';
import { type MountServices, mountPaths } from './mounts-paths.ts';
import { openApiPaths } from './openapi-paths.ts';
import { passwordPolicyPaths } from './password-policies.ts';
import { policyPaths } from './policies-paths.ts';
import { legacyPolicyPaths } from './policy-paths.ts';
import { sealStatusAndLeaderPaths } from './seal-status-and-leader.ts';

/** What the system backend's paths use, all told. */
export type SystemBackendServices = MountServices & Pick<BuiltinServices, 'policies' | 'audit' | 'backends'>;

/**
 * The system backend's path tables, each given only the services it uses. A new table is one more line here (its
 * file named for its URL under `sys/`).
 */
const systemPaths = (services: SystemBackendServices): PathSpec[] => [
  ...healthAndInitPaths(services),
  ...sealStatusAndLeaderPaths(services),
  ...policyPaths(services),
  ...legacyPolicyPaths(services),
  ...mountPaths(services, 'secret'),
  ...mountPaths(services, 'auth'),
  ...leasePaths(services),
  ...passwordPolicyPaths(services),
  ...auditPaths(services),
  ...internalUiMountPaths(services),
  ...openApiPaths(services),
];

/** `sys/`: health, init, seal status, leader, audit devices, ACL (also under the legacy `sys/policy`) and password policies, capabilities, mounts, auth mounts, leases. */
export const systemBackend = builtin('system', 'secret', systemPaths);
