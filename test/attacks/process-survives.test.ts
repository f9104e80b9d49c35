import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { freePort, killLeftovers, START_TIMEOUT_MS, type Started, start } from '../support/npm-start.ts';

/**
 * Issue 37 §4: no request can end the `npm start` process. Attacker: any web page the developer opens
 * (`<img src="http://127.0.0.1:8200/ui/constructor">`) or anything that reaches the loopback ports. `GET
 * /ui/constructor` (also `__proto__`, `toString`, …) used to kill the process, both services, the jobs and DynamoDB
 * Local with them, because the console's asset lookup used `name in assets` and nothing caught the throw in the
 * request listener. Now the lookups are prototype-free (`packages/ui/serve.ts`), and a listener-level catch
 * (`packages/local/src/guarded-listener.ts`, the node adapter's own for what its front throws) answers 500 and logs.
 *
 * Proved on the real process (`npm start` as package.json runs it), by the concrete requests and by a seeded fuzz of
 * both listeners' raw request space over plain sockets: methods (Vault's, WebDAV's, lower case, random tokens),
 * request targets (prototype names under `/ui/` and `/v1/`, encodings, `..`, absolute and asterisk forms, long and
 * non-ASCII ones) and headers (Host, Origin, Content-Type, Content-Length right, wrong or absurd, chunked bodies,
 * tokens, forwarded addresses, repeated and prototype-named fields). After every batch both listeners must still
 * answer their health checks, and no request may get a 5xx (a 500 is a bug).
 */

const SEED = Number(process.env.PROCESS_FUZZ_SEED ?? 20261129);
const REQUESTS_PER_LISTENER = Number(process.env.PROCESS_FUZZ_REQUESTS ?? 300);
console.log(
  `process-survives: seed ${SEED} (PROCESS_FUZZ_SEED), ${REQUESTS_PER_LISTENER} requests per listener (PROCESS_FUZZ_REQUESTS)`,
);

const prototypeNames = [
  'constructor',
  '__proto__',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupSetter__',
];

interface RawAnswer {
  /** The status line's code, or undefined when the connection closed or timed out before one. */
  status: number | undefined;
  head: string;
}

/** Sends bytes on a fresh connection and reads the status line; the socket is kept open until then (no half-close). */
function rawRequest(port: number, bytes: Buffer, waitMs = 20_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(received)?.[1];
      resolve({ status: status ? Number(status) : undefined, head: received.split('\r\n', 1)[0] ?? '' });
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) done();
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.write(bytes);
  });
}

/** A GET that must be answered: waits long, as a loaded machine (two cores, many test runs) can be slow. */
const get = (port: number, target: string) =>
  rawRequest(port, Buffer.from(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`, 'latin1'), 20_000);

// ---- the raw request space ------------------------------------------------------------------------------------------

const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}$/);
const methods = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'LIST'),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('get', 'Post', 'list', 'TRACE', 'PROPFIND', 'MKCOL', 'SEARCH', 'PURGE', 'CONNECT'),
  },
  { weight: 1, arbitrary: token },
);

const segment = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...prototypeNames) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('sys', 'mounts', 'health', 'acl', 'token', 'self', 'policies', 'secret', 'data', 'ui'),
  },
  { weight: 2, arbitrary: fc.constantFrom('..', '.', '%2e%2e', '%2F', '%00', '%', '%zz', '%C0%AE', '\\', '%5C', '') },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9_~.-]{1,10}$/) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }).map((text) => encodeURIComponent(text)) },
);
const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '?list=true',
      '?list=maybe',
      '?index=1&wait=1ms',
      '?__proto__=1',
      '?constructor[prototype]=1',
      '?=&&=',
      '?%',
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^\?[A-Za-z0-9=&%._-]{0,20}$/) },
);
const target = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.constantFrom('/ui/', '/v1/', '/v1/sys/', '/v1/acl/', '/'), fc.array(segment, { maxLength: 4 }), query)
      .map(([prefix, segments, search]) => `${prefix}${segments.join('/')}${search}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '*',
      'http://127.0.0.1/v1/sys/health',
      'http://evil.example/ui/constructor',
      '//ui/constructor',
      '/ui',
      '/ui/../v1/sys/mounts',
      '/v1',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((length) => `/v1/${'a'.repeat(length)}`) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).map((text) => `/ui/${text}`) },
);

