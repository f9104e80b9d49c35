import { createHash } from 'node:crypto';
import type { BuiltinServices } from './builtin.ts';
import { initializedAt } from './init.ts';

/** What `sys/health`, `sys/seal-status` and `sys/leader` say about the server. */
export const version = '0.1.0';
export const clusterName = 'keyhaven';
export const buildDate = '2026-11-01T00:00:00Z';

/** A uuid-shaped id that stays the same for one table: derived from when it was initialised. */
export async function clusterId(services: Pick<BuiltinServices, 'store'>): Promise<string> {
  const at = await initializedAt(services.store);
  if (at === undefined) return '';
  const hex = createHash('sha256')
    .update(`keyhaven-cluster|${String(at)}`)
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
