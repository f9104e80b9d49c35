/**
 * A batch token is decrypted once per process and kept, by its SHA-256, for its later requests
 * (`sealedEntry` in `packages/core/src/secrets/tokens/token-store.ts`). What a holder of one, or of a copy they
 * altered, must never get from that: a token kept after its first use still dies with its parent, still expires,
 * still answers to its policies as they are now, and no altered copy of it is taken for it. Every case here uses the
 * token first, so it is the kept entry that is tested.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;

beforeAll(async () => {
  h = await startSecretsInMemory();
  const policies = {
    reader: 'path "secret/app/*" { capabilities = ["read"] }',
    maker: 'path "auth/token/create" { capabilities = ["update"] }',
  };
  for (const [name, policy] of Object.entries(policies))
    expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, { token: h.rootToken, body: { policy } })).status).toBe(
      204,
    );
  expect((await h.call('POST', '/v1/secret/app/db', { token: h.rootToken, body: { password: 'pw' } })).status).toBe(
    204,
  );
});
afterAll(() => h.close());

async function batch(body: Record<string, unknown> = {}, token = h.rootToken): Promise<string> {
  const reply = await h.call('POST', '/v1/auth/token/create', {
    token,
    body: { type: 'batch', policies: ['reader'], ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.auth.client_token as string;
}

const read = (token: string) => h.call('GET', '/v1/secret/app/db', { token });
const expectRead = (reply: CallResult) => expect(reply.body.data).toEqual({ password: 'pw' });
const expectRefused = (reply: CallResult) => {
  expect(reply.status).toBe(403);
  expect(reply.body.errors[0]).toMatch(/permission denied/);
};

describe('a batch token kept after its first use', () => {
  it('still dies with its parent', async () => {
    const parent = (
      await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['reader', 'maker'] } })
    ).body.auth.client_token as string;
    const child = await batch({}, parent);
    expectRead(await read(child));
    expectRead(await read(child));
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: parent })).status).toBe(204);
    expectRefused(await read(child));
    expect((await h.call('GET', '/v1/auth/token/lookup-self', { token: child })).status).toBe(403);
  });

  it('still expires at its TTL', async () => {
    const token = await batch({ ttl: '2m' });
    expectRead(await read(token));
    h.clock.advance(119);
    expectRead(await read(token));
    h.clock.advance(1);
    expectRefused(await read(token));
  });

  it('answers to its policies as they are now, not as they were when it was first used', async () => {
    const policy = 'path "secret/app/*" { capabilities = ["read"] }';
    expect(
      (await h.call('PUT', '/v1/sys/policies/acl/shifting', { token: h.rootToken, body: { policy } })).status,
    ).toBe(204);
    const token = await batch({ policies: ['shifting'] });
    expectRead(await read(token));
    const narrowed = 'path "secret/other/*" { capabilities = ["read"] }';
    expect(
      (await h.call('PUT', '/v1/sys/policies/acl/shifting', { token: h.rootToken, body: { policy: narrowed } })).status,
    ).toBe(204);
    expectRefused(await read(token));
  });

  it('is not taken for any altered copy of it, and still works itself', async () => {
    const token = await batch();
    expectRead(await read(token));
    const body = token.slice('hvb.'.length);
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const altered = [
      `hvb.${flip(body, 0)}`,
      `hvb.${flip(body, Math.floor(body.length / 2))}`,
      // Not the last character: its low bits may be base64's padding, which decodes to the very same token.
      `hvb.${flip(body, body.length - 2)}`,
      `hvb.${body.slice(0, -4)}`,
      `hvb.${body}AAAA`,
      `hvs.${body}`,
      `hvb.${body.toLowerCase()}`,
    ];
    for (const copy of altered) {
      const reply = await read(copy);
      expect(reply.status, copy.slice(0, 12)).toBeGreaterThanOrEqual(400);
      expect(reply.status, copy.slice(0, 12)).toBeLessThan(500);
      expect(reply.body.data, copy.slice(0, 12)).toBeUndefined();
    }
    expectRead(await read(token));
  });

  it('one used by many requests at once answers each of them, and each lookup shows the same token', async () => {
    const token = await batch({ ttl: '30m', meta: { app: 'web' } });
    const replies = await Promise.all(Array.from({ length: 30 }, () => read(token)));
    for (const reply of replies) expectRead(reply);
    const looked = await Promise.all(
      Array.from({ length: 5 }, () => h.call('GET', '/v1/auth/token/lookup-self', { token })),
    );
    for (const reply of looked)
      expect(reply.body.data).toMatchObject({ id: token, type: 'batch', meta: { app: 'web' }, ttl: 1800 });
  });

  it('more batch tokens in use than are kept: each still opens for itself, the first as the last', async () => {
    const tokens: string[] = [];
    for (let index = 0; index < 1100; index++) tokens.push(await batch({ meta: { n: String(index) } }));
    for (const token of tokens) expect((await read(token)).status).toBe(200);
    for (const token of [tokens[0] as string, tokens[1099] as string]) {
      const reply = await h.call('GET', '/v1/auth/token/lookup-self', { token });
      expect(reply.body.data.meta).toEqual({ n: token === tokens[0] ? '0' : '1099' });
    }
  });
});
