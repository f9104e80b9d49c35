import type { Backend } from '../../http/backend.ts';
import { leasePaths } from '../leases/lease-paths.ts';
import { mountPaths } from '../mounts/mount-paths.ts';
import { policyPaths } from '../policies/policy-paths.ts';
import { healthAndInitPaths } from './health-and-init.ts';

/** `sys/`: health, init, policies, capabilities, mounts, auth mounts, leases. */
export const systemBackend: Backend = {
  type: 'system',
  kind: 'secret',
  paths: [...healthAndInitPaths, ...policyPaths, ...mountPaths('secret'), ...mountPaths('auth'), ...leasePaths],
};