const headerValue = fc.oneof(
  fc.constantFrom('', ' ', 'null', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', '0'),
  fc.stringMatching(/^[\x20-\x7e]{0,40}$/),
);
const header = fc.oneof(
  fc.tuple(fc.constant('Host'), fc.constantFrom('127.0.0.1', 'localhost', 'evil.example', '', '[::1]', 'a:b:c')),
  fc.tuple(fc.constant('Origin'), fc.constantFrom('null', 'http://evil.example', 'http://127.0.0.1:1', '\u00ff')),
  fc.tuple(fc.constant('Content-Type'), headerValue),
  fc.tuple(fc.constant('Content-Length'), fc.constantFrom('-1', '1e3', '99999999999999999999', 'abc', '', '5, 6')),
  fc.tuple(fc.constant('Transfer-Encoding'), fc.constantFrom('chunked', 'gzip', 'chunked, chunked', 'identity')),
  fc.tuple(fc.constantFrom('X-Vault-Token', 'X-Nomad-Token', 'Authorization'), headerValue),
  fc.tuple(fc.constant('X-Forwarded-For'), fc.constantFrom('1.2.3.4, ::1', 'garbage', ',,,', '::ffff:127.0.0.1')),
  fc.tuple(fc.constant('Sec-Fetch-Site'), fc.constantFrom('cross-site', 'same-origin', 'none', '\u00e9')),
  fc.tuple(fc.constantFrom('Expect', 'Upgrade', 'Connection'), fc.constantFrom('100-continue', 'websocket', 'Upgrade')),
  fc.tuple(fc.constantFrom(...prototypeNames), headerValue),
  fc.tuple(token, headerValue),
);
const body = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '{}',
      '{"__proto__":{"admin":true}}',
      '{"constructor":{"prototype":{"x":1}}}',
      'null',
      '[]',
      '{',
      'a=b&__proto__=1',
      '{"ManagementToken":"x","BootstrapSecret":"x"}',
    ),
  },
  { weight: 1, arbitrary: fc.json({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
);
/** How the body is framed: by its length, chunked (well or badly), or a Content-Length that lies. */
const framing = fc.constantFrom('length', 'chunked', 'bad-chunk', 'short', 'none');

const rawRequests = fc
  .record({ method: methods, target, headers: fc.array(header, { maxLength: 6 }), body, framing })
  .map(({ method, target: requestTarget, headers, body: text, framing: frame }) => {
    const bytes = Buffer.from(text, 'utf8');
    const lines = [`${method} ${requestTarget} HTTP/1.1`, ...headers.map(([name, value]) => `${name}: ${value}`)];
    if (!headers.some(([name]) => name === 'Host')) lines.push('Host: 127.0.0.1');
    let payload: Buffer = Buffer.alloc(0);
    if (frame === 'length') {
      lines.push(`Content-Length: ${bytes.length}`);
      payload = bytes;
    } else if (frame === 'short') {
      lines.push(`Content-Length: ${bytes.length + 10}`);
      payload = bytes;
    } else if (frame === 'chunked') {
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([
        Buffer.from(`${bytes.length.toString(16)}\r\n`),
        bytes,
        Buffer.from(bytes.length > 0 ? '\r\n0\r\n\r\n' : '\r\n'),
      ]);
    } else if (frame === 'bad-chunk') {
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([Buffer.from('zz\r\n'), bytes]);
    }
    return {
      description: `${method} ${requestTarget.slice(0, 80)} [${headers.map(([name]) => name).join(',')}] ${frame}`,
      bytes: Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]),
    };
  });

describe('no request ends the npm start process', () => {
  let dataDir: string;
  let started: Started;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let ports: { secrets: number; scheduler: number };

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-survives-'));
    started = await start({
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      KEYHAVEN_TABLE: `survives-${randomUUID()}`,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
    });
    void started.exited.then((result) => {
      exited = result;
    });
    ports = { secrets: Number(new URL(started.secrets).port), scheduler: Number(new URL(started.scheduler).port) };
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    killLeftovers();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Both listeners answer their health checks, and the process has not exited. */
  const alive = async () => {
    expect(exited, `npm start exited:\n${started.stderr()}`).toBeUndefined();
    expect((await get(ports.secrets, '/v1/sys/health')).status).toBe(200);
    expect((await get(ports.scheduler, '/v1/agent/health')).status).toBe(200);
  };

  it('serves the console page for every prototype name under /ui/, and lives', async () => {
    for (const name of prototypeNames) {
      for (const method of ['GET', 'HEAD']) {
        const answer = await rawRequest(
          ports.secrets,
          Buffer.from(`${method} /ui/${name} HTTP/1.1\r\nHost: 127.0.0.1:${ports.secrets}\r\n\r\n`, 'latin1'),
        );
        expect(answer.status, `${method} /ui/${name}`).toBe(200);
      }
      // The page itself, as a browser gets it (the app routes in the browser).
      const page = await fetch(`${started.secrets}/ui/${name}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await page.text()).toContain('<script');
    }
    await alive();
  });

  it('answers prototype names in API paths without a 5xx, and lives', async () => {
    for (const name of prototypeNames) {
      for (const [port, prefix] of [
        [ports.secrets, '/v1/'],
        [ports.secrets, '/v1/sys/'],
        [ports.secrets, '/v1/sys/policies/acl/'],
        [ports.scheduler, '/v1/'],
        [ports.scheduler, '/v1/acl/'],
        [ports.scheduler, '/v1/acl/policy/'],
      ] as const) {
        const answer = await get(port, `${prefix}${name}`);
        expect(answer.status, `${prefix}${name}`).toBeDefined();
        expect(answer.status as number, `${prefix}${name}`).toBeLessThan(500);
      }
    }
    await alive();
  });

  for (const listener of ['secrets', 'scheduler'] as const) {
    it(`a seeded fuzz of the ${listener} listener's raw request space never ends the process nor gets a 5xx`, async () => {
      const samples = fc.sample(rawRequests, {
        seed: SEED + (listener === 'secrets' ? 0 : 1),
        numRuns: REQUESTS_PER_LISTENER,
      });
      const failures: string[] = [];
      const statuses = new Map<string, number>();
      const batch = 10;
      for (let at = 0; at < samples.length; at += batch) {
        const answers = await Promise.all(
          samples
            .slice(at, at + batch)
            .map(async (sample) => ({ sample, answer: await rawRequest(ports[listener], sample.bytes, 2_000) })),
        );
        for (const { sample, answer } of answers) {
          const key = answer.status === undefined ? 'no answer' : String(answer.status);
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          if (answer.status !== undefined && answer.status >= 500)
            failures.push(`${sample.description} -> ${answer.head}`);
        }
        await alive();
      }
      console.log(
        `process-survives ${listener}: ${samples.length} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      expect(failures).toEqual([]);
      // The fuzz reached the services, not only the HTTP parser: some requests were answered and some refused.
      expect([...statuses.keys()].some((key) => key.startsWith('2'))).toBe(true);
      expect([...statuses.keys()].some((key) => key.startsWith('4'))).toBe(true);
    }, 300_000);
  }
});
