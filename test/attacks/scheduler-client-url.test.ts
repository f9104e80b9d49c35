import { describe, expect, it } from 'vitest';
import { deployedEnvironment, httpApiEvent, invoke } from '../deploy/lambda-events.ts';

/**
 * The client protocol's public Function URL (`functions/scheduler/client.ts`, `SchedulerClientUrl`; docs/security.md
 * "Cluster nodes"). Attacker: anonymous, or anyone holding a token, who calls that URL, which no CloudFront, WAF or
 * origin check stands in front of, to reach the rest of the scheduler API there (ACL bootstrap and tokens,
 * introduction tokens, node writes, the event stream), however the path is spelled. Must never reach: any route
 * outside `/v1/client/`; on it, nothing but what a node's own credential allows.
 */
describe('the client protocol’s Function URL', () => {
  it('answers 404 for every path outside /v1/client/, however spelled, and nothing reaches the app', async () => {
    await deployedEnvironment();
    const { handler } = await import('../../functions/scheduler/client.ts');
    const refused = [
      ['POST', '/v1/acl/bootstrap'],
      ['GET', '/v1/acl/token/self'],
      ['PUT', '/v1/acl/identity/client-introduction-token'],
      ['GET', '/v1/nodes'],
      ['GET', '/v1/event/stream'],
      ['POST', '/v1/client/../acl/bootstrap'],
      ['POST', '/v1/client/%2E%2E/acl/bootstrap'],
      ['POST', '/v1/client%2F..%2Facl%2Fbootstrap'],
      ['POST', '//v1/acl/bootstrap'],
      ['POST', '/V1/client/../../v1/acl/bootstrap'],
      ['GET', '/v1/client'],
      ['GET', '/'],
    ] as const;
    for (const [method, url] of refused) {
      const answer = await invoke(handler, httpApiEvent(method, url, { routeKey: '$default' }));
      expect(answer.status, `${method} ${url}`).toBe(404);
      expect(answer.body).toBe(
        'Not found: this URL serves only the client protocol (/v1/client/…); the rest of the API is at {scheduler_url}',
      );
    }
    // Nothing reached the app: the scheduler's ACL bootstrap is still open to its first caller, through the API.
    const { handler: api } = await import('../../functions/scheduler/api.ts');
    const bootstrap = await invoke(api, httpApiEvent('POST', '/v1/acl/bootstrap'));
    expect(bootstrap.status).toBe(200);
  });

  it('on /v1/client/, a registration without an introduction token and a beat with no credential are refused', async () => {
    const { handler } = await import('../../functions/scheduler/client.ts');
    const id = crypto.randomUUID();
    const register = await invoke(
      handler,
      httpApiEvent('POST', '/v1/client/register', {
        routeKey: '$default',
        body: { Node: { ID: id, SecretID: crypto.randomUUID(), Name: 'intruder', Datacenter: 'dc1' } },
      }),
    );
    expect(register.status).toBe(403);
    const beat = await invoke(
      handler,
      httpApiEvent('PUT', `/v1/client/node/${id}/status`, { routeKey: '$default', body: { Status: 'ready' } }),
    );
    expect(beat.status).toBe(403);
    const unknown = await invoke(
      handler,
      httpApiEvent('PUT', `/v1/client/node/${id}/status`, {
        routeKey: '$default',
        headers: { 'x-nomad-token': crypto.randomUUID() },
        body: { Status: 'ready' },
      }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body).toBe('node not found');
  });
});
