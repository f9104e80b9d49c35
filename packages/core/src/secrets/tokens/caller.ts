import type { RequestHeaders } from '../../lib/request-headers.ts';
import type { Acl } from '../policies/acl.ts';
import type { TokenEntry } from './token-entry.ts';

/** Who made a request: the token they presented, what it is, and what its policies allow. */
export interface Caller {
  token: string;
  entry: TokenEntry;
  acl: Acl;
}

/** The token from `X-Secrets-Token`, or the Vault-compatible `X-Vault-Token` / `Authorization: Bearer`. */
export function tokenFromHeaders(headers: RequestHeaders): string | undefined {
  const direct = headers.get('x-secrets-token') ?? headers.get('x-vault-token');
  if (direct) return direct.trim();
  const authorization = headers.get('authorization');
  // `s`: a line separator in the header must not turn the match quadratic (issue 39 §1).
  const bearer = authorization?.match(/^Bearer\s+(.+)$/is);
  return bearer?.[1]?.trim();
}

/** The token that owns what a caller creates: batch tokens lend their parent (they are never stored). */
export const ownerHash = (caller: Caller | undefined): string | undefined =>
  caller?.entry.type === 'service' ? caller.entry.hash : caller?.entry.parentHash;
