import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsHarness, startSecrets } from './support/secrets-harness.ts';

describe('platform smoke', () => {
  let h: SecretsHarness;
  beforeAll(async () => {
    h = await startSecrets();
  });
  afterAll(() => h.close());

  it('writes, reads and lists a kv secret with the root token', async () => {
    expect((await h.call('POST', '/v1/secret/app/db', { token: h.rootToken, body: { password: 'pw1' } })).status).toBe(
      204,
    );
    const read = await h.call('GET', '/v1/secret/app/db', { token: h.rootToken });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ password: 'pw1' });
    const list = await h.call('LIST', '/v1/secret/app', { token: h.rootToken });
    expect(list.body.data.keys).toEqual(['db']);
  });
});
