import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientIpOf } from '../../functions/scheduler/app.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { clientIpFrom, trustedProxiesFromEnvironment } from '../../packages/core/src/lib/client-ip.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * Issue 23 §8: `X-Forwarded-For` is the caller's to write. Attacker: anyone who calls the API URL directly (not
 * through the operator's proxy), holding a token bound to `10.0.0.0/8` (`bound_cidrs`) or wanting its audit
 * address to read as someone else's. It sends `X-Forwarded-For: 10.1.2.3`. The header is believed only when the
 * connection comes from a proxy the operator trusts (`KEYHAVEN_TRUSTED_PROXIES`); one rule for both services.
 */
describe('attack: a forged X-Forwarded-For from a direct caller', () => {
  let h: SecretsHarness;
  let bound: string;

  beforeAll(async () => {
    h = await startSecrets();
    expect(
      (
        await h.call('POST', '/v1/auth/token/roles/inside', {
          token: h.rootToken,
          body: { allowed_policies: ['default'], token_bound_cidrs: ['10.0.0.0/8'] },
        })
      ).status,
    ).toBe(204);
    const created = await h.call('POST', '/v1/auth/token/create/inside', {
      token: h.rootToken,
      body: { policies: ['default'] },
    });
    expect(created.body).toMatchObject({ auth: { client_token: expect.any(String) } });
    bound = created.body.auth.client_token;
  });
  afterAll(() => h?.close());

  const event = (sourceIp: string, forwardedFor: string) =>
    ({
      version: '2.0',
      rawPath: '/v1/auth/token/lookup-self',
      rawQueryString: '',
      headers: { 'x-vault-token': bound, 'x-forwarded-for': forwardedFor },
      requestContext: {
        http: {
          method: 'GET',
          path: '/v1/auth/token/lookup-self',
          protocol: 'HTTP/1.1',
          sourceIp,
          userAgent: 'attack',
        },
      },
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;

  it('secrets Lambda adapter: without trusted proxies, a bound token used from 203.0.113.9 with X-Forwarded-For 10.1.2.3 is refused', async () => {
    const lambda = secretsLambda(secretsFront({ core: async () => h.core }), []);
    const out = await lambda(event('203.0.113.9', '10.1.2.3'));
    expect(out.statusCode).toBe(403);
    expect(out.body).toContain('not valid from this address');
  });

  it('secrets Lambda adapter: with the proxy trusted, its X-Forwarded-For names the caller; a direct caller still cannot forge it', async () => {
    const lambda = secretsLambda(secretsFront({ core: async () => h.core }), ['192.0.2.0/24']);
    expect((await lambda(event('192.0.2.10', '10.1.2.3'))).statusCode).toBe(200);
    // Entries left of the caller's address are the caller's own writing: ignored.
    expect((await lambda(event('192.0.2.10', '10.1.2.3, 203.0.113.9'))).statusCode).toBe(403);
    expect((await lambda(event('203.0.113.9', '10.1.2.3'))).statusCode).toBe(403);
  });

  it('node app: the socket address, unless it is a trusted proxy', async () => {
    const viaApp = await h.call('GET', '/v1/auth/token/lookup-self', {
      token: bound,
      headers: { 'x-forwarded-for': '10.1.2.3' },
    });
    expect(viaApp.status).toBe(403);
  });

  it('the one rule (lib/client-ip.ts), as the scheduler function uses it', () => {
    expect(clientIpFrom('203.0.113.9', '10.1.2.3', [])).toBe('203.0.113.9');
    expect(clientIpFrom('203.0.113.9', '10.1.2.3', ['192.0.2.0/24'])).toBe('203.0.113.9');
    expect(clientIpFrom('192.0.2.10', '10.1.2.3, 192.0.2.9', ['192.0.2.0/24'])).toBe('10.1.2.3');
    expect(clientIpFrom('192.0.2.10', 'not-an-ip', ['192.0.2.0/24'])).toBe('192.0.2.10');
    const direct = {
      requestContext: { http: { sourceIp: '198.51.100.7' } },
      headers: { 'x-forwarded-for': '10.1.2.3' },
    } as unknown as APIGatewayProxyEventV2;
    expect(clientIpOf(direct, [])).toBe('198.51.100.7');
  });

  it('matches proxies by address, however written: IPv6 ranges, IPv4 written as IPv6, single addresses', () => {
    const proxies = ['192.0.2.0/24', '2001:db8::/32', '198.51.100.7'];
    // A trusted proxy's connection, in each form node or API Gateway may give it: its X-Forwarded-For is believed.
    for (const proxy of ['192.0.2.10', '::ffff:192.0.2.10', '2001:DB8:0::5', '198.51.100.7', '::ffff:198.51.100.7'])
      expect(clientIpFrom(proxy, '10.1.2.3', proxies)).toBe('10.1.2.3');
    // Anyone else's: the header is never read.
    for (const direct of ['192.0.3.1', '2001:db9::5', '198.51.100.8', '::ffff:192.0.3.1'])
      expect(clientIpFrom(direct, '10.1.2.3', proxies)).toBe(direct);
    // Trusted hops written as IPv6 are skipped; the first untrusted hop from the right is the caller.
    expect(clientIpFrom('192.0.2.10', '10.1.2.3, ::ffff:192.0.2.9, 2001:db8::7', proxies)).toBe('10.1.2.3');
    // A hop that is not an address in its usual form (shorthand, hex, with a port) ends the walk at the proxy.
    for (const odd of ['10.1', '0x0a.1.2.3', '10.1.2.3:80', ''])
      expect(clientIpFrom('192.0.2.10', `${odd}, 192.0.2.9`, proxies)).toBe('192.0.2.10');
  });

  it('refuses at start a trusted-proxy list entry that is neither an address nor a CIDR', () => {
    const list = (value: string) => trustedProxiesFromEnvironment({ KEYHAVEN_TRUSTED_PROXIES: value });
    expect(list(' 192.0.2.0/24, 2001:db8::/32 ,198.51.100.7,')).toEqual([
      '192.0.2.0/24',
      '2001:db8::/32',
      '198.51.100.7',
    ]);
    expect(list('')).toEqual([]);
    for (const bad of [
      '192.0.2.0/33',
      '2001:db8::/129',
      '192.0.2.0/24/1',
      '192.0.2.0/',
      '192.0.2.0/x',
      'proxy',
      '10.1',
    ])
      expect(() => list(bad), bad).toThrow(
        `KEYHAVEN_TRUSTED_PROXIES: ${JSON.stringify(bad)} is neither an IP address nor a CIDR`,
      );
  });
});
