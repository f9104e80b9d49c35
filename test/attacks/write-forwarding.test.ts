import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { forwardTarget } from '../../packages/core/src/lib/request-path.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * Issue 23 §8: a replica region forwards writes to the authoritative region. Attacker: anonymous, or any caller of
 * the replica. It sends a write whose path begins `//evil.example/…` (or spells a slash as `%2F`, a backslash),
 * hoping URL resolution takes the path as another host and the replica sends the caller's token and body there.
 * The target is the configured origin with the canonical path appended: such a path is refused (400) before
 * forwarding, and nothing ever leaves for another origin. Observed with two listeners on 127.0.0.1 (the
 * authoritative one and a stand-in "evil" one); no traffic goes anywhere else.
 */
interface Seen {
  method: string;
  url: string;
}

async function listener(): Promise<{ server: http.Server; seen: Seen[]; url: string }> {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '' });
    request.resume();
    request.on('end', () => {
      response.writeHead(204, { 'x-seen': 'yes' });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('attack: write forwarding sent to another host by a path beginning //host', () => {
  let authoritative: Awaited<ReturnType<typeof listener>>;
  let evil: Awaited<ReturnType<typeof listener>>;
  let h: SecretsHarness;
  let s: SchedulerHarness;

  beforeAll(async () => {
    authoritative = await listener();
    evil = await listener();
    h = await startSecrets();
    s = await startScheduler({ region: 'replica', authoritativeRegion: 'home', authoritativeUrl: authoritative.url });
  });
  afterAll(async () => {
    await h?.close();
    await s?.close();
    for (const { server } of [authoritative, evil]) await new Promise((resolve) => server?.close(resolve));
  });

  const evilHost = () => evil.url.replace(/^http:\/\//, '');

  it('forwardTarget concatenates: the configured origin (and base path) keeps, //host is never a host', () => {
    expect(forwardTarget('http://127.0.0.1:9/', '/v1/kv/a', '?x=1')?.href).toBe('http://127.0.0.1:9/v1/kv/a?x=1');
    expect(forwardTarget('https://api.example/prod/', '/v1/kv/a', '')?.href).toBe('https://api.example/prod/v1/kv/a');
    expect(forwardTarget('http://127.0.0.1:9', `//${evilHost()}/v1/kv/a`, '')).toBeUndefined();
    expect(forwardTarget('http://127.0.0.1:9', '\\\\evil.example/v1', '')).toBeUndefined();
    expect(forwardTarget('http://127.0.0.1:9', 'http://evil.example/v1', '')).toBeUndefined();
  });

  it('secrets replica: PUT //<evil>/v1/kv/a is 400 and reaches neither listener; a canonical write goes to the authoritative one', async () => {
    const front = secretsFront({
      core: async () => h.core,
      regions: { region: 'replica', authoritativeRegion: 'home', authoritativeUrl: authoritative.url },
    });
    const send = (path: string) =>
      front({
        method: 'PUT',
        path,
        search: '',
        headers: new Headers({ 'x-vault-token': 'hvs.attacker', 'content-type': 'application/json' }),
        body: '{"a":"1"}',
        clientIp: '127.0.0.1',
      });
    for (const path of [
      `//${evilHost()}/v1/kv/a`,
      `/v1//${evilHost()}/v1/kv/a`,
      `/%2F${evilHost()}/v1/kv/a`,
      `/\\${evilHost()}/v1/kv/a`,
    ]) {
      const reply = await send(path);
      expect({ path, status: reply.status }).toEqual({ path, status: 400 });
    }
    expect(evil.seen).toEqual([]);
    expect(authoritative.seen).toEqual([]);
    const forwarded = await send('/v1/secret/a/');
    expect(forwarded.status).toBe(204);
    expect(forwarded.headers['x-seen']).toBe('yes');
    // The canonical path went on: no trailing slash, on the configured origin.
    expect(authoritative.seen).toEqual([{ method: 'PUT', url: '/v1/secret/a' }]);
    expect(evil.seen).toEqual([]);
  });

  it('scheduler replica: POST //<evil>/v1/acl/policy/x is 400 and reaches neither listener; a canonical write is forwarded', async () => {
    authoritative.seen.length = 0;
    for (const path of [`//${evilHost()}/v1/acl/policy/x`, `/v1//${evilHost()}/acl/policy/x`]) {
      const out = await s.call('POST', path, { token: 'attacker', body: { Rules: '' } });
      expect({ path, status: out.status }).toEqual({ path, status: 400 });
    }
    expect(evil.seen).toEqual([]);
    expect(authoritative.seen).toEqual([]);
    const forwarded = await s.call('POST', '/v1/acl/policy/x', { token: 'attacker', body: { Rules: '' } });
    expect(forwarded.status).toBe(204);
    expect(authoritative.seen).toEqual([{ method: 'POST', url: '/v1/acl/policy/x' }]);
    expect(evil.seen).toEqual([]);
  });
});
