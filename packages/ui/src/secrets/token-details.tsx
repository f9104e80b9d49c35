import type { JSX } from 'preact';
import { Details, formatSeconds } from '../components.tsx';
import { timeText } from './paths.ts';

/** What `auth/token/lookup*` answers of a token (its ID is never shown here). */
export interface TokenInfo {
  accessor?: string;
  display_name?: string;
  policies?: string[];
  ttl?: number;
  creation_ttl?: number;
  expire_time?: string | null;
  renewable?: boolean;
  orphan?: boolean;
  path?: string;
  type?: string;
}

export function TokenDetails({ token }: { token: TokenInfo }): JSX.Element {
  return (
    <Details
      rows={[
        ['Display name', token.display_name || '—'],
        ['Policies', (token.policies ?? []).join(', ') || '—'],
        ['Accessor', <code>{token.accessor ?? '—'}</code>],
        ['TTL', formatSeconds(token.ttl)],
        ['Expires', timeText(token.expire_time)],
        ['Renewable', token.renewable ? 'yes' : 'no'],
        ['Created by', token.path || '—'],
        ['Type', token.type || 'service'],
      ]}
    />
  );
}
