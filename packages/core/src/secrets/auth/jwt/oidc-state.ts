import { epochSeconds } from '../../../lib/clock.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { Request } from '../../framework/backend.ts';

/** How long an OIDC flow may take between `auth_url` and `callback`. */
export const oidcStateSeconds = 600;

/** One OIDC flow in progress, stored in the table so whichever Lambda receives the callback can finish it. */
export interface OidcState {
  role: string;
  redirect_uri: string;
  nonce: string;
  /** The PKCE verifier, sealed; '' for the implicit (id_token) flow. */
  code_verifier_sealed: string;
  client_nonce: string;
  max_age: number;
}

const stateKey = (state: string) => `oidc-state/${state}`;

export async function saveState(
  request: Pick<Request, 'storage' | 'system'>,
  state: string,
  value: Omit<OidcState, 'code_verifier_sealed'> & { code_verifier: string },
): Promise<void> {
  const { code_verifier, ...rest } = value;
  const stored: OidcState = {
    ...rest,
    code_verifier_sealed: code_verifier ? request.storage.seal(stateKey(state), code_verifier) : '',
  };
  await request.storage.putItem(
    stateKey(state),
    { value: stored, expiresAt: epochSeconds(request.system.clock) + oidcStateSeconds },
    { when: { absent: true } },
  );
}

/**
 * Takes the flow's state out of the table: a conditional delete, so of two callbacks with the same state only
 * one gets it. Expired state (DynamoDB's TTL deletes late) counts as missing.
 */
export async function takeState(
  request: Pick<Request, 'storage' | 'system'>,
  state: string,
): Promise<(OidcState & { code_verifier: string }) | undefined> {
  if (!state || state.length > 512) return undefined;
  let item: Record<string, unknown> | undefined;
  try {
    item = await request.storage.delete(stateKey(state), { when: { exists: true } });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
  if (!item || (item.expiresAt as number) <= epochSeconds(request.system.clock)) return undefined;
  const stored = item.value as OidcState;
  return {
    ...stored,
    code_verifier: stored.code_verifier_sealed
      ? request.storage.open(stateKey(state), stored.code_verifier_sealed)
      : '',
  };
}
