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

/** A flow read back: its verifier opened, and the MAC a consuming delete names. */
export type PendingFlow = OidcState & { code_verifier: string; mac: string };

const stateKey = (state: string) => `oidc-state/${state}`;

/**
 * Keeps a flow's state under a MAC (`putAuthenticated`: the role it was issued for, the nonces, the redirect and its
 * expiry are what a callback trusts, so a table writer must not be able to write or edit one).
 */
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
  await request.storage.putAuthenticated(stateKey(state), stored as unknown as Record<string, unknown>, {
    ifAbsent: true,
    expiresAt: epochSeconds(request.system.clock) + oidcStateSeconds,
  });
}

/**
 * The flow's state, without taking it: a callback checks what the caller sent against it first (the client nonce), so
 * someone who only learnt the state cannot spoil a sign-in in progress. Expired state (DynamoDB's TTL deletes late),
 * and state that fails its MAC, count as missing.
 */
export async function readState(
  request: Pick<Request, 'storage' | 'system'>,
  state: string,
): Promise<PendingFlow | undefined> {
  if (!state || state.length > 512) return undefined;
  const item = await request.storage.getAuthenticatedItem<OidcState>(stateKey(state));
  if (!item || (item.expiresAt ?? 0) <= epochSeconds(request.system.clock)) return undefined;
  const stored = item.value;
  return {
    ...stored,
    code_verifier: stored.code_verifier_sealed
      ? request.storage.open(stateKey(state), stored.code_verifier_sealed)
      : '',
    mac: item.mac,
  };
}

/**
 * Takes the flow's state out of the table once its checks passed: a conditional delete of exactly the item read, so
 * of two callbacks with the same state only one gets it. False when another took it first.
 */
export async function consumeState(
  request: Pick<Request, 'storage'>,
  state: string,
  flow: Pick<PendingFlow, 'mac'>,
): Promise<boolean> {
  try {
    await request.storage.delete(stateKey(state), { when: { equals: { mac: flow.mac } } });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}
