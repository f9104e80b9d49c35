import { auditPaths } from './audit-paths.ts';
import type { Backend } from '../framework/backend.ts';
import { leasePaths } from './leases-paths.ts';
import { mountPaths } from './mounts-paths.ts';
import { legacyPolicyPaths } from './policy-paths.ts';
import { policyPaths } from './policies-paths.ts';
import { healthAndInitPaths } from './health-and-init.ts';
import { internalUiMountPaths } from './internal-ui-mounts.ts';
import { openApiPaths } from './openapi-paths.ts';
import { passwordPolicyPaths } from './password-policies.ts';
import { sealStatusAndLeaderPaths } from './seal-status-and-leader.ts';

/** `sys/`: health, init, seal status, leader, audit devices, ACL (also under the legacy `sys/policy`) and password policies, capabilities, mounts, auth mounts, leases. */
export const systemBackend: Backend = {
  type: 'system',
  kind: 'secret',
  paths: [
    ...healthAndInitPaths,
    ...sealStatusAndLeaderPaths,
    ...policyPaths,
    ...legacyPolicyPaths,
    ...mountPaths('secret'),
    ...mountPaths('auth'),
    ...leasePaths,
    ...passwordPolicyPaths,
    ...auditPaths,
    ...internalUiMountPaths,
    ...openApiPaths,
  ],
};
