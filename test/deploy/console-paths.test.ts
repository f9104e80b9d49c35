import { readFileSync } from 'node:fs';
import { createContext, runInContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { consolePathsFile } from '../../stacks/console-hosting.ts';

const source = readFileSync(consolePathsFile, 'utf8');

interface Rewritten {
  uri?: string;
  querystring?: Record<string, { value: string }>;
  statusCode?: number;
  headers?: Record<string, { value: string }>;
}

/** `stacks/cloudfront/console-paths.js` as CloudFront's cloudfront-js-2.0 runtime runs it, on a viewer request for `uri`. */
async function viewerRequest(uri: string, querystring: Record<string, { value: string }> = {}): Promise<Rewritten> {
  const context = createContext({});
  runInContext(source, context, { filename: consolePathsFile });
  const handler = runInContext('handler', context) as (event: unknown) => Promise<Rewritten>;
  return handler({
    version: '1.0',
    context: { distributionDomainName: 'd111111abcdef8.cloudfront.net', eventType: 'viewer-request' },
    viewer: { ip: '198.51.100.7' },
    request: { method: 'GET', uri, querystring, headers: { host: { value: 'prod-secrets.example.com' } }, cookies: {} },
  });
}

/** Issue 26: the console's client-side routes under `/ui/` are its page; its files are served as they are. */
describe('stacks/cloudfront/console-paths.js (CloudFront Function on /ui and /ui/*)', () => {
  it('fits CloudFront Functions: a plain script under 10 KB defining handler, no import, require or Node globals', () => {
    expect(Buffer.byteLength(source)).toBeLessThan(10 * 1024);
    expect(source).not.toMatch(/\b(import|export|require|process|Buffer|setTimeout)\b/);
  });

  it('answers every client-side route with ui/index.html, keeping the query (the OIDC callback needs its code and state)', async () => {
    for (const route of [
      '/ui/',
      '/ui/settings/tokens',
      '/ui/vault/auth/jwt/oidc/callback',
      '/ui/vault/auth/team.sso/oidc/callback',
      '/ui/secrets/kv/a/b',
    ]) {
      expect((await viewerRequest(route)).uri, route).toBe('/ui/index.html');
    }
    const callback = await viewerRequest('/ui/vault/auth/jwt/oidc/callback', {
      code: { value: 'c0de' },
      state: { value: 'st4te' },
    });
    expect(callback).toMatchObject({
      uri: '/ui/index.html',
      querystring: { code: { value: 'c0de' }, state: { value: 'st4te' } },
    });
  });

  it('serves the files as they are', async () => {
    for (const file of ['/ui/index.html', '/ui/app.js', '/ui/app.css', '/ui/config.json'])
      expect((await viewerRequest(file)).uri).toBe(file);
  });

  it('redirects /ui to /ui/, so the page resolves its files under /ui/', async () => {
    expect(await viewerRequest('/ui')).toEqual({
      statusCode: 301,
      statusDescription: 'Moved Permanently',
      headers: { location: { value: '/ui/' } },
    });
  });
});
