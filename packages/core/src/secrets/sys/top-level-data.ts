import type { Reply, Request } from '../framework/backend.ts';

/**
 * Vault's older `sys/` endpoints (`sys/policy`, `sys/policy/:name`) answer with the envelope and, for the clients
 * written before it, the same data again at the top level: hvac reads `["data"]["rules"]`, node-vault reads `rules`.
 */
export function envelopeWithTopLevelData(_request: Request, data: Record<string, unknown>): Reply {
  return { data, dataAtTopLevel: true };
}
