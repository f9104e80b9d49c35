import { badRequest } from '../../lib/errors.ts';
import { ConditionFailed } from '../../storage/store.ts';
import { systemMaxTtl, tokenStoreMount } from '../mounts/mount-table.ts';
import type { BuiltinServices } from './builtin.ts';

export const isInitialized = async (services: Pick<BuiltinServices, 'store'>): Promise<boolean> =>
  (await services.store.get('sys', 'init')) !== undefined;

/**
 * One-time initialisation: mints the first root token and marks the store initialised. The flag is
 * written conditionally, so of two racing callers exactly one gets a token; the loser's token is revoked.
 */
export async function initialize(
  services: Pick<BuiltinServices, 'store' | 'clock' | 'tokens'>,
  rootTokenId?: string,
): Promise<string> {
  const { token, entry } = await services.tokens.create({
    policies: ['root'],
    noDefaultPolicy: true,
    displayName: 'root',
    meta: {},
    ttl: 0,
    explicitMaxTtl: 0,
    period: 0,
    numUses: 0,
    renewable: false,
    type: 'service',
    path: 'auth/token/root',
    issuer: tokenStoreMount,
    creator: 'initialisation',
    entityId: '',
    boundCidrs: [],
    parent: undefined,
    mountDefaultTtl: systemMaxTtl,
    mountMaxTtl: systemMaxTtl,
    ...(rootTokenId ? { id: rootTokenId } : {}),
  });
  try {
    await services.store.put(
      { pk: 'sys', sk: 'init', initializedAt: services.clock.now() },
      { when: { absent: true } },
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    await services.tokens.revoke(entry.hash);
    throw badRequest('already initialized');
  }
  return token;
}
