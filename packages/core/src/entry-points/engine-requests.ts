import type { Core, EngineRequest } from '../composition/secrets-core.ts';
import { finishDisabledMounts } from '../secrets/mounts/disable-mount.ts';

/**
 * Does, in a function that bundles an engine, what a function without it asked (`Core.askEngine`): revoke a lease,
 * revoke the leases under a prefix, or finish the disables of this engine's mounts. A failure is thrown to the asker.
 */
export async function answerEngineRequest(core: Core, request: EngineRequest): Promise<void> {
  if ('revokeLease' in request) await core.leases.revoke(request.revokeLease);
  else if ('revokePrefix' in request) await core.leases.revokePrefix(request.revokePrefix);
  else await finishDisabledMounts(core);
}
