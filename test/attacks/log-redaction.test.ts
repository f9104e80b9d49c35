/**
 * A token in a URL never reaches the log. Old Vault clients put tokens in paths (`auth/token/lookup/<token>`), and a
 * careless client may put one anywhere; whoever reads the service's logs must not be able to use it. The log line's
 * path is redacted by `loggablePath` (`packages/core/src/secrets/framework/pipeline.ts`), which skips its patterns for
 * paths that hold nothing token-shaped: every spelling a client could send, routed or refused, must still be caught.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLogger } from '../../packages/core/src/lib/log.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

describe('a token in the URL, however spelled, never reaches the log', () => {
  const lines: string[] = [];
  let h: SecretsService;
  let token: string;
  let secretPart: string;

  beforeAll(async () => {
    h = await startSecretsInMemory({ log: jsonLogger((line) => lines.push(line)) });
    token = h.rootToken;
    secretPart = token.slice('hvs.'.length);
  });
  afterAll(() => h.close());

  const spellings = (): Array<[string, string]> => [
    ['as a path segment', `/v1/secret/app/${token}`],
    ['mid-path', `/v1/secret/app/${token}/db`],
    ['with an escaped letter', `/v1/secret/h%76s.${secretPart}`],
    ['fully escaped prefix', `/v1/secret/%68%76%73.${secretPart}`],
    ['escaped, in a path the front refuses', `/v1/secret/h%76s.${secretPart}/%zz`],
    ['after a refused segment', `/v1/secret/%zz/${token}`],
    ['after doubled slashes', `/v1//secret//${token}`],
    ['in the old lookup route', `/v1/auth/token/lookup/${token}`],
    ['bare, in the old lookup route', `/v1/auth/token/lookup/${secretPart}`],
    ['bare, in the old renew route', `/v1/auth/token/renew/${secretPart}`],
    ['bare, in the old revoke-orphan route', `/v1/auth/token/revoke-orphan/${secretPart}`],
    ['bare, lookup route in capitals', `/v1/AUTH/Token/lookup/${secretPart}`],
    ['bare, lookup route with a doubled slash', `/v1/auth/token//lookup/${secretPart}`],
    ['bare, lookup route with a dot segment', `/v1/auth/token/./lookup/${secretPart}`],
    ['bare, lookup route with an escaped slash', `/v1/auth/token/lookup%2F${secretPart}`],
    ['bare, escaped lookup route', `/v1/%61uth/token/lookup/${secretPart}`],
    ['with a trailing slash', `/v1/auth/token/lookup/${secretPart}/`],
    ['in a very long path, just before the cut', `/v1/secret/${'p'.repeat(490)}/${token}`],
    ['in a very long path, across the cut', `/v1/secret/${'p'.repeat(500)}/${token}`],
  ];

  for (const method of ['GET', 'POST', 'LIST', 'DELETE']) {
    it(`${method}: every spelling`, async () => {
      for (const [name, url] of spellings()) {
        const before = lines.length;
        const reply = await h.call(method, url, { token: h.rootToken });
        const written = lines.slice(before);
        expect(written.length, `${name}: a request line was logged`).toBeGreaterThan(0);
        expect(reply.status, name).toBeLessThan(500);
        for (const line of written) {
          expect(line.includes(secretPart), `${name} (${url.slice(0, 80)}): ${line.slice(0, 300)}`).toBe(false);
        }
      }
    });
  }

  it('a path with nothing token-shaped is logged exactly as sent', async () => {
    for (const url of [
      '/v1/secret/app/db',
      '/v1/secret/app/%E0%A4%A',
      '/v1/sys/mounts',
      '/v1/auth/token/lookup-self',
    ]) {
      const before = lines.length;
      await h.call('GET', url, { token: h.rootToken });
      const logged = lines
        .slice(before)
        .map((line) => JSON.parse(line))
        .find((entry) => entry.message === 'request');
      expect(logged?.path, url).toBe(url);
    }
  });
});
