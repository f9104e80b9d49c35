import type { KeyObject } from 'node:crypto';

/** The JWS algorithms a JWT may be signed with (cap/jwt's list, which Vault's and Nomad's JWT logins share). */
export const supportedAlgorithms = [
  'RS256',
  'RS384',
  'RS512',
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
  'EdDSA',
] as const;

/** Which algorithms a public key can verify, so a login tries only the keys that fit the token's `alg`. */
export function algorithmsForKey(key: KeyObject): string[] {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
    case 'rsa-pss':
      return ['PS256', 'PS384', 'PS512'];
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      return curve === 'prime256v1'
        ? ['ES256']
        : curve === 'secp384r1'
          ? ['ES384']
          : curve === 'secp521r1'
            ? ['ES512']
            : [];
    }
    case 'ed25519':
      return ['EdDSA'];
    default:
      return [];
  }
}
