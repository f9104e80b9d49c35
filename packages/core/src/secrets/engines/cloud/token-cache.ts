import { type Clock, epochSeconds } from '../../../lib/clock.ts';

/**
 * Minted access tokens, per process, reused until five minutes before they expire, as Google's client
 * libraries do (google-auth-library's eager refresh threshold). Keyed by the mount, the key or account that
 * minted them and the scopes, so a rotated key or changed scopes never see an old token.
 */
const refreshMarginSeconds = 300;
const entries = new Map<string, { token: string; expiresAt: number }>();

export interface CachedToken {
  token: string;
  expiresAt: number;
}

export async function cachedToken(
  clock: Clock,
  key: string,
  mint: () => Promise<{ token: string; expiresIn: number }>,
): Promise<CachedToken> {
  const now = epochSeconds(clock);
  const hit = entries.get(key);
  if (hit && hit.expiresAt - now > refreshMarginSeconds) return hit;
  const minted = await mint();
  const entry = { token: minted.token, expiresAt: now + minted.expiresIn };
  entries.set(key, entry);
  if (entries.size > 10_000) entries.delete(entries.keys().next().value as string);
  return entry;
}

/** The access token result Vault gives. */
export function tokenReply(clock: Clock, token: CachedToken) {
  return {
    data: {
      token: token.token,
      expires_at_seconds: token.expiresAt,
      token_ttl: Math.max(0, token.expiresAt - epochSeconds(clock)),
    },
  };
}
