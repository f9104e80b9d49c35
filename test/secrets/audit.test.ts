import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

// The operator's opt-in for `prefix` (read when the core starts): without it a prefix is refused (test/attacks/audit-device.test.ts).
process.env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING = 'true';

// biome-ignore lint/suspicious/noExplicitAny: audit entries are free-form JSON
type Entry = any;
const dir = mkdtempSync(path.join(tmpdir(), 'keyhaven-audit-'));
const readEntries = (file: string): Entry[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));

/** A TCP listener that keeps every line it receives. */
async function tcpListener(port = 0): Promise<{
  server: Server;
  port: number;
  lines: string[];
  stop(): Promise<void>;
}> {
  const lines: string[] = [];
  const open = new Set<import('node:net').Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      lines.push(...parts.filter((line) => line !== ''));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address();
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.destroy();
      server.close(() => resolve());
    });
  return {
    server,
    port: typeof address === 'object' && address ? address.port : 0,
    lines,
    stop,
  };
}

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('audit devices', () => {
  let s: SecretsHarness;
  beforeAll(async () => {
    s = await startSecrets({ audit: false });
  });
  afterAll(() => s.close());

  it('a file device records a request entry before and a response entry after, with every secret hashed', async () => {
    const file = path.join(dir, 'file.log');
    expect(
      (
        await s.call('PUT', '/v1/sys/audit/file', {
          token: s.rootToken,
          body: { type: 'file', options: { file_path: file } },
        })
      ).status,
    ).toBe(204);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(
      (
        await s.call('PUT', '/v1/secret/app/db', {
          token: s.rootToken,
          body: { password: 'hunter2-audit' },
        })
      ).status,
    ).toBe(204);
    const read = await s.call('GET', '/v1/secret/app/db', {
      token: s.rootToken,
    });
    expect(read.body.data.password).toBe('hunter2-audit');

    const entries = readEntries(file);
    const forWrite = entries.filter(
      (entry) => entry.request.path === 'secret/app/db' && entry.request.operation !== 'read',
    );
    expect(forWrite.map((entry) => entry.type)).toEqual(['request', 'response']);
    const [request, response] = forWrite;
    expect(request.request).toMatchObject({
      operation: 'create',
      mount_point: 'secret/',
      mount_type: 'kv',
      remote_address: '127.0.0.1',
      namespace: { id: 'root' },
    });
    expect(request.request.id).toBe(response.request.id);
    expect(request.auth).toMatchObject({
      display_name: 'root',
      policies: ['root'],
      token_type: 'service',
    });
    expect(request.auth.client_token).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(request.request.data.password).toMatch(/^hmac-sha256:/);
    expect(response.response.status_code).toBe(204);

    // An operator finds the token and the password in the log by hashing them with the device's salt.
    const tokenHash = await s.call('PUT', '/v1/sys/audit-hash/file', {
      token: s.rootToken,
      body: { input: s.rootToken },
    });
    expect(tokenHash.body.data.hash).toBe(request.auth.client_token);
    const passwordHash = await s.call('PUT', '/v1/sys/audit-hash/file', {
      token: s.rootToken,
      body: { input: 'hunter2-audit' },
    });
    expect(passwordHash.body.data.hash).toBe(request.request.data.password);
    const readResponse = entries.find(
      (entry) =>
        entry.type === 'response' && entry.request.operation === 'read' && entry.request.path === 'secret/app/db',
    );
    expect(readResponse.response.data.password).toBe(passwordHash.body.data.hash);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('hunter2-audit');
    expect(text).not.toContain(s.rootToken);
    expect((await s.call('DELETE', '/v1/sys/audit/file', { token: s.rootToken })).status).toBe(204);
  });

  it('a login and a token creation show their new tokens only hashed; accessors too unless hmac_accessor=false', async () => {
    const file = path.join(dir, 'tokens.log');
    await s.call('PUT', '/v1/sys/audit/tokens', {
      token: s.rootToken,
      body: {
        type: 'file',
        options: { file_path: file, hmac_accessor: 'false' },
      },
    });
    const created = await s.call('POST', '/v1/auth/token/create', {
      token: s.rootToken,
      body: { policies: ['default'], ttl: '1h' },
    });
    const { client_token: token, accessor } = created.body.auth;
    const response = readEntries(file).find(
      (entry) => entry.type === 'response' && entry.request.path === 'auth/token/create',
    );
    expect(response.response.auth.client_token).toMatch(/^hmac-sha256:/);
    expect(response.response.auth.accessor).toBe(accessor);
    expect(readFileSync(file, 'utf8')).not.toContain(token);
    await s.call('DELETE', '/v1/sys/audit/tokens', { token: s.rootToken });
  });

  it('log_raw writes values as they are; prefix and elide_list_responses shape the line', async () => {
    const file = path.join(dir, 'raw.log');
    await s.call('PUT', '/v1/sys/audit/raw', {
      token: s.rootToken,
      body: {
        type: 'file',
        description: 'raw',
        options: {
          file_path: file,
          log_raw: 'true',
          prefix: 'KH ',
          elide_list_responses: 'true',
        },
      },
    });
    await s.call('PUT', '/v1/secret/raw/one', {
      token: s.rootToken,
      body: { value: 'plain-value' },
    });
    await s.call('GET', '/v1/secret/raw?list=true', { token: s.rootToken });
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    expect(lines.every((line) => line.startsWith('KH {'))).toBe(true);
    const entries = lines.map((line) => JSON.parse(line.slice(3)));
    expect(
      entries.find((entry) => entry.type === 'request' && entry.request.path === 'secret/raw/one').request.data.value,
    ).toBe('plain-value');
    const list = entries.find((entry) => entry.type === 'response' && entry.request.operation === 'list');
    expect(list.response.data.keys).toBe(1);
    const devices = await s.call('GET', '/v1/sys/audit', {
      token: s.rootToken,
    });
    expect(devices.body.data['raw/']).toEqual({
      path: 'raw/',
      type: 'file',
      description: 'raw',
      local: false,
      options: {
        file_path: file,
        log_raw: 'true',
        prefix: 'KH ',
        elide_list_responses: 'true',
      },
    });
    await s.call('DELETE', '/v1/sys/audit/raw', { token: s.rootToken });
  });

  it("takes options as Vault's TypeKVPairs: booleans and numbers as strings, or a list of k=v", async () => {
    const file = path.join(dir, 'weak.log');
    // Vault accepts `{"log_raw": true}` (the boolean becomes "1", which the device reads as true).
    const enabled = await s.call('PUT', '/v1/sys/audit/weak', {
      token: s.rootToken,
      body: { type: 'file', options: { file_path: file, log_raw: true } },
    });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(204);
    await s.call('PUT', '/v1/secret/weak', { token: s.rootToken, body: { value: 'weak-plain' } });
    const logged = readEntries(file).find((entry) => entry.type === 'request' && entry.request.path === 'secret/weak');
    expect(logged?.request.data?.value).toBe('weak-plain');
    const devices = await s.call('GET', '/v1/sys/audit', { token: s.rootToken });
    expect(devices.body.data['weak/'].options).toEqual({ file_path: file, log_raw: '1' });
    // Injected at the top level too, as Vault answers sys/audit.
    expect(devices.body['weak/']).toEqual(devices.body.data['weak/']);
    await s.call('DELETE', '/v1/sys/audit/weak', { token: s.rootToken });

    const listed = await s.call('PUT', '/v1/sys/audit/pairs', {
      token: s.rootToken,
      body: { type: 'file', options: [`file_path=${path.join(dir, 'pairs.log')}`, 'hmac_accessor=false'] },
    });
    expect(listed.status, JSON.stringify(listed.body)).toBe(204);
    expect((await s.call('GET', '/v1/sys/audit', { token: s.rootToken })).body.data['pairs/'].options).toEqual({
      file_path: path.join(dir, 'pairs.log'),
      hmac_accessor: 'false',
    });
    await s.call('DELETE', '/v1/sys/audit/pairs', { token: s.rootToken });
    const refused = await s.call('PUT', '/v1/sys/audit/bad', {
      token: s.rootToken,
      body: { type: 'file', options: ['file_path'] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toBe('invalid value for "options": invalid key pair "file_path"');
  });

  it('socket devices write to a TCP and a UDP listener', async () => {
    const tcp = await tcpListener();
    const udp = createSocket('udp4');
    const datagrams: string[] = [];
    udp.on('message', (message) => datagrams.push(message.toString()));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    await s.call('PUT', '/v1/sys/audit/tcp', {
      token: s.rootToken,
      body: { type: 'socket', options: { address: `127.0.0.1:${tcp.port}` } },
    });
    await s.call('PUT', '/v1/sys/audit/udp', {
      token: s.rootToken,
      body: {
        type: 'socket',
        options: {
          address: `127.0.0.1:${udp.address().port}`,
          socket_type: 'udp',
        },
      },
    });
    await s.call('PUT', '/v1/secret/sock', {
      token: s.rootToken,
      body: { v: 'over-the-wire' },
    });
    const both = (lines: string[]) => lines.filter((line) => line.includes('"secret/sock"')).length >= 2;
    await waitFor(() => both(tcp.lines) && both(datagrams));
    for (const lines of [tcp.lines, datagrams]) {
      const entries = lines.filter((line) => line.includes('"secret/sock"')).map((line) => JSON.parse(line));
      expect(entries.map((entry: Entry) => entry.type)).toEqual(['request', 'response']);
      expect(entries[0].request.data.v).toMatch(/^hmac-sha256:/);
    }
    await s.call('DELETE', '/v1/sys/audit/tcp', { token: s.rootToken });
    await s.call('DELETE', '/v1/sys/audit/udp', { token: s.rootToken });
    udp.close();
    await tcp.stop();
  });

  it('a syslog device sends RFC 5424 messages with its facility and tag to a collector', async () => {
    const collector = createSocket('udp4');
    const messages: string[] = [];
    collector.on('message', (message) => messages.push(message.toString()));
    await new Promise<void>((resolve) => collector.bind(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${collector.address().port}`;
    const enable = await s.call('PUT', '/v1/sys/audit/syslog', {
      token: s.rootToken,
      body: { type: 'syslog', options: { address, facility: 'LOCAL3', tag: 'kh-audit' } },
    });
    expect(enable.status).toBe(204);
    await s.call('PUT', '/v1/secret/syslogged', { token: s.rootToken, body: { v: 'via-syslog' } });
    await waitFor(() => messages.filter((message) => message.includes('"secret/syslogged"')).length >= 2);
    const entries = messages.filter((message) => message.includes('"secret/syslogged"'));
    for (const message of entries) {
      // <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG; LOCAL3 (19) * 8 + info (6) = 158
      const match = message.match(/^<158>1 (\S+) \S+ kh-audit \d+ - - (\{.*\})\n$/);
      expect(match, message).not.toBeNull();
      expect(Number.isNaN(Date.parse(match?.[1] ?? ''))).toBe(false);
    }
    expect(entries.map((message) => JSON.parse(message.slice(message.indexOf('{'))).type)).toEqual([
      'request',
      'response',
    ]);
    expect(entries.join('')).not.toContain('via-syslog');
    const bad = await s.call('PUT', '/v1/sys/audit/bad-syslog', {
      token: s.rootToken,
      body: { type: 'syslog', options: { address, facility: 'NOPE' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatch(/"facility"/);
    await s.call('DELETE', '/v1/sys/audit/syslog', { token: s.rootToken });
    collector.close();
  });

  it('fails closed: when no enabled device can record the request, it is refused (503) and never reaches its handler', async () => {
    const tcp = await tcpListener();
    await s.call('PUT', '/v1/sys/audit/gone', {
      token: s.rootToken,
      body: {
        type: 'socket',
        options: { address: `127.0.0.1:${tcp.port}`, write_timeout: '1s' },
      },
    });
    expect(
      (
        await s.call('PUT', '/v1/secret/before', {
          token: s.rootToken,
          body: { v: '1' },
        })
      ).status,
    ).toBe(204);
    await waitFor(() => tcp.lines.length >= 2);
    await tcp.stop(); // the listener is gone, and the device's open connection with it
    const refused = await s.call('PUT', '/v1/secret/refused', {
      token: s.rootToken,
      body: { v: 'never-stored' },
    });
    expect(refused.status).toBe(503);
    expect(refused.body.errors[0]).toMatch(/audit/);
    // As in Vault, nothing passes until a device can write again, `sys/audit` included: the listener comes back.
    expect((await s.call('DELETE', '/v1/sys/audit/gone', { token: s.rootToken })).status).toBe(503);
    const back = await tcpListener(tcp.port);
    expect((await s.call('GET', '/v1/secret/refused', { token: s.rootToken })).status).toBe(404); // the refused write never ran
    expect(
      (
        await s.call('PUT', '/v1/secret/refused', {
          token: s.rootToken,
          body: { v: 'stored-now' },
        })
      ).status,
    ).toBe(204);
    expect((await s.call('GET', '/v1/secret/refused', { token: s.rootToken })).body.data.v).toBe('stored-now');
    // With two devices, one that can write is enough.
    await s.call('PUT', '/v1/sys/audit/second', {
      token: s.rootToken,
      body: {
        type: 'file',
        options: { file_path: path.join(dir, 'second.log') },
      },
    });
    await back.stop();
    expect(
      (
        await s.call('PUT', '/v1/secret/with-one', {
          token: s.rootToken,
          body: { v: '1' },
        })
      ).status,
    ).toBe(204);
    await s.call('DELETE', '/v1/sys/audit/gone', { token: s.rootToken });
    await s.call('DELETE', '/v1/sys/audit/second', { token: s.rootToken });
  });

  it('refuses devices that cannot work and callers without sudo', async () => {
    const bad = async (body: unknown) =>
      (await s.call('PUT', '/v1/sys/audit/bad', { token: s.rootToken, body })).body.errors[0];
    expect(await bad({})).toMatch(/"type" is required/);
    expect(await bad({ type: 'syslogx' })).toMatch(
      /unknown audit device type "syslogx" \(supported: file, socket, syslog\)/,
    );
    expect(await bad({ type: 'file', options: {} })).toMatch(/file_path/);
    expect(await bad({ type: 'file', options: { file_path: 'relative.log' } })).toMatch(/absolute path/);
    expect(
      await bad({
        type: 'file',
        options: { file_path: '/nonexistent-dir/x.log' },
      }),
    ).toMatch(/cannot open audit file/);
    expect(
      await bad({
        type: 'file',
        options: { file_path: 'discard', format: 'jsonx' },
      }),
    ).toMatch(/"format" must be json/);
    expect(
      await bad({
        type: 'file',
        options: { file_path: 'discard', log_raw: 'maybe' },
      }),
    ).toMatch(/"log_raw" must be a boolean/);
    expect(await bad({ type: 'socket', options: { address: 'nohost' } })).toMatch(/host:port/);
    expect(await bad({ type: 'socket', options: { address: '127.0.0.1:1' } })).toMatch(/cannot write/);
    expect((await s.call('GET', '/v1/sys/audit', { token: s.rootToken })).body.data).toEqual({});

    await s.call('PUT', '/v1/sys/audit/dup', {
      token: s.rootToken,
      body: { type: 'file', options: { file_path: 'discard' } },
    });
    expect(
      (
        await s.call('PUT', '/v1/sys/audit/dup', {
          token: s.rootToken,
          body: { type: 'file', options: { file_path: 'discard' } },
        })
      ).body.errors[0],
    ).toMatch(/already in use/);
    await s.call('PUT', '/v1/sys/policies/acl/audit-reader', {
      token: s.rootToken,
      body: {
        policy: 'path "sys/audit*" { capabilities = ["read", "update"] }',
      },
    });
    const token = (
      await s.call('POST', '/v1/auth/token/create', {
        token: s.rootToken,
        body: { policies: ['audit-reader'] },
      })
    ).body.auth.client_token;
    expect((await s.call('GET', '/v1/sys/audit', { token })).status).toBe(403);
    expect(
      (
        await s.call('PUT', '/v1/sys/audit-hash/dup', {
          token,
          body: { input: 'x' },
        })
      ).status,
    ).toBe(403);
    await s.call('DELETE', '/v1/sys/audit/dup', { token: s.rootToken });
  });
});
