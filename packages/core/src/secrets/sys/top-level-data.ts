import type { Reply, Request } from '../framework/backend.ts';

/**
 * Vault's older `sys/` endpoints (`sys/policy`, `sys/policy/:name`) answer with the envelope and, for the clients
 * written before it, the same data again at the top level: hvac reads `["data"]["rules"]`, node-vault reads `rules`.
 */
export function envelopeWithTopLevelData(request: Request, data: Record<string, unknown>): Reply {
  return {
    raw: {
      status: 200,
      body: {
        ...data,
        request_id: request.requestId,
        lease_id: '',
        renewable: false,
        lease_duration: 0,
        data,
        wrap_info: null,
        warnings: null,
        auth: null,
      },
    },
  };
}
