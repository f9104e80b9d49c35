import type { Core } from '../../core.ts';
import { ConditionFailed } from '../../storage/store.ts';
import { badRequest } from '../../lib/errors.ts';
import { systemMaxTtl, tokenStoreMount } from '../mounts/mount-table.ts';

export const isInitialized = async (core: Core): Promise<boolean> => (await core.store.get('sys', 'init')) !== undefined;

/**
 * One-time initialisation: mints the first root token and marks the store initialised. The flag is
 * written conditionally, so of two racing callers exactly one gets a token; the loser's token is revoked.
 */
export async function initialize(core: Core, rootTokenId?: string): Promise<string> {
  const { token, entry } = await core.tokens.create({
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
    entityId: '',
    boundCidrs: [],
    parent: undefined,
    mountDefaultTtl: systemMaxTtl,
    mountMaxTtl: systemMaxTtl,
    ...(rootTokenId ? { id: rootTokenId } : {}),
  });
  try {
    await core.store.put({
      Item: { pk: 'sys', sk: 'init', initializedAt: core.clock.now() },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    await core.tokens.revoke(entry.hash);
    throw badRequest('already initialized');
  }
  return token;
}
