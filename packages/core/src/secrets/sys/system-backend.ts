import type { Backend } from '../../http/backend.ts';
import { auditPaths } from '../audit/audit-paths.ts';
import { leasePaths } from '../leases/lease-paths.ts';
import { mountPaths } from '../mounts/mount-paths.ts';
import { policyPaths } from '../policies/policy-paths.ts';
import { healthAndInitPaths } from './health-and-init.ts';
import { passwordPolicyPaths } from './password-policies.ts';

/** `sys/`: health, init, audit devices, ACL and password policies, capabilities, mounts, auth mounts, leases. */
export const systemBackend: Backend = {
  type: 'system',
  kind: 'secret',
  paths: [...healthAndInitPaths, ...policyPaths, ...mountPaths('secret'), ...mountPaths('auth'), ...leasePaths, ...passwordPolicyPaths, ...auditPaths],
};
